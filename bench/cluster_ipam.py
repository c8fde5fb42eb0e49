#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""cluster-ipam's bench row (issue 54; docs/cluster-ipam.md, Bench): against a 3-member etcd
with TLS and client certificates on loopback (tests/lib/etcd_cluster.py), ADD and DEL p50/p99
with a block held, one node calling one at a time; the etcd round trips of each call (from
cni-all's debug call log, docs/logging.md); allocations per second with 1, 8 and 32 concurrent
callers spread over 8 nodes (each a UTS namespace with its own host name, the applet's node
name); duplicates in every run (must be 0); and host-local's ADD and DEL timed the same way
beside it, and its allocations per second at the same concurrency. Every call is started and
timed by bench/spawn-timer (wall time and the call's CPU time from wait4), for both plugins
alike; where an ADD's time goes is shown per concurrency point as CPU milliseconds per ADD: the
plugin's, the three etcd members' (from /proc) and the machine's (from /proc/stat, everything
that ran, the harness too). Run as root, in a private mount namespace (credentials go in a
tmpfs on /etc/cni, where a config may name them; the node caches in a private /var/lib/cni):

    python3 tests/lib/private_state.py bench/cluster_ipam.py --cni-all build-test/cni-all [--calls 200]
"""
import argparse
import concurrent.futures
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
p.add_argument("--spawn-timer", help="bench/spawn-timer (default: next to --cni-all, in bench/)")
opts = p.parse_args()
SPAWN_TIMER = opts.spawn_timer or os.path.join(os.path.dirname(os.path.abspath(opts.cni_all)), "bench", "spawn-timer")

CRED = "/etc/cni/cluster-ipam"
TICK = os.sysconf("SC_CLK_TCK")
APPLETS = tempfile.mkdtemp(prefix="cipam-bench-bin.")  # cluster-ipam and host-local, links to --cni-all
for applet in ("cluster-ipam", "host-local"):
    os.symlink(os.path.abspath(opts.cni_all), os.path.join(APPLETS, applet))


def call(applet, command, cfg, ctr, node="bnode", env_extra=None):
    """(wall s, CPU s, result) of one call, started by spawn-timer as node `node` (a UTS
    namespace with that host name: the applet's node name)."""
    env = {"CNI_COMMAND": command, "CNI_CONTAINERID": ctr, "CNI_NETNS": "/proc/1/ns/net", "CNI_IFNAME": "eth0",
           "CNI_PATH": "/nonexistent", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin", **(env_extra or {})}
    r = subprocess.run([SPAWN_TIMER, "--hostname", node, os.path.join(APPLETS, applet)], input=json.dumps(cfg),
                       env=env, capture_output=True, text=True)
    timer = r.stderr.strip().splitlines()[-1].split() if r.stderr.strip() else []
    if len(timer) != 5 or timer[0] != "spawn-timer" or timer[1] != "0":
        raise RuntimeError(f"{applet} {command} {ctr} on {node}: {r.stdout} {r.stderr}")
    return int(timer[2]) / 1e9, int(timer[3]) / 1e9, (json.loads(r.stdout) if r.stdout.strip() else None)


def process_cpu(pids):
    """CPU seconds the processes used so far (utime + stime)."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / TICK


def machine_cpu():
    """(busy, all) CPU seconds of the machine so far, every core; busy leaves out niced processes
    (other work the machine does at the lowest priority while the bench runs)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return (sum(v) - v[1] - v[3] - v[4]) / TICK, sum(v) / TICK


def rate(callers, jobs, run, etcd_pids=()):
    """Calls per second, latencies, and CPU ms per call: the plugin's, etcd's, the machine's."""
    etcd0, (busy0, all0) = process_cpu(etcd_pids), machine_cpu()
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(callers) as pool:
        got = list(pool.map(run, jobs))
    took = time.perf_counter() - start
    (busy1, all1), etcd1 = machine_cpu(), process_cpu(etcd_pids)
    per = 1000 / len(jobs)
    return {"rate": len(jobs) / took, "lat": [w for w, _, _ in got], "results": [o for _, _, o in got],
            "plugin_ms": sum(c for _, c, _ in got) * per, "etcd_ms": (etcd1 - etcd0) * per,
            "machine_ms": (busy1 - busy0) * per, "busy": (busy1 - busy0) / (all1 - all0)}


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
        cfg = cipam("/cni-all/bench-lat/")
        call("cluster-ipam", "ADD", cfg, "warm")
        logged = {"CNI_ALL_LOG_CONFIG": settings}
        add_t, del_t, hl_add, hl_del = [], [], [], []  # (wall, CPU) of each call
        for i in range(opts.calls):
            add_t.append(call("cluster-ipam", "ADD", cfg, f"l{i}")[:2])
            hl_add.append(call("host-local", "ADD", hl, f"l{i}")[:2])
        for i in range(opts.calls):
            del_t.append(call("cluster-ipam", "DEL", cfg, f"l{i}")[:2])
            hl_del.append(call("host-local", "DEL", hl, f"l{i}")[:2])
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
            pcfg = cipam("/cni-all/bench-plain/")
            pcfg["ipam"]["etcd"] = {"endpoints": plain.endpoints(), "prefix": "/cni-all/bench-plain/"}
            call("cluster-ipam", "ADD", pcfg, "warm")
            plain_add = [call("cluster-ipam", "ADD", pcfg, f"p{i}")[:2] for i in range(opts.calls)]
        finally:
            plain.close()
        rows.append(("cluster-ipam ADD (block held)", add_t, add_rt))
        rows.append(("cluster-ipam ADD over http:// (no TLS)", plain_add, None))
        rows.append(("cluster-ipam DEL", del_t, del_rt))
        rows.append(("host-local ADD", hl_add, None))
        rows.append(("host-local DEL", hl_del, None))

        print("| call | p50 ms | p99 ms | CPU p50 ms (the plugin's) | etcd round trips per call |")
        print("|---|---|---|---|---|")
        for name, t, rt in rows:
            trips = "-" if rt is None else (f"{min(rt)}-{max(rt)} (median {statistics.median(rt):g})" if rt else "?")
            wall, cpu = [w for w, _ in t], [c for _, c in t]
            print(f"| {name} | {ms(pct(wall, .5))} | {ms(pct(wall, .99))} | {ms(pct(cpu, .5))} | {trips} |")
        ratio = pct([w for w, _ in add_t], .5) / pct([w for w, _ in hl_add], .5)
        print(f"\nADD p50 ratio cluster-ipam / host-local: {ratio:.2f} (target <= 2)\n")

        print("| plugin | concurrent callers | allocations/s | ADD p50 ms | ADD p99 ms | CPU ms per ADD: plugin / etcd / "
              "machine | machine busy | duplicates |")
        print("|---|---|---|---|---|---|---|---|")
        nodes = [f"bn{i}" for i in range(8)]
        etcd_pids = [proc.pid for proc in cluster.procs]
        for callers in [int(x) for x in opts.callers.split(",")]:
            cfg = cipam(f"/cni-all/bench-c{callers}/")
            for n in nodes:  # each node holds a block before the clock starts
                call("cluster-ipam", "ADD", cfg, f"w-{n}", node=n)
            jobs = [(nodes[i % len(nodes)], f"c{i}") for i in range(opts.allocations)]
            hcfg = {**hl, "ipam": {**hl["ipam"], "dataDir": os.path.join(work, f"hl-c{callers}")}}
            for name, run, pids in (
                    ("cluster-ipam", lambda j: call("cluster-ipam", "ADD", cfg, j[1], node=j[0]), etcd_pids),
                    ("host-local", lambda j: call("host-local", "ADD", hcfg, j[1], node=j[0]), ())):
                r = rate(callers, jobs, run, pids)
                addresses = [o["ips"][0]["address"] for o in r["results"]]
                dups = len(addresses) - len(set(addresses))
                etcd_ms = f"{r['etcd_ms']:.1f}" if pids else "-"
                print(f"| {name} | {callers} | {r['rate']:.0f} | {ms(pct(r['lat'], .5))} | {ms(pct(r['lat'], .99))} | "
                      f"{r['plugin_ms']:.1f} / {etcd_ms} / {r['machine_ms']:.1f} | {r['busy']:.0%} | {dups} |", flush=True)
    finally:
        cluster.close()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(APPLETS, ignore_errors=True)
        subprocess.run(["umount", "/etc/cni"])


if __name__ == "__main__":
    main()
