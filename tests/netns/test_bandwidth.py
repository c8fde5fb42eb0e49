#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Root tests of the bandwidth applet after our ptp: a TCP transfer into the container and one
out of it each run at the configured rate (within 20 %), CHECK, DEL removing the IFB, a
failed ADD leaving no qdisc or IFB, GC of gone attachments only, and refused input; unshapedSubnets and shapedSubnets with
traffic to a subnet on the host's loopback running free or shaped. Traffic stays between throwaway host
and container namespaces."""
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import BIN, REF, Plugin, check, eq, netns, ns_path, run_all, sh, test  # noqa: E402
from conflist import run_add, run_check, run_del  # noqa: E402

RATE = 16_000_000          # bits per second: 2 MB/s
BURST = 1_000_000          # bits
SIZE = 4_000_000           # bytes per transfer: about 2 s at the rate

RECEIVER = r"""
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 5001)); s.listen(1); print("ready", flush=True)
c, _ = s.accept(); n = 0; start = None
while True:
    d = c.recv(65536)
    if not d: break
    if start is None: start = time.monotonic()
    n += len(d)
print(n, time.monotonic() - start, flush=True)
"""

SENDER = r"""
import socket, sys
source = (sys.argv[3], 0) if len(sys.argv) > 3 else None
c = socket.create_connection((sys.argv[1], 5001), timeout=30, source_address=source); c.sendall(b"x" * int(sys.argv[2])); c.close()
"""


def conflist(data, **bw):
    return {"cniVersion": "1.0.0", "name": "bw-test", "plugins": [
        {"type": "ptp", "ipam": {"type": "host-local", "subnet": "10.95.0.0/24", "dataDir": data}},
        dict({"type": "bandwidth"}, **bw)]}


def measure(receiver_ns, receiver_ip, sender_ns, source=None):
    """Bytes per second of a SIZE-byte TCP transfer (from `source` if given), timed at the receiver."""
    rx = subprocess.Popen(["ip", "netns", "exec", receiver_ns, "python3", "-c", RECEIVER, receiver_ip], stdout=subprocess.PIPE, text=True)
    try:
        eq(rx.stdout.readline().strip(), "ready")
        sh("ip", "netns", "exec", sender_ns, "python3", "-c", SENDER, receiver_ip, str(SIZE), *([source] if source else []))
        n, secs = rx.stdout.readline().split()
        eq(int(n), SIZE)
        return int(n) / float(secs)
    finally:
        rx.kill()
        rx.wait()


@contextlib.contextmanager
def node():
    """A data directory and throwaway host and container namespaces (the container's lo up)."""
    data = tempfile.mkdtemp()
    try:
        with netns("bh") as host, netns("bc") as ctr:
            sh("ip", "-n", ctr, "link", "set", "lo", "up")
            yield data, host, ctr
    finally:
        shutil.rmtree(data)


@test
def bandwidth_shapes_both_directions():
    """bandwidth: into and out of the container at the configured rate (+-20 %); CHECK; DEL removes the IFB"""
    with node() as (data, host, ctr):
        c = conflist(data, ingressRate=RATE, ingressBurst=BURST, egressRate=RATE, egressBurst=BURST)
        res = run_add(BIN, c, host, ns_path(ctr), "bw-1")
        ifb = res["interfaces"][-1]["name"]
        check(ifb.startswith("bwp") and len(ifb) == 15, ifb)
        run_check(BIN, c, host, ns_path(ctr), "bw-1", res)
        ctr_ip = res["ips"][0]["address"].split("/")[0]
        host_ip = res["ips"][0]["gateway"]
        want = RATE / 8
        into = measure(ctr, ctr_ip, host)
        out = measure(host, host_ip, ctr)
        check(abs(into - want) <= 0.2 * want, f"into the container: {into:.0f} B/s, want {want:.0f}")
        check(abs(out - want) <= 0.2 * want, f"out of the container: {out:.0f} B/s, want {want:.0f}")
        qd = sh("ip", "netns", "exec", host, "tc", "qdisc", "show", "dev", ifb).stdout
        check("tbf 1: root" in qd and "rate 16Mbit" in qd, qd)
        run_del(BIN, c, host, ns_path(ctr), "bw-1", res)
        check(sh("ip", "-n", host, "link", "show", ifb, check_rc=False).returncode != 0, "IFB removed")
        run_del(BIN, c, host, ns_path(ctr), "bw-1", res)  # idempotent


@test
def bandwidth_unshaped_direction_runs_free():
    """bandwidth: only ingress shaped - the transfer out of the container is well above the rate"""
    with node() as (data, host, ctr):
        c = conflist(data, ingressRate=RATE, ingressBurst=BURST)
        res = run_add(BIN, c, host, ns_path(ctr), "bw-2")
        eq(len(res["interfaces"]), 2, "no IFB without an egress rate")
        out = measure(host, res["ips"][0]["gateway"], ctr)
        check(out > 2 * RATE / 8, f"unshaped: {out:.0f} B/s")
        run_del(BIN, c, host, ns_path(ctr), "bw-2", res)


def subnet_conflist(data, **bw):
    """ptp with a default route, so the container also reaches 10.98.0.1 on the host's loopback."""
    c = conflist(data, **bw)
    c["plugins"][0]["ipam"]["routes"] = [{"dst": "0.0.0.0/0"}]
    return c


@test
def bandwidth_unshaped_and_shaped_subnets():
    """bandwidth: unshapedSubnets runs traffic with that subnet free both ways, the rest at the rate; shapedSubnets the opposite"""
    with node() as (data, host, ctr):
        sh("ip", "-n", host, "addr", "add", "10.98.0.1/32", "dev", "lo")
        sh("ip", "-n", host, "link", "set", "lo", "up")
        want = RATE / 8
        for key, free_ip_shaped in [("unshapedSubnets", False), ("shapedSubnets", True)]:
            c = subnet_conflist(data, ingressRate=RATE, ingressBurst=BURST, egressRate=RATE, egressBurst=BURST,
                                **{key: ["10.98.0.0/24", "fd00:98::/64"]})
            res = run_add(BIN, c, host, ns_path(ctr), "bw-3")
            veth, ifb = res["interfaces"][0]["name"], res["interfaces"][-1]["name"]
            for dev, at in [(veth, "at 12"), (ifb, "at 16")]:  # the remote's address: source in, destination out
                qdisc = sh("tc", "-n", host, "qdisc", "show", "dev", dev, "root").stdout
                default = "0x1" if free_ip_shaped else "0x30"
                check(qdisc.startswith("qdisc htb 1: root") and f"default {default} " in qdisc, qdisc)
                leaves = sh("tc", "-n", host, "qdisc", "show", "dev", dev).stdout
                check("parent 1:30 limit 1000p" in leaves and "parent 1:1 limit 1000p" in leaves, leaves)
                filters = sh("tc", "-n", host, "filter", "show", "dev", dev, "parent", "1:").stdout
                check(f"match 0a620000/ffffff00 {at}" in filters, filters)
                eq(filters.count("*flowid " + ("1:30" if free_ip_shaped else "1:1")), 2, filters)
            run_check(BIN, c, host, ns_path(ctr), "bw-3", res)
            ctr_ip, gw = res["ips"][0]["address"].split("/")[0], res["ips"][0]["gateway"]
            rates = {"gateway in": measure(ctr, ctr_ip, host), "gateway out": measure(host, gw, ctr),
                     "10.98.0.1 in": measure(ctr, ctr_ip, host, source="10.98.0.1"),
                     "10.98.0.1 out": measure(host, "10.98.0.1", ctr)}
            for name, got in rates.items():
                shaped = name.startswith("10.98") == free_ip_shaped
                if shaped:
                    check(abs(got - want) <= 0.2 * want, f"{key}: {name} {got:.0f} B/s, want {want:.0f}")
                else:
                    check(got > 3 * want, f"{key}: {name} runs free: {got:.0f} B/s")
            run_del(BIN, c, host, ns_path(ctr), "bw-3", res)
            check("bwp" not in sh("ip", "-n", host, "-br", "link").stdout, "IFB gone")


def qdiscs(ns, dev):
    return sh("tc", "-n", ns, "qdisc", "show", "dev", dev).stdout


def ifbs(ns):
    return sorted(link["ifname"] for link in json.loads(sh("ip", "-n", ns, "-j", "link", "show", "type", "ifb").stdout or "[]"))


@test
def bandwidth_gc_releases_only_gone_attachments():
    """bandwidth GC (beyond the reference): the IFB, veth qdiscs and record of this network's attachment not in cni.dev/valid-attachments go; a valid one's, another network's and an IFB of no attachment stay"""
    data = tempfile.mkdtemp()
    records = "/run/cni/bandwidth"
    try:
        with netns("bh") as host, netns("bc") as c1, netns("bc") as c2, netns("bc") as c3:
            c = conflist(data, ingressRate=RATE, ingressBurst=BURST, egressRate=RATE, egressBurst=BURST)
            c["cniVersion"] = "1.1.0"
            other = dict(c, name="bw-other")
            veth = {}
            for conf, ctr, cid in ((c, c1, "keep"), (c, c2, "gone"), (other, c3, "gone-other")):
                veth[cid] = run_add(BIN, conf, host, ns_path(ctr), cid)["interfaces"][0]["name"]
            sh("ip", "-n", host, "link", "add", "bwp0123456789ab", "type", "ifb")  # no attachment's
            before = ifbs(host)
            eq(len(before), 4, before)
            eq(sorted(os.listdir(records)), ["gone-other:eth0.json", "gone:eth0.json", "keep:eth0.json"])
            gc = dict(c["plugins"][1], cniVersion="1.1.0", name="bw-test",
                      **{"cni.dev/valid-attachments": [{"containerID": "keep", "ifname": "eth0"}]})
            Plugin(os.path.join(BIN, "bandwidth")).run("GC", gc, host_ns=host, raw_env={"CNI_COMMAND": "GC", "CNI_PATH": BIN}).ok()
            eq(len(ifbs(host)), 3, "only the gone attachment's IFB went")
            eq(sorted(os.listdir(records)), ["gone-other:eth0.json", "keep:eth0.json"])
            for cid, shaped in (("keep", True), ("gone", False), ("gone-other", True)):
                q = qdiscs(host, veth[cid])
                eq(("tbf" in q, "ingress" in q), (shaped, shaped), f"{cid}: {q}")
            check("bwp0123456789ab" in ifbs(host), "the IFB of no attachment stays")
    finally:
        shutil.rmtree(data)


@test
def bandwidth_errors_and_rollback():
    """bandwidth: rate without burst, too large a burst, missing prevResult, no veth peer; nothing left behind"""
    bw = Plugin(os.path.join(BIN, "bandwidth"))
    with netns("bh") as host, netns("bc") as ctr:
        base = {"cniVersion": "1.0.0", "name": "bw-test", "type": "bandwidth"}
        for extra, msg in [({"ingressRate": 1000}, "if rate is set, burst must also be set"),
                           ({"egressBurst": 1000}, "if burst is set, rate must also be set"),
                           ({"ingressRate": 1000, "ingressBurst": 8 * 2**32}, "burst cannot be more than 4GB"),
                           ({"ingressRate": 1000, "ingressBurst": 1000}, "must be called as chained plugin"),
                           ({"unshapedSubnets": ["10.0.0.0/8"], "shapedSubnets": ["10.1.0.0/16"]},
                            "unshapedSubnets and shapedSubnets cannot be both specified, one of them should be discarded"),
                           ({"runtimeConfig": {"bandwidth": {"shapedSubnets": ["10.0.0.0/33"]}}},
                            'bad subnet "10.0.0.0/33" provided in shapedSubnets')]:
            eq(bw.run("ADD", dict(base, **extra), host_ns=host, netns=ns_path(ctr)).error()["msg"], msg, str(extra))
        # eth0's peer stays in the container: prevResult names no host interface that is its peer.
        sh("ip", "-n", ctr, "link", "add", "eth0", "type", "veth", "peer", "name", "inner0")
        prev = {"cniVersion": "1.0.0", "interfaces": [{"name": "vethfake"}, {"name": "eth0", "sandbox": ns_path(ctr)}],
                "ips": [{"address": "10.95.0.9/24", "interface": 1}]}
        err = bw.run("ADD", dict(base, egressRate=1000, egressBurst=1000, prevResult=prev), host_ns=host,
                     netns=ns_path(ctr), container_id="bw-9").error()
        check(err["msg"].startswith("bandwidth: "), err["msg"])
        check("bwp" not in sh("ip", "-n", host, "-br", "link").stdout, "no IFB left")
        eq(bw.run("DEL", base, host_ns=host, netns="", container_id="bw-9").rc, 0)
        # runtimeConfig applies only without top-level keys.
        plain = dict(base, runtimeConfig={"bandwidth": {"ingressRate": 1000}})
        eq(bw.run("ADD", plain, host_ns=host, netns=ns_path(ctr)).error()["msg"], "if rate is set, burst must also be set")
        both = dict(base, ingressRate=0, runtimeConfig={"bandwidth": {"ingressRate": 1000}})
        eq(bw.run("ADD", both, host_ns=host, netns=ns_path(ctr)).rc, 0, "top-level keys win, all zero: passed through")


@test
def tbf_state_is_the_go_plugins_up_to_64_bit_rates():
    """bandwidth: the TBFs (veth and IFB) are the Go plugin's, byte for byte in tc's view, at 1 Mbit/s, at
    40 Gbit/s (above a 32-bit byte rate) and at 8 bit/s with a 4 GB burst (the bucket's microseconds wrap past 2^32, as
    in Go); CHECK passes on them; DEL removes the IFB (the veth's goes with the veth)"""
    if not REF:
        raise AssertionError("Debian's containernetworking-plugins is not installed")
    for rate, burst, shown in ((10**6, 8 * 10**6, "rate 1Mbit"), (40 * 10**9, 8 * 10**6, "rate 40Gbit"),
                               (8, 34359738000, "rate 8bit")):
        seen = {}
        for impl, plugin_dir in (("go", REF), ("ours", BIN)):
            with netns("bh") as host, netns("bc") as ctr:
                sh("ip", "-n", host, "link", "add", "bwtbf0", "type", "veth", "peer", "name", "eth1", "netns", ctr)
                conf = {"cniVersion": "1.0.0", "name": "bw-tbf", "type": "bandwidth", "ingressRate": rate,
                        "ingressBurst": burst, "egressRate": rate, "egressBurst": burst,
                        "prevResult": {"cniVersion": "1.0.0", "interfaces": [{"name": "bwtbf0"}, {"name": "eth1", "sandbox": ns_path(ctr)}],
                                       "ips": [{"address": "10.95.0.10/24", "interface": 1}]}}
                bw = Plugin(os.path.join(plugin_dir, "bandwidth"))
                bw.run("ADD", conf, host_ns=host, netns=ns_path(ctr), ifname="eth1", container_id="bw-tbf").ok()
                seen[impl] = sh("tc", "-n", host, "-d", "qdisc", "show").stdout
                ours = Plugin(os.path.join(BIN, "bandwidth"))
                ours.run("CHECK", conf, host_ns=host, netns=ns_path(ctr), ifname="eth1", container_id="bw-tbf").ok()
                if impl == "ours":  # a root qdisc that is not a TBF (the built-in noqueue) is reported
                    sh("tc", "-n", host, "qdisc", "del", "dev", "bwtbf0", "root")
                    err = ours.run("CHECK", conf, host_ns=host, netns=ns_path(ctr), ifname="eth1", container_id="bw-tbf")
                    eq(err.error()["msg"], "bandwidth: bwtbf0 has no tbf qdisc")
                bw.run("DEL", conf, host_ns=host, netns=ns_path(ctr), ifname="eth1", container_id="bw-tbf").ok()
                check("bwp" not in sh("ip", "-n", host, "-br", "link").stdout, "DEL removed the IFB")
        check(shown in seen["ours"], seen["ours"])
        eq(seen["ours"], seen["go"], f"tc -d qdisc show at {rate} bit/s")


if __name__ == "__main__":
    run_all(cleanup=[BIN])
