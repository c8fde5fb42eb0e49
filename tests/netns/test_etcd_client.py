#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""cluster-ipam's etcd client (src/applets/cluster_ipam/etcd_client.hpp; docs/design.md,
The HTTP client) against a 3-member Debian etcd with TLS and client-certificate auth
(tests/lib/etcd_cluster.py), through tests/etcd/etcd_kv.cpp (ETCD_KV), one client per process
and one call per line: range and prefix reads, a txn's compare-and-swap that holds and one that
does not, a lease, one round trip per call; a host name endpoint verified by name; a host name
whose DNS server is silent, answered within the dial timeout; failover when
the member the client talks to (the leader) is killed between calls; code 11 naming every
endpoint within the dial timeout when none answers; and TLS refused without a client
certificate, with another CA's client certificate, and against a CA that did not sign the
servers'; TLS sessions kept across processes (--tls-tickets): the second process resumes, another
client certificate gets a file of its own, a planted file (garbage, 0644, not ours, a symbolic
link) or another member's session costs a full handshake and is replaced, and a ticket folder
that is a symbolic link is refused. No namespaces: the cluster listens on loopback ports of its
own."""
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import check, eq, run_all, test  # noqa: E402
from etcd_cluster import EtcdCluster, make_cert  # noqa: E402

ETCD_KV = os.environ.get("ETCD_KV", "")
_cluster = []


def cluster():
    if not _cluster:
        _cluster.append(EtcdCluster())
    return _cluster[0]


class Client:
    """One etcd-kv process: one EtcdClient for every call sent to it."""

    def __init__(self, endpoints=None, ca=True, cert=True, key=True, timeout_ms=3000, files=None, wrap=(), tickets=None):
        c = cluster()
        ca_f, cert_f, key_f = files or (c.ca, c.cert, c.key)
        args = [*wrap, ETCD_KV, "--endpoints", ",".join(endpoints or c.endpoints()), "--timeout-ms", str(timeout_ms)]
        if ca:
            args += ["--ca", ca_f]
        if cert:
            args += ["--cert", cert_f]
        if key:
            args += ["--key", key_f]
        if tickets:
            args += ["--tls-tickets", tickets]
        self.p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def __call__(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


def ok(answer, what=""):
    check(answer.get("ok"), f"{what}: {answer}")
    return answer


@test
def test_range_txn_lease():
    """range, prefix, a txn's compare-and-swap held and not, a lease: one round trip per call"""
    c = Client()
    try:
        eq(ok(c("range /t1/a"))["kvs"], [], "an absent key")
        created = ok(c("create /t1/a one"))
        check(created["succeeded"] and created["kvs"][0]["value"] == "one", created)
        eq(created["roundTrips"], 2, "one round trip per call")
        again = ok(c("create /t1/a two"))
        check(not again["succeeded"] and again["kvs"][0]["value"] == "one", f"created twice: {again}")
        mod = again["kvs"][0]["modRevision"]
        check(ok(c(f"cas /t1/a {mod} three"))["succeeded"], "a CAS on the current revision")
        check(not ok(c(f"cas /t1/a {mod} four"))["succeeded"], "a CAS on a stale revision")
        ok(c("create /t1/b x"))
        ok(c("create /t10 y"))  # past the prefix /t1/
        kvs = ok(c("prefix /t1/"))["kvs"]
        eq([(k["key"], k["value"]) for k in kvs], [("/t1/a", "three"), ("/t1/b", "x")], "the prefix's keys")
        check(ok(c("lease 30"))["lease"] > 0)
        eq(ok(c("range /t1/a"))["roundTrips"], 10, "one round trip per call")
    finally:
        c.close()


@test
def test_host_name():
    """a host name endpoint is resolved and verified by the certificate's DNS name"""
    port = cluster().client_ports[1]
    c = Client(endpoints=[f"https://localhost:{port}"])
    try:
        ok(c("create /t2/a one"))
    finally:
        c.close()


