#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""host-local: ADD/CHECK/DEL/GC/STATUS through the dispatcher with the reference's files, concurrent ADDs
that never share an address, switching between the Go plugin and ours on one data directory, and
planted symlinks never followed. Each test builds its own
"host" and "container" network namespaces, runs the applet through its installed launcher inside
the host one, and asserts on kernel and disk state."""
import concurrent.futures
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import BIN, REF, Plugin, check, eq, netns, ns_path, run_all, test, victim_file  # noqa: E402


def ours(applet):
    return Plugin(os.path.join(BIN, applet))


def host_local_conf(data_dir, version="1.1.0", **ipam):
    body = {"type": "host-local", "subnet": "10.88.0.0/16", "dataDir": data_dir}
    body.update(ipam)
    return {"cniVersion": version, "name": "pool", "type": "bridge", "ipam": body}


@test
def host_local_through_the_dispatcher():
    """host-local: ADD/CHECK/DEL/GC/STATUS with real env and stdin; files as the reference writes them"""
    data = tempfile.mkdtemp()
    try:
        with netns("host") as host, netns("ctr") as ctr:
            hl = ours("host-local")
            conf = host_local_conf(data, routes=[{"dst": "0.0.0.0/0"}])
            res = hl.run("ADD", conf, host_ns=host, netns=ns_path(ctr), container_id="pod-a").ok().json()
            eq(res, {"cniVersion": "1.1.0", "ips": [{"address": "10.88.0.2/16", "gateway": "10.88.0.1"}],
                     "routes": [{"dst": "0.0.0.0/0"}]})
            with open(os.path.join(data, "pool", "10.88.0.2"), "rb") as f:
                eq(f.read(), b"pod-a\r\neth0")
            eq(oct(os.stat(os.path.join(data, "pool", "10.88.0.2")).st_mode & 0o777), "0o600")
            hl.run("CHECK", conf, host_ns=host, netns=ns_path(ctr), container_id="pod-a").ok()
            hl.run("STATUS", conf, host_ns=host, raw_env={"CNI_COMMAND": "STATUS", "CNI_PATH": BIN}).ok()
            hl.run("ADD", conf, host_ns=host, netns=ns_path(ctr), container_id="pod-b").ok()
            gc = dict(conf, **{"cni.dev/valid-attachments": [{"containerID": "pod-b", "ifname": "eth0"}]})
            hl.run("GC", gc, host_ns=host, raw_env={"CNI_COMMAND": "GC", "CNI_PATH": BIN}).ok()
            check(not os.path.exists(os.path.join(data, "pool", "10.88.0.2")), "GC released pod-a")
            check(os.path.exists(os.path.join(data, "pool", "10.88.0.3")), "GC kept pod-b")
            hl.run("DEL", conf, host_ns=host, netns=ns_path(ctr), container_id="pod-b").ok()
            hl.run("DEL", conf, host_ns=host, netns="", container_id="pod-b").ok()
            eq(sorted(f for f in os.listdir(os.path.join(data, "pool")) if f[0].isdigit() and "." in f[1:4]), [])
    finally:
        shutil.rmtree(data)


def _add(args):
    path, conf, cid, host, ctr = args
    return Plugin(path).run("ADD", conf, host_ns=host, netns=ns_path(ctr), container_id=cid)


@test
def concurrent_adds_never_duplicate():
    """host-local: 8 concurrent ADD processes (plus 8 of the Go plugin, sharing the lock) get distinct IPs"""
    data = tempfile.mkdtemp()
    try:
        with netns("host") as host, netns("ctr") as ctr:
            conf = json.dumps(host_local_conf(data, "0.4.0", subnet="10.89.0.0/24"))
            jobs = [(os.path.join(BIN, "host-local"), conf, f"ours-{i}", host, ctr) for i in range(8)]
            if REF:
                jobs += [(os.path.join(REF, "host-local"), conf, f"go-{i}", host, ctr) for i in range(8)]
            with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
                results = list(pool.map(_add, jobs))
            ips = [r.ok().json()["ips"][0]["address"] for r in results]
            eq(len(set(ips)), len(jobs), f"distinct addresses: {ips}")
            files = [f for f in os.listdir(os.path.join(data, "pool")) if f.startswith("10.89.")]
            eq(len(files), len(jobs))
            owners = set()
            for f in files:
                with open(os.path.join(data, "pool", f), "rb") as fh:
                    owners.add(fh.read().split(b"\r\n")[0].decode())
            eq(owners, {j[2] for j in jobs})
    finally:
        shutil.rmtree(data)


@test
def switching_implementations_keeps_state():
    """host-local: the Go plugin and cni-all read and release each other's reservations"""
    if not REF:
        raise AssertionError("Debian's containernetworking-plugins is not installed")
    data = tempfile.mkdtemp()
    try:
        with netns("host") as host, netns("ctr") as ctr:
            conf = host_local_conf(data, "0.4.0", subnet="10.90.0.0/24")
            go = Plugin(os.path.join(REF, "host-local"))
            mine = ours("host-local")
            a = go.run("ADD", conf, host_ns=host, netns=ns_path(ctr), container_id="by-go").ok().json()
            b = mine.run("ADD", conf, host_ns=host, netns=ns_path(ctr), container_id="by-us").ok().json()
            eq(a["ips"][0]["address"], "10.90.0.2/24")
            eq(b["ips"][0]["address"], "10.90.0.3/24", "round robin continues from the Go plugin's last_reserved_ip")
            mine.run("CHECK", conf, host_ns=host, netns=ns_path(ctr), container_id="by-go").ok()
            go.run("CHECK", conf, host_ns=host, netns=ns_path(ctr), container_id="by-us").ok()
            dup = mine.run("ADD", conf, host_ns=host, netns=ns_path(ctr), container_id="by-go").error()
            eq(dup["msg"], "failed to allocate for range 0: 10.90.0.2 has been allocated to by-go, duplicate allocation is not allowed")
            go.run("DEL", conf, host_ns=host, netns=ns_path(ctr), container_id="by-us").ok()
            mine.run("DEL", conf, host_ns=host, netns=ns_path(ctr), container_id="by-go").ok()
            c = mine.run("ADD", conf, host_ns=host, netns=ns_path(ctr), container_id="third").ok().json()
            eq(c["ips"][0]["address"], "10.90.0.4/24")
            left = sorted(f for f in os.listdir(os.path.join(data, "pool")) if f.startswith("10.90."))
            eq(left, ["10.90.0.4"])
    finally:
        shutil.rmtree(data)


