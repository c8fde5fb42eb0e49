# SPDX-License-Identifier: Apache-2.0
"""A throwaway etcd cluster for cluster-ipam's tests (docs/design.md, The HTTP client):
Debian's etcd (etcd-server), N members (3 by default) on loopback ports nobody else holds, data
and certificates in a temporary directory, with TLS everywhere and client-certificate auth
required (clients and peers). The test makes its own certificates with the openssl CLI: a CA,
one server certificate per member (subjectAltName IP:127.0.0.1 and DNS:localhost, for both the
client and the peer side), a client certificate, and a second CA with its own client
certificate, which the cluster refuses. Short heartbeat and election timeouts make a new leader
in well under a second after kill_leader(). `with EtcdCluster() as c:` stops every member and
removes the directory even when the test fails.

EtcdCluster(netns=NS, address=A) runs the members inside the named network namespace NS, client
and peer URLs on A (an address of NS that other namespaces reach, a bridge's say), which the
server certificate also names; its own requests (health, put, range) go from a thread that
entered NS.

    with EtcdCluster() as c:
        c.endpoints()          # ["https://127.0.0.1:P1", ...]
        c.ca, c.cert, c.key    # the client's files; c.wrong_ca, c.wrong_cert, c.wrong_key
        m = c.kill_leader()    # kill -9; the member's index
        c.restart(m); c.wait_healthy()
"""
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import http.client
import base64
import ctypes
import threading

ETCD = shutil.which("etcd") or "/usr/bin/etcd"
CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def in_netns(ns, fn):
    """fn() called from a new thread that entered the named network namespace (only that thread
    moves: the sockets fn makes are NS's); its result, or its exception raised here."""
    out = {}

    def run():
        try:
            fd = os.open(f"/run/netns/{ns}", os.O_RDONLY | os.O_CLOEXEC)
            try:
                if _libc.setns(fd, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), f"setns into {ns}")
            finally:
                os.close(fd)
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            out["error"] = e
    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def free_ports(n):
    """n TCP ports on 127.0.0.1 that nothing listens on now (each bound then released)."""
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_ca(d, name):
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
             "-subj", f"/CN={name}", "-keyout", f"{name}.key", "-out", f"{name}.pem",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)
    return os.path.join(d, f"{name}.pem"), os.path.join(d, f"{name}.key")


def make_cert(d, ca, name, san=None, usage="clientAuth"):
    """A certificate `name`.pem and key `name`.key signed by `ca` (its name)."""
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", f"/CN={name}",
             "-keyout", f"{name}.key", "-out", f"{name}.csr", cwd=d)
    ext = f"{name}.ext"
    with open(os.path.join(d, ext), "w") as f:
        f.write(f"extendedKeyUsage={usage}\nkeyUsage=critical,digitalSignature\n")
        if san:
            f.write(f"subjectAltName={san}\n")
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-CAcreateserial",
             "-days", "2", "-out", f"{name}.pem", "-extfile", ext, cwd=d)
    return os.path.join(d, f"{name}.pem"), os.path.join(d, f"{name}.key")