@test
def test_silent_resolver():
    """a host name whose DNS server never answers: code 11 naming the name within the dial timeout, not the resolver's 10 s"""
    with tempfile.TemporaryDirectory() as work:
        conf = os.path.join(work, "resolv.conf")
        with open(conf, "w") as f:
            f.write("nameserver 127.0.0.1\noptions timeout:5 attempts:2\n")
        # In a network and mount namespace of its own: lo up, a DNS server that reads and never
        # answers, and that server in /etc/resolv.conf; then etcd-kv.
        silent = "import socket, time; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('127.0.0.1', 53)); time.sleep(8)"
        script = (f"ip link set lo up && mount --bind {conf} /etc/resolv.conf && "
                  f"(python3 -c \"{silent}\" &) && sleep 0.3 && exec \"$@\"")
        c = Client(endpoints=["https://cipam-silent.example:2379"], timeout_ms=1000,
                   wrap=["unshare", "--mount", "--net", "sh", "-c", script, "sh"])
        try:
            start = time.monotonic()
            r = c("range /t6")
            took = time.monotonic() - start
            check(not r["ok"] and r["code"] == 11 and "resolving cipam-silent.example: no answer in time" in r["msg"], r)
            check(took < 3, f"answered in {took:.2f} s: the 1 s dial timeout (and a loaded machine's slack) passed, as if waiting out the resolver's 10 s")
            print(f"# a silent resolver: code 11 in {took:.2f} s", flush=True)
        finally:
            c.close()


@test
def test_failover():
    """the member the client talks to, the leader, killed between calls: the next call succeeds"""
    cl = cluster()
    leader = cl.leader()
    endpoints = cl.endpoints()
    endpoints = [endpoints[leader]] + [e for i, e in enumerate(endpoints) if i != leader]
    c = Client(endpoints=endpoints, timeout_ms=5000)
    try:
        ok(c("create /t3/a one"))
        cl.kill(leader)
        start = time.monotonic()
        for n in range(5):
            check(ok(c(f"create /t3/b{n} x"), "after the leader's kill")["succeeded"])
        print(f"# 5 calls after the leader's kill: {time.monotonic() - start:.2f} s", flush=True)
        eq(len(ok(c("prefix /t3/"))["kvs"]), 6)
    finally:
        c.close()
        cl.restart(leader)
        cl.wait_healthy()


@test
def test_tls_refused():
    """no client certificate, another CA's client certificate, a CA that did not sign the servers'"""
    cl = cluster()
    for what, kw in [("no client certificate", {"cert": False, "key": False}),
                     ("another CA's client", {"files": (cl.ca, cl.wrong_cert, cl.wrong_key)}),
                     ("another CA", {"files": (cl.wrong_ca, cl.cert, cl.key)})]:
        # A refusal ends the call at once; a sanitizer build's handshake took more than 600 ms.
        c = Client(timeout_ms=5000, **kw)
        try:
            r = c("range /t4")
            check(not r["ok"] and r["code"] == 11, f"{what}: {r}")
            print(f"# {what}: {r['msg']}", flush=True)
            if what == "another CA":
                check("certificate is refused" in r["msg"], r)
        finally:
            c.close()