@test
def host_local_never_follows_planted_links():
    """host-local: links planted at the index, its buckets' folder, last_reserved_ip, lock and an address are never
    written or read through"""
    data = tempfile.mkdtemp()
    elsewhere = tempfile.mkdtemp()
    try:
        with victim_file() as victim, netns("host") as host, netns("ctr") as ctr:
            pool = os.path.join(data, "pool")
            os.makedirs(pool)
            absent = victim + ".absent"  # a link to a missing file must not create it either
            for name, target in [(".cni-all-index", victim), ("last_reserved_ip.0", victim),
                                 ("lock", absent), ("10.91.0.2", victim)]:
                os.symlink(target, os.path.join(pool, name))
            os.symlink(elsewhere, os.path.join(pool, ".cni-all-index.d"))
            hl = ours("host-local")
            conf = host_local_conf(data, "1.0.0", subnet="10.91.0.0/24")
            res = hl.run("ADD", conf, host_ns=host, netns=ns_path(ctr), container_id="pod-a")
            eq(open(victim).read(), "original", "a planted link was written through")
            check(not os.path.exists(absent), "the lock link created its target")
            check(res.rc != 0 and "lock" in res.json()["msg"], f"a link at the lock refuses the call: {res}")
            os.unlink(os.path.join(pool, "lock"))
            res = hl.run("ADD", conf, host_ns=host, netns=ns_path(ctr), container_id="pod-a").ok().json()
            eq(res["ips"][0]["address"], "10.91.0.3/24", "the linked address is taken, not read through or replaced")
            eq(open(victim).read(), "original", "a planted link was written through")
            check(os.path.islink(os.path.join(pool, "10.91.0.2")), "the planted address link stays")
            for name in (".cni-all-index", "last_reserved_ip.0"):
                check(not os.path.islink(os.path.join(pool, name)), f"{name}: our own file replaced the planted link")
            eq(open(os.path.join(pool, "last_reserved_ip.0")).read(), "10.91.0.3")
            hl.run("DEL", conf, host_ns=host, netns=ns_path(ctr), container_id="pod-a").ok()
            check(not os.path.exists(os.path.join(pool, "10.91.0.3")), "DEL released pod-a")
            eq(open(victim).read(), "original")
            eq(os.listdir(elsewhere), [], "the buckets went through the planted folder link")
            check(os.path.islink(os.path.join(pool, ".cni-all-index.d")), "the planted folder link stays")
    finally:
        shutil.rmtree(data)
        shutil.rmtree(elsewhere)


if __name__ == "__main__":
    run_all(cleanup=[BIN])
