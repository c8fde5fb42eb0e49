#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ipvlan: siblings in each mode, chaining after a main plugin, the same state as the Go ipvlan,
and skipIPv6LinkLocal (vlan's too). These tests need kernel features this machine lacks, so they
are marked for the test VM (tests/vm) and run only there. Each builds its own namespaces in the
guest."""
import contextlib
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import (BIN, REF, Plugin, check, check_skipped_link_local, eq,  # noqa: E402
                     link, link_details, netns, ns_path, run_all, sh, test)
from test_vlan import VlanWorld, vlan_conf  # noqa: E402


def ipvlan_conf(data, mode="l2", **extra):
    c = {"cniVersion": "0.4.0", "name": "ipvlan-test", "type": "ipvlan", "master": "m0", "mode": mode,
         "ipam": {"type": "host-local", "subnet": "10.80.0.0/24", "dataDir": data}}
    c.update(extra)
    return c


@contextlib.contextmanager
def ipvlan_world():
    """(data dir, host namespace with an up dummy "m0", container namespace), removed afterwards."""
    data = tempfile.mkdtemp()
    try:
        with netns("host") as host, netns("ctr") as ctr:
            sh("ip", "-n", host, "link", "add", "m0", "type", "dummy")
            sh("ip", "-n", host, "link", "set", "m0", "up")
            yield data, host, ctr
    finally:
        shutil.rmtree(data)


@test(vm=True)
def ipvlan_siblings_modes_and_chaining():
    """ipvlan: l2 siblings talk; l3 mode; a chained prevResult names the master and gives the IPs"""
    data = tempfile.mkdtemp()
    try:
        with netns("host") as host, netns("ctr") as c1, netns("ctr") as c2:
            sh("ip", "-n", host, "link", "add", "m0", "type", "dummy")
            sh("ip", "-n", host, "link", "set", "m0", "up")
            ipv = Plugin(os.path.join(BIN, "ipvlan"))
            r1 = ipv.run("ADD", ipvlan_conf(data), host_ns=host, netns=ns_path(c1), container_id="i-1").ok().json()
            ipv.run("ADD", ipvlan_conf(data), host_ns=host, netns=ns_path(c2), container_id="i-2").ok()
            check("ipvlan  mode l2" in "\n".join(link_details(c1, "eth0")), link_details(c1, "eth0"))
            sh("ip", "netns", "exec", c1, "ping", "-c1", "-W3", "10.80.0.3")
            ipv.run("CHECK", dict(ipvlan_conf(data), prevResult=r1), host_ns=host, netns=ns_path(c1), container_id="i-1").ok()
            err = ipv.run("CHECK", dict(ipvlan_conf(data, mode="l3"), prevResult=r1), host_ns=host, netns=ns_path(c1),
                          container_id="i-1").error()
            eq(err["msg"], "container ipvlan mode l2 does not match expected value: l3")
            ipv.run("ADD", ipvlan_conf(data, mode="l3"), host_ns=host, netns=ns_path(c1), container_id="i-3", ifname="eth1").ok()
            check("ipvlan  mode l3" in "\n".join(link_details(c1, "eth1")))
            chained = {"cniVersion": "0.4.0", "name": "ipvlan-test", "type": "ipvlan",
                       "prevResult": {"cniVersion": "0.4.0", "interfaces": [{"name": "m0"}],
                                      "ips": [{"version": "4", "address": "10.81.0.9/24"}]}}
            r = ipv.run("ADD", chained, host_ns=host, netns=ns_path(c2), container_id="i-4", ifname="eth1").ok().json()
            eq(r["ips"][0]["address"], "10.81.0.9/24")
            check("10.81.0.9/24" in sh("ip", "-n", c2, "-br", "addr", "show", "eth1").stdout)
            del chained["prevResult"]["interfaces"]
            chained["prevResult"]["interfaces"] = [{"name": "a"}, {"name": "b"}]
            eq(ipv.run("ADD", chained, host_ns=host, netns=ns_path(c2), container_id="i-5", ifname="eth2").error()["msg"],
               "chained master failure. PrevResult lacks a single named interface")
            for cid, ns, ifn in [("i-1", c1, "eth0"), ("i-2", c2, "eth0"), ("i-3", c1, "eth1")]:
                ipv.run("DEL", ipvlan_conf(data), host_ns=host, netns=ns_path(ns), container_id=cid, ifname=ifn).ok()
                check(link(ns, ifn) is None)
            eq([f for f in os.listdir(os.path.join(data, "ipvlan-test")) if f.startswith("10.")], [])
    finally:
        shutil.rmtree(data)


@test(vm=True)
def ipvlan_same_state_as_go():
    """ipvlan: Debian's Go ipvlan and cni-all give the same result and link"""
    if not REF:
        raise AssertionError("Debian's containernetworking-plugins is not installed")
    seen = {}
    for impl, plugin_dir in [("go", REF), ("ours", BIN)]:
        with ipvlan_world() as (data, host, ctr):
            p = Plugin(os.path.join(plugin_dir, "ipvlan"))
            out = p.run("ADD", ipvlan_conf(data, mode="l3", mtu=1400), host_ns=host, netns=ns_path(ctr), container_id="g").ok()
            seen[impl] = (re.sub(r'"mac": "[^"]*"', "MAC", out.out.replace(ns_path(ctr), "NETNS")), link_details(ctr, "eth0"))
            Plugin(os.path.join(BIN if impl == "go" else REF, "ipvlan")).run(
                "DEL", ipvlan_conf(data, mode="l3", mtu=1400), host_ns=host, netns=ns_path(ctr), container_id="g").ok()
            check(link(ctr, "eth0") is None)
    eq(seen["ours"], seen["go"])


@test(vm=True)
def vlan_and_ipvlan_skip_ipv6_link_local():
    """vlan and ipvlan skipIPv6LinkLocal (cni-all's own key): the IPv4-only child gets no IPv6 link-local address, still reaches its peer, CHECK notices one added"""
    with VlanWorld() as w:
        c = vlan_conf(w.data, skipIPv6LinkLocal=True)
        check_skipped_link_local(w.run, c, w.run("ADD", c).ok().json(), w.ctr, "10.79.0.2/24", ping="10.79.0.100")
        w.run("DEL", c).ok()
    with ipvlan_world() as (data, host, ctr):
        ipv = Plugin(os.path.join(BIN, "ipvlan"))
        c = ipvlan_conf(data, skipIPv6LinkLocal=True)
        res = ipv.run("ADD", c, host_ns=host, netns=ns_path(ctr), container_id="i-q").ok().json()
        check_skipped_link_local(lambda cmd, cc: ipv.run(cmd, cc, host_ns=host, netns=ns_path(ctr), container_id="i-q"),
                                 c, res, ctr, "10.80.0.2/24")
        ipv.run("DEL", c, host_ns=host, netns=ns_path(ctr), container_id="i-q").ok()
        check(link(ctr, "eth0") is None)


if __name__ == "__main__":
    run_all(cleanup=[BIN])