@test
def test_tls_resumption():
    """TLS sessions kept across processes: resumed by the next, per endpoint and credentials, planted files ignored and replaced, no new file in a folder of 256 entries"""
    cl = cluster()
    base = tempfile.mkdtemp(prefix="cipam-tickets.")
    tickets = os.path.join(base, "tls")  # made by the client, 0700

    def handshakes(files=None, where=tickets, member=0):
        c = Client(endpoints=[cl.endpoints()[member]], files=files, tickets=where, timeout_ms=5000)
        try:
            r = ok(c("range /t7"), "a call with kept TLS sessions")
            return r["tlsFull"], r["tlsResumed"]
        finally:
            c.close()

    def only_file():
        names = os.listdir(tickets)
        eq(len(names), 1, f"one session file: {names}")
        return os.path.join(tickets, names[0])

    def check_ours(path, what):
        st = os.lstat(path)
        check(stat.S_ISREG(st.st_mode) and st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o600,
              f"{what}: not replaced by a 0600 file of root's: {oct(st.st_mode)} uid {st.st_uid}")

    try:
        eq(handshakes(), (1, 0), "the first process: a full handshake")
        eq(stat.S_IMODE(os.stat(tickets).st_mode), 0o700, "the ticket folder's mode")
        path = only_file()
        check(re.fullmatch(r"[0-9a-f]{64}", os.path.basename(path)), path)
        check_ours(path, "the first session")
        eq(handshakes(), (0, 1), "the second process resumes (etcd issues TLS 1.2 tickets to clients with certificates)")
        good = open(path, "rb").read()

        # Another client certificate of the same CA: a file of its own, never the first one's.
        cert2, key2 = make_cert(cl.dir, "ca", "client-other")
        eq(handshakes(files=(cl.ca, cert2, key2)), (1, 0), "another client certificate: a full handshake")
        eq(len(os.listdir(tickets)), 2, "another client certificate: a file of its own")
        eq(open(path, "rb").read(), good, "the first credentials' file untouched")
        eq(handshakes(files=(cl.ca, cert2, key2)), (0, 1), "another client certificate resumes its own")

        # Member 0's session under member 1's name: member 1 refuses the ticket, a full handshake.
        before = set(os.listdir(tickets))
        eq(handshakes(member=1), (1, 0), "member 1: a full handshake")
        (name1,) = set(os.listdir(tickets)) - before
        path1 = os.path.join(tickets, name1)
        with open(path1, "wb") as f:
            f.write(good)
        eq(handshakes(member=1), (1, 0), "another member's session: a full handshake")
        check(open(path1, "rb").read() != good, "another member's session replaced")
        eq(handshakes(member=1), (0, 1), "member 1 resumes its own")

        def plant(what):
            if os.path.lexists(path):
                os.unlink(path)
            if what == "garbage":
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                os.write(fd, b"not a session\n")
                os.close(fd)
            elif what == "a symbolic link":
                target = os.path.join(base, "target")
                with open(target, "wb") as f:
                    f.write(good)
                os.chmod(target, 0o600)
                os.symlink(target, path)
            else:
                with open(path, "wb") as f:
                    f.write(good)
                os.chmod(path, 0o644 if what == "0644" else 0o600)
                if what == "not root's":
                    os.chown(path, 65534, 65534)

        for what in ["garbage", "0644", "not root's", "a symbolic link"]:
            plant(what)
            eq(handshakes(), (1, 0), f"a planted session file ({what}): ignored")
            check_ours(path, what)
            if what == "a symbolic link":
                eq(open(os.path.join(base, "target"), "rb").read(), good, "the link's target untouched")
            eq(handshakes(), (0, 1), f"after {what}: the replaced file resumes")
            good = open(path, "rb").read()

        # A folder of 256 entries takes no new file (tenants' endpoints would grow it in memory),
        # and a known name is still renewed.
        os.unlink(path1)
        for n in range(256 - len(os.listdir(tickets))):
            open(os.path.join(tickets, f"filler{n}"), "w").close()
        eq(handshakes(member=1), (1, 0), "a full folder: a full handshake")
        check(name1 not in os.listdir(tickets), "a full folder: no new file")
        eq(handshakes(), (0, 1), "a full folder: a kept session still resumes")

        # The ticket folder as a symbolic link: refused (a full handshake), nothing written.
        real = os.path.join(base, "real")
        os.mkdir(real, 0o700)
        link = os.path.join(base, "linked")
        os.symlink(real, link)
        for n in range(2):
            eq(handshakes(where=link), (1, 0), f"a linked ticket folder, call {n + 1}: a full handshake")
        eq(os.listdir(real), [], "nothing written through the linked folder")
    finally:
        shutil.rmtree(base, ignore_errors=True)


@test
def test_all_down():
    """every member down: code 11 naming every endpoint, within the dial timeout"""
    cl = cluster()
    c = Client(timeout_ms=1000)
    try:
        ok(c("range /t5"))
        cl.stop_all()
        start = time.monotonic()
        r = c("range /t5")
        took = time.monotonic() - start
        check(not r["ok"] and r["code"] == 11, r)
        for e in cl.endpoints():
            check(e in r["msg"], f"{e} not named: {r}")
        check(0.9 < took < 1.6, f"answered in {took:.2f} s, not within the 1 s dial timeout")
    finally:
        c.close()


if __name__ == "__main__":
    try:
        run_all()
    finally:
        for cl in _cluster:
            cl.close()
