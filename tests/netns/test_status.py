#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Root tests of STATUS on every applet (CNI spec 1.1.0): in a fresh namespace each answers
success where it can work, and code 50 with the reason where it cannot (the dhcp daemon down,
flannel's subnet.env or vpc-eni's node file missing, cluster-ipam's etcd unreachable); portmap, and bridge and ptp with ipMasq,
answer code 50 where no firewall backend works (run in a user namespace of their own, where
neither nf_tables nor the legacy tables answer), and success there without ipMasq. Also vrf's GC,
which has nothing on the node to collect."""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import BIN, Plugin, check, eq, netns, run_all, sh, test  # noqa: E402

NOT_AVAILABLE = 50


def configs(data):
    """Each applet's minimal STATUS config, and the code it answers in a fresh namespace."""
    ipam = {"type": "host-local", "subnet": "10.66.0.0/24", "dataDir": data}
    return {
        "bridge": ({"bridge": "cnist0", "ipam": ipam}, 0),
        "ptp": ({"ipam": ipam}, 0),
        "macvlan": ({"master": "lo", "ipam": ipam}, 0),
        "ipvlan": ({"master": "lo", "ipam": ipam}, 0),
        "vlan": ({"master": "lo", "vlanId": 7, "ipam": ipam}, 0),
        "host-device": ({"device": "lo", "ipam": ipam}, 0),
        "dummy": ({"ipam": ipam}, 0),
        "tap": ({"ipam": ipam}, 0),
        "loopback": ({}, 0),
        "host-local": ({"ipam": ipam}, 0),
        "static": ({"ipam": {"type": "static"}}, 0),
        "dhcp": ({"ipam": {"type": "dhcp"}}, NOT_AVAILABLE),
        "portmap": ({}, 0),
        "bandwidth": ({}, 0),
        "firewall": ({}, 0),
        "tuning": ({"dataDir": data}, 0),
        "sbr": ({}, 0),
        "vrf": ({"vrfname": "vrf0"}, 0),
        "flannel": ({"subnetFile": os.path.join(data, "no-subnet.env")}, NOT_AVAILABLE),
        "vpc-eni": ({"nodeFile": os.path.join(data, "no-node.json"),
                     "ipam": {"type": "vpc-eni-ipam", "nodeFile": os.path.join(data, "no-node.json")}}, NOT_AVAILABLE),
        "vpc-eni-ipam": ({"ipam": {"type": "vpc-eni-ipam", "nodeFile": os.path.join(data, "no-node.json")}}, NOT_AVAILABLE),
        "cluster-ipam": ({"ipam": {"type": "cluster-ipam", "subnet": "10.66.0.0/24",
                                   "etcd": {"endpoints": ["http://127.0.0.1:1"], "dialTimeout": "2s"}}}, NOT_AVAILABLE),
    }


def status(applet, keys, host, wrap=()):
    conf = dict({"cniVersion": "1.1.0", "name": "status-test", "type": applet}, **keys)
    return Plugin(os.path.join(BIN, applet)).run("STATUS", conf, host_ns=host, wrap=wrap,
                                                 raw_env={"CNI_COMMAND": "STATUS", "CNI_PATH": BIN})


@test
def every_applet_answers_status():
    """STATUS: every applet answers success where it can work, code 50 with the reason where it cannot"""
    data = tempfile.mkdtemp()
    try:
        table = configs(data)
        applets = sorted(f for f in os.listdir(BIN) if f != "cni-all")
        eq(sorted(table), applets, "a STATUS case for every applet")
        with netns("st") as host:
            for applet, (keys, code) in table.items():
                out = status(applet, keys, host)
                if code == 0:
                    check(out.rc == 0, f"{applet}: {out}")
                else:
                    eq(out.error()["code"], code, f"{applet}: {out}")
                    check(out.error()["msg"], f"{applet} says why")
    finally:
        shutil.rmtree(data)


@test
def firewall_users_answer_50_without_a_usable_backend():
    """STATUS: portmap, and bridge and ptp with ipMasq, answer code 50 where neither iptables nor nf_tables works; without ipMasq, success"""
    data = tempfile.mkdtemp()
    ipam = {"type": "host-local", "subnet": "10.66.0.0/24", "dataDir": data}
    no_firewall = ("unshare", "--user")  # no capability over the namespace: no table answers
    try:
        with netns("st") as host:
            for applet, keys in (("portmap", {}), ("portmap", {"backend": "nftables"}), ("portmap", {"backend": "iptables"}),
                                 ("bridge", {"ipMasq": True}), ("ptp", {"ipMasq": True, "ipam": ipam}),
                                 ("ptp", {"ipMasq": True, "ipMasqBackend": "nftables", "ipam": ipam})):
                status(applet, keys, host).ok()
                err = status(applet, keys, host, wrap=no_firewall).error()
                eq(err["code"], NOT_AVAILABLE, f"{applet} {keys}")
                check(err["msg"].startswith("no usable firewall backend: "), err)
            status("bridge", {"ipMasq": False}, host, wrap=no_firewall).ok()
    finally:
        shutil.rmtree(data)


@test
def vrf_gc_answers_success_and_touches_nothing():
    """vrf GC: success, and the node's links, rules and routes unchanged (its tables are in the containers, which GC cannot reach)"""
    with netns("st") as host:
        sh("ip", "-n", host, "link", "add", "vrf-st", "type", "bridge")  # a link GC must leave
        def state():
            return [sh("ip", "-n", host, *what).stdout for what in (("link",), ("rule",), ("route", "show", "table", "all"))]
        before = state()
        gc = {"cniVersion": "1.1.0", "name": "status-test", "type": "vrf", "vrfname": "vrf-st",
              "cni.dev/valid-attachments": []}
        Plugin(os.path.join(BIN, "vrf")).run("GC", gc, host_ns=host, raw_env={"CNI_COMMAND": "GC", "CNI_PATH": BIN}).ok()
        eq(state(), before)


if __name__ == "__main__":
    run_all(cleanup=[BIN])