class EtcdCluster:
    def __init__(self, members=3, tls=True, netns=None, address="127.0.0.1"):
        self.n, self.tls, self.netns, self.address = members, tls, netns, address
        self.dir = tempfile.mkdtemp(prefix="etcd-cluster.")
        self.procs = [None] * members
        try:
            if netns:  # the members reach each other, and this process reaches them, over NS's lo
                subprocess.run(["ip", "-n", netns, "link", "set", "lo", "up"], check=True, capture_output=True)
            self._certs()
            ports = free_ports(2 * members)
            self.client_ports, self.peer_ports = ports[:members], ports[members:]
            self.token = "cni-all-" + os.path.basename(self.dir)
            for i in range(members):
                self.start(i, new=True)
            self.wait_healthy()
        except BaseException:
            self.close()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _certs(self):
        d = self.dir
        self.ca, _ = make_ca(d, "ca")
        san = "IP:127.0.0.1,DNS:localhost" + (f",IP:{self.address}" if self.address != "127.0.0.1" else "")
        self.server_cert, self.server_key = make_cert(d, "ca", "server", san, "serverAuth,clientAuth")
        self.cert, self.key = make_cert(d, "ca", "client")
        self.wrong_ca, _ = make_ca(d, "wrongca")
        self.wrong_cert, self.wrong_key = make_cert(d, "wrongca", "wrongclient")

    def scheme(self):
        return "https" if self.tls else "http"

    def endpoints(self):
        return [f"{self.scheme()}://{self.address}:{p}" for p in self.client_ports]

    def _peer(self, i):
        return f"{self.scheme()}://{self.address}:{self.peer_ports[i]}"

    def start(self, i, new=False):
        """Starts member i (after a kill, on its kept data: new=False)."""
        data = os.path.join(self.dir, f"m{i}")
        cluster = ",".join(f"m{j}={self._peer(j)}" for j in range(self.n))
        cmd = [ETCD, "--name", f"m{i}", "--data-dir", data,
               "--listen-client-urls", self.endpoints()[i], "--advertise-client-urls", self.endpoints()[i],
               "--listen-peer-urls", self._peer(i), "--initial-advertise-peer-urls", self._peer(i),
               "--initial-cluster", cluster, "--initial-cluster-token", self.token,
               "--initial-cluster-state", "new", "--heartbeat-interval", "50", "--election-timeout", "500",
               "--logger", "zap", "--log-level", "error", "--listen-metrics-urls", ""]
        if self.tls:
            cmd += ["--cert-file", self.server_cert, "--key-file", self.server_key, "--client-cert-auth",
                    "--trusted-ca-file", self.ca, "--peer-cert-file", self.server_cert, "--peer-key-file",
                    self.server_key, "--peer-client-cert-auth", "--peer-trusted-ca-file", self.ca]
        if self.netns:
            cmd = ["ip", "netns", "exec", self.netns, *cmd]
        log = open(os.path.join(self.dir, f"m{i}.log"), "a")
        self.procs[i] = subprocess.Popen(cmd, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        log.close()

    restart = start

    def _post(self, i, path, body, timeout=1.0):
        """The member's JSON gateway answer to POST `path` (a dict), or None."""
        if self.netns:
            return in_netns(self.netns, lambda: self._post_here(i, path, body, timeout))
        return self._post_here(i, path, body, timeout)

    def _post_here(self, i, path, body, timeout):
        port = self.client_ports[i]
        try:
            if self.tls:
                ctx = ssl.create_default_context(cafile=self.ca)
                ctx.load_cert_chain(self.cert, self.key)
                c = http.client.HTTPSConnection(self.address, port, context=ctx, timeout=timeout)
            else:
                c = http.client.HTTPConnection(self.address, port, timeout=timeout)
            c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
            r = c.getresponse()
            data = r.read()
            c.close()
            return json.loads(data) if r.status == 200 else None
        except (OSError, ValueError, http.client.HTTPException):
            return None

    def status(self, i):
        """Member i's status (its id and the leader's id it knows), or None."""
        return self._post(i, "/v3/maintenance/status", {})

    def leader(self):
        """The index of the running member that is the leader, or None."""
        for i in self.running():
            s = self.status(i)
            if s and s.get("leader") and s.get("leader") == s.get("header", {}).get("member_id"):
                return i
        return None

    def running(self):
        return [i for i, p in enumerate(self.procs) if p and p.poll() is None]

    def wait_healthy(self, timeout=30):
        """Until every running member answers a linearizable read and one of them leads."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.leader() is not None and all(
                    self._post(i, "/v3/kv/range", {"key": base64.b64encode(b"health").decode()}) is not None
                    for i in self.running()):
                return
            time.sleep(0.05)
        raise AssertionError(f"etcd not healthy within {timeout} s: " + self.logs())

    def kill(self, i):
        """kill -9 of member i."""
        p = self.procs[i]
        if p and p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
            p.wait()

    def kill_leader(self):
        """kill -9 of the leader; its index."""
        end = time.monotonic() + 10
        while (i := self.leader()) is None and time.monotonic() < end:
            time.sleep(0.05)
        if i is None:
            raise AssertionError("no etcd leader to kill")
        self.kill(i)
        return i

    def stop_all(self):
        for i in range(self.n):
            self.kill(i)

    def put(self, key, value):
        """A plain put through member 0 (or any running one), for a test's setup."""
        for i in self.running():
            if self._post(i, "/v3/kv/put", {"key": base64.b64encode(key.encode()).decode(),
                                            "value": base64.b64encode(value.encode()).decode()}) is not None:
                return
        raise AssertionError("no etcd member took the put")

    def logs(self):
        out = []
        for i in range(self.n):
            try:
                with open(os.path.join(self.dir, f"m{i}.log")) as f:
                    out.append(f"m{i}: " + f.read()[-2000:])
            except OSError:
                pass
        return "\n".join(out)

    def close(self):
        for i, p in enumerate(self.procs):
            if p and p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
