#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""cluster-ipam's bench row (issue 54; docs/cluster-ipam.md, Bench): against a 3-member etcd
with TLS and client certificates on loopback (tests/lib/etcd_cluster.py), ADD and DEL p50/p99
with a block held, one node calling one at a time; the etcd round trips of each call (from
cni-all's debug call log, docs/logging.md); allocations per second with 1, 8 and 32 concurrent
callers spread over 8 nodes (each a UTS namespace with its own host name, the applet's node
name); duplicates in every run (must be 0); and host-local's ADD and DEL timed the same way
beside it. Every call is a process started from this script (fork, exec, wait), for both
plugins alike. Run as root, in a private mount namespace (credentials go in a tmpfs on
/etc/cni, where a config may name them; the node caches in a private /var/lib/cni):

    python3 tests/lib/private_state.py bench/cluster_ipam.py --cni-all build-test/cni-all [--calls 200]
"""
import argparse
import concurrent.futures
import ctypes
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "lib"))
from etcd_cluster import EtcdCluster  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--cni-all", required=True)
p.add_argument("--calls", type=int, default=200, help="sequential ADDs (and DELs) for the latency rows")
p.add_argument("--allocations", type=int, default=320, help="ADDs per concurrency point")
p.add_argument("--callers", default="1,8,32")
opts = p.parse_args()

CLONE_NEWUTS = 0x04000000
CRED = "/etc/cni/cluster-ipam"
libc = ctypes.CDLL(None, use_errno=True)


def enter(node):
    def f():
        libc.unshare(CLONE_NEWUTS)
        libc.sethostname(node.encode(), len(node))
    return f


def call(applet, command, cfg, ctr, node="bnode", env_extra=None):
    env = {"CNI_COMMAND": command, "CNI_CONTAINERID": ctr, "CNI_NETNS": "/proc/1/ns/net", "CNI_IFNAME": "eth0",
           "CNI_PATH": "/nonexistent", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin", **(env_extra or {})}
    start = time.perf_counter()
    r = subprocess.run([applet], executable=opts.cni_all, input=json.dumps(cfg), env=env, capture_output=True,
                       text=True, preexec_fn=enter(node))
    took = time.perf_counter() - start
    if r.returncode != 0:
        raise RuntimeError(f"{applet} {command} {ctr} on {node}: {r.stdout} {r.stderr}")
    return took, (json.loads(r.stdout) if r.stdout.strip() else None)


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def ms(x):
    return f"{x * 1000:.2f}"


def main():
    with open("/proc/self/mountinfo") as f:
        private = any(line.split()[4] == "/run/cni" for line in f)
    if not private:
        sys.exit("run under tests/lib/private_state.py (a private mount namespace)")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", "/etc/cni"], check=True)
    os.mkdir(CRED, 0o700)
    work = tempfile.mkdtemp(prefix="cipam-bench.")
    cluster = EtcdCluster()
    try:
        for name, src in (("ca.pem", cluster.ca), ("client.pem", cluster.cert), ("client-key.pem", cluster.key)):
            shutil.copy(src, os.path.join(CRED, name))
            os.chmod(os.path.join(CRED, name), 0o600)
        log = os.path.join(work, "log")
        os.mkdir(log, 0o700)
        settings = os.path.join(work, "log.json")
        with open(settings, "w") as f:
            json.dump({"logLevel": "debug", "logFile": os.path.join(log, "cni.log")}, f)
        etcd = {"endpoints": cluster.endpoints(), "caFile": f"{CRED}/ca.pem", "certFile": f"{CRED}/client.pem",
                "keyFile": f"{CRED}/client-key.pem"}

        def cipam(prefix):
            return {"cniVersion": "1.0.0", "name": "bench", "ipam": {
                "type": "cluster-ipam", "ranges": [[{"subnet": "10.90.0.0/16"}]], "blockSize": 26,
                "etcd": dict(etcd, prefix=prefix)}}
        hl = {"cniVersion": "1.0.0", "name": "bench", "ipam": {
            "type": "host-local", "ranges": [[{"subnet": "10.91.0.0/16"}]], "dataDir": os.path.join(work, "hl")}}

        rows = []
        # Latency, one node, a block held (the first ADD claims it and is left out).
        cfg = cipam("/bench-lat/")
        call("cluster-ipam", "ADD", cfg, "warm")
        logged = {"CNI_ALL_LOG_CONFIG": settings}
        add_t, del_t, hl_add, hl_del = [], [], [], []
        for i in range(opts.calls):
            add_t.append(call("cluster-ipam", "ADD", cfg, f"l{i}")[0])
            hl_add.append(call("host-local", "ADD", hl, f"l{i}")[0])
        for i in range(opts.calls):
            del_t.append(call("cluster-ipam", "DEL", cfg, f"l{i}")[0])
            hl_del.append(call("host-local", "DEL", hl, f"l{i}")[0])
        # Round trips: a few calls again with the debug log on (its cost stays out of the times).
        for i in range(20):
            call("cluster-ipam", "ADD", cfg, f"rt{i}", env_extra=logged)
        for i in range(20):
            call("cluster-ipam", "DEL", cfg, f"rt{i}", env_extra=logged)
        text = open(os.path.join(log, "cni.log")).read()
        add_rt = [int(n) for n in re.findall(r"ADD.*?cluster-ipam: (\d+) round trips", text)]
        del_rt = [int(n) for n in re.findall(r"DEL.*?cluster-ipam: (\d+) round trips", text)]
        # Where an ADD's time goes beyond host-local's: the same calls over http:// (no TLS
        # handshake) against a plain cluster of its own.
        plain = EtcdCluster(tls=False)
        try:
            pcfg = cipam("/bench-plain/")
            pcfg["ipam"]["etcd"] = {"endpoints": plain.endpoints(), "prefix": "/bench-plain/"}
            call("cluster-ipam", "ADD", pcfg, "warm")
            plain_add = [call("cluster-ipam", "ADD", pcfg, f"p{i}")[0] for i in range(opts.calls)]
        finally:
            plain.close()
        rows.append(("cluster-ipam ADD (block held)", add_t, add_rt))
        rows.append(("cluster-ipam ADD over http:// (no TLS)", plain_add, None))
        rows.append(("cluster-ipam DEL", del_t, del_rt))
        rows.append(("host-local ADD", hl_add, None))
        rows.append(("host-local DEL", hl_del, None))

        print("| call | p50 ms | p99 ms | etcd round trips per call |")
        print("|---|---|---|---|")
        for name, t, rt in rows:
            trips = "-" if rt is None else (f"{min(rt)}-{max(rt)} (median {statistics.median(rt):g})" if rt else "?")
            print(f"| {name} | {ms(pct(t, .5))} | {ms(pct(t, .99))} | {trips} |")
        print(f"\nADD p50 ratio cluster-ipam / host-local: {pct(add_t, .5) / pct(hl_add, .5):.2f} (target <= 2)\n")

        print("| concurrent callers | allocations/s | ADD p50 ms | ADD p99 ms | duplicates |")
        print("|---|---|---|---|---|")
        nodes = [f"bn{i}" for i in range(8)]
        for callers in [int(x) for x in opts.callers.split(",")]:
            cfg = cipam(f"/bench-c{callers}/")
            for n in nodes:  # each node holds a block before the clock starts
                call("cluster-ipam", "ADD", cfg, f"w-{n}", node=n)
            jobs = [(nodes[i % len(nodes)], f"c{i}") for i in range(opts.allocations)]
            start = time.perf_counter()
            with concurrent.futures.ThreadPoolExecutor(callers) as pool:
                got = list(pool.map(lambda j: call("cluster-ipam", "ADD", cfg, j[1], node=j[0]), jobs))
            took = time.perf_counter() - start
            addresses = [o["ips"][0]["address"] for _, o in got]
            dups = len(addresses) - len(set(addresses))
            lat = [t for t, _ in got]
            print(f"| {callers} | {len(jobs) / took:.0f} | {ms(pct(lat, .5))} | {ms(pct(lat, .99))} | {dups} |", flush=True)
    finally:
        cluster.close()
        shutil.rmtree(work, ignore_errors=True)
        subprocess.run(["umount", "/etc/cni"])


if __name__ == "__main__":
    main()
