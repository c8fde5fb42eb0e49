#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tests that need kernel features this machine lacks, run inside the test VM by
tests/vm/run-in-vm.sh: the dummy, vlan, ipvlan and host-device applets and the bridge's
VLAN-filtering ports, the vrf applet, and the netlink layer's vrf links (kernel state, traffic, errors, rollback, idempotent DEL, and Debian's Go
plugins side by side), the link kinds through the kernel's module autoloading, and the fuzz
suite's variants for dummy, vlan, ipvlan and vrf. Each test builds its own namespaces in the
guest."""
import contextlib
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "netns"))
import test_fuzz  # noqa: E402
from cnitest import (Plugin, addrs, canonical_result, check, check_skipped_link_local, eq, install_dir, link, netns, ns_path, reference_dir, run_all,  # noqa: E402
                     sh, test)

CNI_ALL = os.environ["CNI_ALL"]
BIN = install_dir(CNI_ALL)
REF = reference_dir()


def dummy_conf(data, **extra):
    c = {"cniVersion": "1.0.0", "name": "dummy-test", "type": "dummy",
         "ipam": {"type": "host-local", "subnet": "10.78.0.0/24", "routes": [{"dst": "10.200.0.0/16"}],
                  "dataDir": data}}
    c.update(extra)
    return c


def dummy():
    return Plugin(os.path.join(BIN, "dummy"))


@test
def kernel_has_the_link_kinds():
    """the VM kernel autoloads dummy, 8021q, ipvlan and vrf through the module wrapper"""
    with netns("k") as ns:
        sh("ip", "-n", ns, "link", "add", "d0", "type", "dummy")
        sh("ip", "-n", ns, "link", "add", "link", "d0", "name", "d0.10", "type", "vlan", "id", "10")
        sh("ip", "-n", ns, "link", "add", "link", "d0", "name", "ipv0", "type", "ipvlan", "mode", "l2")
        sh("ip", "-n", ns, "link", "add", "vrf1", "type", "vrf", "table", "10")
        kinds = sh("ip", "-n", ns, "-d", "-o", "link").stdout
        for kind in ("dummy", "vlan protocol 802.1Q id 10", "ipvlan", "vrf table 10"):
            check(kind in kinds, kind)


@test
def netlink_layer_vm_cases():
    """the netlink layer's Catch2 cases tagged [.vm] (vrf), which need this kernel"""
    tests = os.path.join(os.path.dirname(CNI_ALL), "tests", "os-tests")
    r = sh(tests, "[.vm]", check_rc=False)
    check(r.returncode == 0, r.stdout[-3000:] + r.stderr[-1000:])
    check("All tests passed" in r.stdout, r.stdout[-1000:])


@test
def dummy_add_check_del():
    """dummy: ADD creates the link with the IPAM result; CHECK; DEL removes link and address"""
    data = tempfile.mkdtemp()
    try:
        with netns("host") as host, netns("ctr") as ctr:
            c = dummy_conf(data)
            res = dummy().run("ADD", c, host_ns=host, netns=ns_path(ctr), container_id="d-1").ok().json()
            eq(res["ips"], [{"address": "10.78.0.2/24", "gateway": "10.78.0.1", "interface": 0}])
            eq(res["interfaces"][0]["name"], "eth0")
            d = sh("ip", "-n", ctr, "-d", "link", "show", "eth0").stdout
            check("dummy" in d and "UP" in d, d)
            check("10.78.0.2/24" in sh("ip", "-n", ctr, "-br", "addr", "show", "eth0").stdout)
            check("10.200.0.0/16 via 10.78.0.1 dev eth0" in sh("ip", "-n", ctr, "route").stdout)
            dummy().run("CHECK", dict(c, prevResult=res), host_ns=host, netns=ns_path(ctr), container_id="d-1").ok()
            dummy().run("DEL", c, host_ns=host, netns=ns_path(ctr), container_id="d-1").ok()
            check(link(ctr, "eth0") is None)
            eq([f for f in os.listdir(os.path.join(data, "dummy-test")) if f.startswith("10.")], [])
            dummy().run("DEL", c, host_ns=host, netns=ns_path(ctr), container_id="d-1").ok()
            dummy().run("DEL", c, host_ns=host, netns="", container_id="d-1").ok()
    finally:
        shutil.rmtree(data)


@test
def dummy_errors_and_rollback():
    """dummy: IPAM is required; an IPAM failure removes the new link"""
    data = tempfile.mkdtemp()
    try:
        with netns("host") as host, netns("ctr") as ctr:
            c = dummy_conf(data)
            del c["ipam"]
            eq(dummy().run("ADD", c, host_ns=host, netns=ns_path(ctr)).error()["msg"],
               "dummy interface requires an IPAM configuration")
            bad = dummy_conf(data)
            bad["ipam"]["subnet"] = "10.78.0.0/31"
            err = dummy().run("ADD", bad, host_ns=host, netns=ns_path(ctr)).error()
            check("too small" in err["msg"], err)
            check(link(ctr, "eth0") is None, "the link of the failed ADD was removed")
    finally:
        shutil.rmtree(data)


def details(ns, dev):
    """The link's `ip -d` description, normalised. The operstate is left out: the kernel's
    linkwatch moves a new link from UNKNOWN to UP asynchronously, and a link on a dummy master
    stays UNKNOWN; the flags (UP, LOWER_UP) stay in."""
    text = sh("ip", "-n", ns, "-d", "link", "show", dev).stdout
    text = re.sub(r"^\d+: ", "", text)
    text = re.sub(r" state [A-Z]+ ", " ", text)
    text = re.sub(r"(@if)\d+", r"\1N", text)
    text = re.sub(r"link-netns \S+", "link-netns HOST", text)
    return re.sub(r"([0-9a-f]{2}:){5}[0-9a-f]{2}", "MAC", text).splitlines()[:3]


def vlan_conf(data, **extra):
    c = {"cniVersion": "0.4.0", "name": "vlan-test", "type": "vlan", "master": "up0", "vlanId": 10,
         "ipam": {"type": "host-local", "subnet": "10.79.0.0/24", "dataDir": data}}
    c.update(extra)
    return c


class VlanWorld:
    """A host namespace whose up0 is wired to a "remote" namespace answering on VLAN 10."""

    def __enter__(self):
        self.data = tempfile.mkdtemp()
        self.cms = [netns("host"), netns("ctr"), netns("remote")]
        self.host, self.ctr, self.remote = [cm.__enter__() for cm in self.cms]
        sh("ip", "-n", self.host, "link", "add", "up0", "type", "veth", "peer", "name", "down0", "netns", self.remote)
        sh("ip", "-n", self.host, "link", "set", "up0", "up")
        sh("ip", "-n", self.remote, "link", "set", "down0", "up")
        sh("ip", "-n", self.remote, "link", "add", "link", "down0", "name", "down0.10", "type", "vlan", "id", "10")
        sh("ip", "-n", self.remote, "addr", "add", "10.79.0.100/24", "dev", "down0.10")
        sh("ip", "-n", self.remote, "link", "set", "down0.10", "up")
        return self

    def __exit__(self, *exc):
        for cm in reversed(self.cms):
            cm.__exit__(None, None, None)
        shutil.rmtree(self.data)

    def run(self, cmd, conf, plugin_dir=BIN, cid="v-1", **kw):
        return Plugin(os.path.join(plugin_dir, conf["type"])).run(cmd, conf, host_ns=self.host, netns=ns_path(self.ctr),
                                                                  container_id=cid, **kw)


@test
def vlan_tagged_traffic_check_del():
    """vlan: the 802.1Q child reaches a peer on VLAN 10; CHECK; DEL, also after the master is gone"""
    with VlanWorld() as w:
        c = vlan_conf(w.data)
        res = w.run("ADD", c).ok().json()
        eq(res["ips"][0]["address"], "10.79.0.2/24")
        check("vlan protocol 802.1Q id 10" in "\n".join(details(w.ctr, "eth0")))
        sh("ip", "netns", "exec", w.ctr, "ping", "-c1", "-W3", "10.79.0.100")
        w.run("CHECK", dict(c, prevResult=res)).ok()
        sh("ip", "-n", w.host, "link", "del", "up0")  # the master goes away (and takes the vlan with it)
        w.run("DEL", c).ok()  # the reference fails here: it looks up the master's MTU first
        w.run("DEL", c).ok()
        eq([f for f in os.listdir(os.path.join(w.data, "vlan-test")) if f.startswith("10.")], [])


@test
def vlan_errors_and_rollback():
    """vlan: master required, VLAN id and MTU bounds; a failed ADD removes its link"""
    with VlanWorld() as w:
        c = vlan_conf(w.data)
        del c["master"]
        check(w.run("ADD", c).error()["msg"].startswith('"master" field is required'))
        eq(w.run("ADD", vlan_conf(w.data, vlanId=5000)).error()["msg"], "invalid VLAN ID 5000 (must be between 0 and 4095 inclusive)")
        eq(w.run("ADD", vlan_conf(w.data, mtu=9000)).error()["msg"], "invalid MTU 9000, must be [0, master MTU(1500)]")
        bad = vlan_conf(w.data)
        bad["ipam"]["subnet"] = "10.79.0.0/31"
        check("failed to execute IPAM delegate" in w.run("ADD", bad).error()["msg"])
        eq([l for l in sh("ip", "-n", w.ctr, "-br", "link").stdout.splitlines() if not l.startswith("lo")], [])


@test
def vlan_same_state_as_go():
    """vlan: Debian's Go vlan and cni-all give the same result and link"""
    if not REF:
        raise AssertionError("Debian's containernetworking-plugins is not installed")
    seen = {}
    for impl, plugin_dir in [("go", REF), ("ours", BIN)]:
        with VlanWorld() as w:
            out = w.run("ADD", vlan_conf(w.data, mtu=1400), plugin_dir=plugin_dir).ok()
            seen[impl] = (out.out.replace(ns_path(w.ctr), "NETNS"), details(w.ctr, "eth0"),
                          [a for a in addrs(w.ctr, "eth0") if not a.startswith("fe80:")])
            w.run("DEL", vlan_conf(w.data, mtu=1400), plugin_dir=BIN if impl == "go" else REF).ok()
            check(link(w.ctr, "eth0") is None)
    eq(re.sub(r'"mac": "[^"]*"', "MAC", seen["ours"][0]), re.sub(r'"mac": "[^"]*"', "MAC", seen["go"][0]))
    eq(seen["ours"][1:], seen["go"][1:])


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


@test
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
            check("ipvlan  mode l2" in "\n".join(details(c1, "eth0")), details(c1, "eth0"))
            sh("ip", "netns", "exec", c1, "ping", "-c1", "-W3", "10.80.0.3")
            ipv.run("CHECK", dict(ipvlan_conf(data), prevResult=r1), host_ns=host, netns=ns_path(c1), container_id="i-1").ok()
            err = ipv.run("CHECK", dict(ipvlan_conf(data, mode="l3"), prevResult=r1), host_ns=host, netns=ns_path(c1),
                          container_id="i-1").error()
            eq(err["msg"], "container ipvlan mode l2 does not match expected value: l3")
            ipv.run("ADD", ipvlan_conf(data, mode="l3"), host_ns=host, netns=ns_path(c1), container_id="i-3", ifname="eth1").ok()
            check("ipvlan  mode l3" in "\n".join(details(c1, "eth1")))
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


@test
def ipvlan_same_state_as_go():
    """ipvlan: Debian's Go ipvlan and cni-all give the same result and link"""
    if not REF:
        raise AssertionError("Debian's containernetworking-plugins is not installed")
    seen = {}
    for impl, plugin_dir in [("go", REF), ("ours", BIN)]:
        with ipvlan_world() as (data, host, ctr):
            p = Plugin(os.path.join(plugin_dir, "ipvlan"))
            out = p.run("ADD", ipvlan_conf(data, mode="l3", mtu=1400), host_ns=host, netns=ns_path(ctr), container_id="g").ok()
            seen[impl] = (re.sub(r'"mac": "[^"]*"', "MAC", out.out.replace(ns_path(ctr), "NETNS")), details(ctr, "eth0"))
            Plugin(os.path.join(BIN if impl == "go" else REF, "ipvlan")).run(
                "DEL", ipvlan_conf(data, mode="l3", mtu=1400), host_ns=host, netns=ns_path(ctr), container_id="g").ok()
            check(link(ctr, "eth0") is None)
    eq(seen["ours"], seen["go"])


@test
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


def hostdev_conf(data, **extra):
    c = {"cniVersion": "0.4.0", "name": "hd-test", "type": "host-device", "device": "hostdev0",
         "ipam": {"type": "host-local", "subnet": "10.82.0.0/24", "dataDir": data}}
    c.update(extra)
    return c


class HostDevWorld:
    """A host namespace holding a dummy "hostdev0" to hand out, a container and a data dir."""

    def __enter__(self):
        self.data = tempfile.mkdtemp()
        self.cms = [netns("host"), netns("ctr")]
        self.host, self.ctr = [cm.__enter__() for cm in self.cms]
        sh("ip", "-n", self.host, "link", "add", "hostdev0", "address", "0a:00:00:00:00:61", "type", "dummy")
        sh("ip", "-n", self.host, "link", "set", "hostdev0", "up")
        return self

    def __exit__(self, *exc):
        for cm in reversed(self.cms):
            cm.__exit__(None, None, None)
        shutil.rmtree(self.data)

    def run(self, cmd, conf, plugin_dir=BIN, **kw):
        kw.setdefault("netns", ns_path(self.ctr))
        return Plugin(os.path.join(plugin_dir, "host-device")).run(cmd, conf, host_ns=self.host, container_id="hd", **kw)


@test
def host_device_moves_in_and_back():
    """host-device: the device moves in as eth0 (alias = its name) with IPs; DEL brings it back"""
    with HostDevWorld() as w:
        c = hostdev_conf(w.data)
        res = w.run("ADD", c).ok().json()
        eq(res["interfaces"], [{"name": "eth0", "mac": "0a:00:00:00:00:61", "sandbox": ns_path(w.ctr)}])
        check(link(w.host, "hostdev0") is None, "gone from the host")
        moved = link(w.ctr, "eth0")
        eq(moved["ifalias"], "hostdev0")
        check("UP" in moved["flags"])
        check("10.82.0.2/24" in sh("ip", "-n", w.ctr, "-br", "addr", "show", "eth0").stdout)
        w.run("CHECK", dict(c, prevResult=res)).ok()
        w.run("DEL", c).ok()
        check(link(w.ctr, "eth0") is None)
        back = link(w.host, "hostdev0")
        check(back is not None and back.get("ifalias", "") == "", back)
        w.run("DEL", c).ok()


@test
def host_device_by_mac_errors_and_rollback():
    """host-device: found by hwaddr; clear errors; a failed ADD returns the device; DEL with no netns frees IPAM"""
    with HostDevWorld() as w:
        c = hostdev_conf(w.data, hwaddr="0A:00:00:00:00:61")
        del c["device"]
        w.run("ADD", c).ok()
        w.run("DEL", c).ok()
        check(link(w.host, "hostdev0") is not None)
        bare = hostdev_conf(w.data)
        del bare["device"]
        eq(w.run("ADD", bare).error()["msg"], 'specify either "device", "hwaddr", "kernelpath" or "pciBusID"')
        eq(w.run("ADD", hostdev_conf(w.data, device=None, kernelpath="/tmp/x")).error()["msg"],
           'kernel device path "/tmp/x" must be absolute and begin with /sys/devices/')
        sh("ip", "-n", w.ctr, "link", "add", "eth0", "type", "dummy")
        err = w.run("ADD", hostdev_conf(w.data)).error()
        check("failed to move" in err["msg"], err)
        check(link(w.host, "hostdev0") is not None, "the device came back to the host")
        bad = hostdev_conf(w.data)
        bad["ipam"]["subnet"] = "10.82.0.0/31"
        check("too small" in w.run("ADD", bad, ifname="eth1").error()["msg"])
        check(link(w.host, "hostdev0") is not None, "back after an IPAM failure too")
        w.run("ADD", hostdev_conf(w.data), ifname="eth1").ok()
        w.run("DEL", hostdev_conf(w.data), ifname="eth1", netns="").ok()
        eq([f for f in os.listdir(os.path.join(w.data, "hd-test")) if f.startswith("10.")], [],
           "DEL without a netns still releases the address (the reference does not)")


def vbr_conf(data, **extra):
    c = {"cniVersion": "1.0.0", "name": "vbr-test", "type": "bridge", "bridge": "cnivbr0",
         "ipam": {"type": "host-local", "subnet": "10.83.0.0/24", "dataDir": data}}
    c.update(extra)
    return c


def port_vlans(ns, dev):
    """{vid: sorted flags} of a bridge port, ranges expanded (`bridge -j vlan show`)."""
    out = {}
    for entry in json.loads(sh("ip", "netns", "exec", ns, "bridge", "-j", "vlan", "show", "dev", dev).stdout or "[]"):
        for v in entry.get("vlans", []):
            for vid in range(v["vlan"], v.get("vlanEnd", v["vlan"]) + 1):
                out[vid] = sorted(v.get("flags", []))
    return out


def host_port(host, ctr, ifname="eth0"):
    """The host end of the container's veth."""
    info = link(ctr, ifname)
    if "link_index" not in info:  # the peer is in the same namespace: ip names it
        return info["link"]
    peer = info["link_index"]
    return next(l["ifname"] for l in json.loads(sh("ip", "-n", host, "-j", "link").stdout) if l["ifindex"] == peer)


class VbrWorld:
    """A host namespace and two container namespaces for the VLAN bridge tests."""

    def __enter__(self):
        self.data = tempfile.mkdtemp()
        self.cms = [netns("host"), netns("ctr"), netns("ctr")]
        self.host, self.c1, self.c2 = [cm.__enter__() for cm in self.cms]
        return self

    def __exit__(self, *exc):
        for cm in reversed(self.cms):
            cm.__exit__(None, None, None)
        shutil.rmtree(self.data)

    def run(self, cmd, conf, ctr, cid, plugin_dir=BIN, **kw):
        return Plugin(os.path.join(plugin_dir, "bridge")).run(cmd, conf, host_ns=self.host, netns=ns_path(ctr),
                                                              container_id=cid, **kw)


PVID = ["Egress Untagged", "PVID"]


@test
def bridge_vlan_access_trunk_and_gateway():
    """bridge: vlan makes a PVID-untagged port on a vlan_filtering bridge, the trunk adds tagged
    VIDs, the gateway sits on "<bridge>.<vlan>"; other VLANs are isolated; DEL keeps the gateway"""
    with VbrWorld() as w:
        c1 = vbr_conf(w.data, vlan=100, isGateway=True, vlanTrunk=[{"minID": 200, "maxID": 202}, {"id": 300}, {"id": 201}])
        res = w.run("ADD", c1, w.c1, "vb-1").ok().json()
        eq([i["name"] for i in res["interfaces"]][::2], ["cnivbr0", "eth0"])
        eq(res["interfaces"][3]["name"], "cnivbr0.100")
        check("vlan_filtering 1" in sh("ip", "-n", w.host, "-d", "link", "show", "cnivbr0").stdout)
        port1 = host_port(w.host, w.c1)
        eq(port_vlans(w.host, port1), {100: PVID, 200: [], 201: [], 202: [], 300: []})
        check("10.83.0.1/24" in sh("ip", "-n", w.host, "-br", "addr", "show", "cnivbr0.100").stdout)
        gw_port = host_port(w.host, w.host, "cnivbr0.100")
        eq(port_vlans(w.host, gw_port), {100: PVID})
        sh("ip", "netns", "exec", w.c1, "ping", "-c", "1", "-W", "2", "10.83.0.1")
        for dev in ("cnivbr0", "cnivbr0.100"):  # 3: NET_ADDR_SET, the MAC no longer follows the ports
            eq(sh("ip", "netns", "exec", w.host, "cat", f"/sys/class/net/{dev}/addr_assign_type").stdout.strip(), "3", dev)
        c2 = vbr_conf(w.data, vlan=101)
        w.run("ADD", c2, w.c2, "vb-2").ok()
        eq(port_vlans(w.host, host_port(w.host, w.c2)), {101: PVID})
        r = sh("ip", "netns", "exec", w.c2, "ping", "-c", "1", "-W", "1", "10.83.0.1", check_rc=False)
        check(r.returncode != 0, "VLAN 101 cannot reach the VLAN 100 gateway")
        w.run("CHECK", dict(c1, prevResult=res), w.c1, "vb-1").ok()
        w.run("ADD", vbr_conf(w.data, vlan=100, isGateway=True), w.c2, "vb-3", ifname="eth1").ok()
        eq(len([l for l in json.loads(sh("ip", "-n", w.host, "-j", "link").stdout) if l["ifname"] == "cnivbr0.100"]), 1)
        sh("ip", "netns", "exec", w.c2, "ping", "-c", "1", "-W", "2", "-I", "eth1", "10.83.0.1")
        for ctr, cid, ifname, conf in [(w.c1, "vb-1", "eth0", c1), (w.c2, "vb-2", "eth0", c2),
                                       (w.c2, "vb-3", "eth1", vbr_conf(w.data, vlan=100, isGateway=True))]:
            w.run("DEL", conf, ctr, cid, ifname=ifname).ok()
            check(link(ctr, ifname) is None)
        check(link(w.host, "cnivbr0.100") is not None, "the shared VLAN gateway stays, like the reference")


@test
def bridge_vlan_preserve_default_and_trunk_only():
    """bridge: preserveDefaultVlan keeps VID 1 beside the PVID; a trunk alone keeps VID 1 as PVID"""
    with VbrWorld() as w:
        w.run("ADD", vbr_conf(w.data, vlan=100, preserveDefaultVlan=True), w.c1, "vb-1").ok()
        eq(port_vlans(w.host, host_port(w.host, w.c1)), {1: ["Egress Untagged"], 100: PVID})
        w.run("ADD", vbr_conf(w.data, vlanTrunk=[{"id": 7}]), w.c2, "vb-2").ok()
        eq(port_vlans(w.host, host_port(w.host, w.c2)), {1: PVID, 7: []})


@test
def bridge_vlan_same_state_as_go():
    """bridge: Debian's Go bridge and cni-all leave the same port VLANs, gateway link and result
    (Debian ships v1.1.1, which predates vlanTrunk and always kept VID 1: v1.9 with
    preserveDefaultVlan is that behaviour)"""
    if not REF:
        raise AssertionError("Debian's containernetworking-plugins is not installed")
    seen = {}
    for impl, plugin_dir in [("go", REF), ("ours", BIN)]:
        with VbrWorld() as w:
            c = vbr_conf(w.data, vlan=100, isGateway=True, preserveDefaultVlan=True)
            out = w.run("ADD", c, w.c1, "vb-1", plugin_dir=plugin_dir).ok()
            text = re.sub(r"veth[0-9a-f]{8}", "VETH", out.out.replace(ns_path(w.c1), "NETNS"))
            seen[impl] = (canonical_result(re.sub(r'"mac": "[^"]*"', '"mac": "MAC"', text)),
                          port_vlans(w.host, host_port(w.host, w.c1)),
                          port_vlans(w.host, host_port(w.host, w.host, "cnivbr0.100")),
                          sh("ip", "-n", w.host, "-4", "-br", "addr", "show", "cnivbr0.100").stdout.split()[2:])
            w.run("DEL", c, w.c1, "vb-1", plugin_dir=BIN if impl == "go" else REF).ok()
    eq(seen["ours"], seen["go"])



def vrf_wire(host, ctr, ifname="eth0", v4="10.88.0.2", v6="fd00:88::2", peer="h0", default=True):
    """A veth (ifname in the container, peer in the host) with IPv4/IPv6 addresses and a default route."""
    sh("ip", "-n", host, "link", "add", peer, "type", "veth", "peer", "name", ifname, "netns", ctr)
    sh("ip", "-n", host, "addr", "add", v4.rsplit(".", 1)[0] + ".1/24", "dev", peer)
    sh("ip", "-n", host, "addr", "add", v6.rsplit(":", 1)[0] + ":1/64", "dev", peer, "nodad")
    sh("ip", "-n", host, "link", "set", peer, "up")
    sh("ip", "-n", ctr, "addr", "add", v4 + "/24", "dev", ifname)
    sh("ip", "-n", ctr, "addr", "add", v6 + "/64", "dev", ifname, "nodad")
    sh("ip", "-n", ctr, "link", "set", ifname, "up")
    if default:
        sh("ip", "-n", ctr, "route", "add", "default", "via", v4.rsplit(".", 1)[0] + ".1", "dev", ifname)


def vrf_conf(ctr, ifname="eth0", v4="10.88.0.2", **extra):
    c = {"cniVersion": "1.0.0", "name": "vrf-test", "type": "vrf", "vrfname": "blue",
         "prevResult": {"cniVersion": "1.0.0", "interfaces": [{"name": ifname, "sandbox": ns_path(ctr)}],
                        "ips": [{"address": v4 + "/24", "interface": 0}]}}
    c.update(extra)
    return c


def vrf(plugin_dir=None):
    return Plugin(os.path.join(plugin_dir or BIN, "vrf"))


@test
def vrf_enslaves_keeps_addresses_and_routes():
    """vrf: the VRF is created, the interface enslaved, IPv6 address and default route kept in its table; traffic"""
    with netns("host") as host, netns("ctr") as ctr:
        vrf_wire(host, ctr)
        res = vrf().run("ADD", vrf_conf(ctr, table=1001), host_ns=host, netns=ns_path(ctr), container_id="v-1").ok().json()
        eq(res["ips"][0]["address"], "10.88.0.2/24")
        check("vrf table 1001" in sh("ip", "-n", ctr, "-d", "link", "show", "blue").stdout)
        eq(link(ctr, "eth0")["master"], "blue")
        check("fd00:88::2/64" in sh("ip", "-n", ctr, "-br", "addr", "show", "eth0").stdout, "IPv6 address restored")
        routes = sh("ip", "-n", ctr, "route", "show", "vrf", "blue").stdout
        check("default via 10.88.0.1 dev eth0" in routes, routes)
        check("fd00:88::/64 dev eth0" in sh("ip", "-n", ctr, "-6", "route", "show", "vrf", "blue").stdout)
        sh("ip", "netns", "exec", ctr, "ping", "-c1", "-W3", "-I", "blue", "10.88.0.1")
        vrf().run("CHECK", vrf_conf(ctr, table=1001), host_ns=host, netns=ns_path(ctr), container_id="v-1").ok()
        eq(vrf().run("CHECK", vrf_conf(ctr, table=7), host_ns=host, netns=ns_path(ctr), container_id="v-1").error()["msg"],
           "VRF blue uses table 1001, not 7")
        vrf().run("DEL", vrf_conf(ctr), host_ns=host, netns=ns_path(ctr), container_id="v-1").ok()
        check(link(ctr, "blue") is None, "the VRF goes with its last interface")
        check("master" not in link(ctr, "eth0"))
        vrf().run("DEL", vrf_conf(ctr), host_ns=host, netns=ns_path(ctr), container_id="v-1").ok()
        vrf().run("DEL", vrf_conf(ctr), host_ns=host, netns="", container_id="v-1").ok()


@test
def vrf_shared_table_choice_errors_and_idempotent_del():
    """vrf: two interfaces share one VRF (table 1 picked), the VRF stays until the last DEL; errors roll back"""
    with netns("host") as host, netns("ctr") as ctr:
        vrf_wire(host, ctr)
        vrf_wire(host, ctr, ifname="eth1", v4="10.89.0.2", v6="fd00:89::2", peer="h1", default=False)
        vrf().run("ADD", vrf_conf(ctr), host_ns=host, netns=ns_path(ctr), container_id="v-1").ok()
        vrf().run("ADD", vrf_conf(ctr, "eth1", "10.89.0.2"), host_ns=host, netns=ns_path(ctr), container_id="v-2",
                  ifname="eth1").ok()
        check("vrf table 1 " in sh("ip", "-n", ctr, "-d", "link", "show", "blue").stdout + " ")
        eq(vrf().run("ADD", vrf_conf(ctr, table=5), host_ns=host, netns=ns_path(ctr), container_id="v-3").error()["msg"],
           "cmdAdd failed: VRF blue already exists with a different table 1, not 5")
        sh("ip", "-n", ctr, "link", "add", "dup0", "type", "dummy")
        sh("ip", "-n", ctr, "link", "add", "red", "type", "vrf", "table", "50")
        sh("ip", "-n", ctr, "link", "set", "dup0", "master", "red")
        eq(vrf().run("ADD", vrf_conf(ctr, "dup0", vrfname="green"), host_ns=host, netns=ns_path(ctr), container_id="v-4",
                     ifname="dup0").error()["msg"], "cmdAdd failed: interface dup0 has already a master set: red")
        check(link(ctr, "green") is None, "a VRF created for a failed ADD is removed")
        eq(vrf().run("ADD", vrf_conf(ctr, vrfname="dup0"), host_ns=host, netns=ns_path(ctr), container_id="v-5").error()["msg"],
           "cmdAdd failed: Netlink dup0 is not a VRF")
        c = vrf_conf(ctr)
        del c["prevResult"]
        eq(vrf().run("ADD", c, host_ns=host, netns=ns_path(ctr), container_id="v-6").error()["msg"],
           "missing prevResult from earlier plugin")
        vrf().run("DEL", vrf_conf(ctr), host_ns=host, netns=ns_path(ctr), container_id="v-1").ok()
        check(link(ctr, "blue") is not None, "eth1 still uses it")
        sh("ip", "-n", ctr, "link", "del", "eth1")
        vrf().run("DEL", vrf_conf(ctr, "eth1"), host_ns=host, netns=ns_path(ctr), container_id="v-2", ifname="eth1").ok()
        check(link(ctr, "blue") is None, "DEL with the interface gone still removes the empty VRF")


@test
def vrf_same_state_as_go():
    """vrf: Debian's Go vrf and cni-all give the same result, VRF and addresses, and each DELs the other's"""
    if not REF:
        raise AssertionError("Debian's containernetworking-plugins is not installed")
    seen = {}
    for add_dir, del_dir in [(REF, BIN), (BIN, REF)]:
        with netns("host") as host, netns("ctr") as ctr:
            vrf_wire(host, ctr)
            c = vrf_conf(ctr, cniVersion="0.4.0", table=1001)
            c["prevResult"]["cniVersion"] = "0.4.0"
            out = vrf(add_dir).run("ADD", c, host_ns=host, netns=ns_path(ctr), container_id="v-1").ok()
            # Debian's 1.1.1 predates moving the gateway routes into the VRF table (v1.9 does, as we
            # do), so the VRF's routes are compared without them.
            vrf_routes = [r for r in sh("ip", "-n", ctr, "route", "show", "vrf", "blue").stdout.splitlines() if " via " not in r]
            seen[add_dir] = (out.out.replace(ctr, "CTR"), vrf_routes,
                             [a for a in addrs(ctr, "eth0") if not a.startswith("fe80:")],
                             link(ctr, "eth0")["master"])
            vrf(del_dir).run("DEL", c, host_ns=host, netns=ns_path(ctr), container_id="v-1").ok()
            check(link(ctr, "blue") is None, f"ADD by {add_dir}, DEL by {del_dir}")
    eq(seen[BIN], seen[REF])


def chained_vrf(main_conf, route_dst, gateway, table):
    """`main_conf`'s plugin (host-local with a route to `route_dst`) then vrf: the interface is
    enslaved, table `table` holds the gateway's link route (when the plugin made one) and the
    route to `route_dst` through it, and traffic to an address of `route_dst` on the host flows
    from the VRF; DEL of both leaves the container without the VRF."""
    data = tempfile.mkdtemp()
    main_conf["ipam"]["dataDir"] = data
    plugin = Plugin(os.path.join(BIN, main_conf["type"]))
    try:
        with netns("host") as host, netns("ctr") as ctr:
            res = plugin.run("ADD", main_conf, host_ns=host, netns=ns_path(ctr), container_id="cv-1").ok().json()
            vconf = {"cniVersion": "1.0.0", "name": main_conf["name"], "type": "vrf", "vrfname": "blue", "table": table,
                     "prevResult": res}
            out = vrf().run("ADD", vconf, host_ns=host, netns=ns_path(ctr), container_id="cv-1").ok().json()
            eq(out["ips"], res["ips"])
            eq(link(ctr, "eth0")["master"], "blue")
            routes = sh("ip", "-n", ctr, "route", "show", "table", str(table)).stdout
            check(f"{route_dst} via {gateway} dev eth0" in routes, routes)
            main_routes = sh("ip", "-n", ctr, "route", "show").stdout
            check(route_dst not in main_routes, "the route left the main table: " + main_routes)
            target = route_dst.split("/")[0][:-1] + "1"
            sh("ip", "-n", host, "addr", "add", target + "/32", "dev", "lo")
            sh("ip", "-n", host, "link", "set", "lo", "up")
            sh("ip", "netns", "exec", ctr, "ping", "-c1", "-W3", "-I", "blue", target)
            vrf().run("CHECK", vconf, host_ns=host, netns=ns_path(ctr), container_id="cv-1").ok()
            vrf().run("DEL", vconf, host_ns=host, netns=ns_path(ctr), container_id="cv-1").ok()
            plugin.run("DEL", main_conf, host_ns=host, netns=ns_path(ctr), container_id="cv-1").ok()
            check(link(ctr, "blue") is None and link(ctr, "eth0") is None, "both DELs cleaned up")
            return routes
    finally:
        shutil.rmtree(data)


@test
def ptp_then_vrf_moves_the_gateway_link_route_first():
    """ptp then vrf: table T gets ptp's gateway link route before the route through it; traffic to the route's destination flows"""
    conf = {"cniVersion": "1.0.0", "name": "ptpvrf", "type": "ptp",
            "ipam": {"type": "host-local", "subnet": "10.87.0.0/24", "routes": [{"dst": "10.201.0.0/16"}]}}
    routes = chained_vrf(conf, "10.201.0.0/16", "10.87.0.1", 1002)
    check("10.87.0.1 dev eth0 scope link" in routes, routes)


@test
def bridge_then_vrf_moves_routes_through_the_gateway():
    """bridge then vrf: table T holds the subnet and the route through the bridge's gateway; traffic flows"""
    conf = {"cniVersion": "1.0.0", "name": "brvrf", "type": "bridge", "bridge": "cnivrfbr0", "isGateway": True,
            "ipam": {"type": "host-local", "subnet": "10.86.0.0/24", "routes": [{"dst": "10.202.0.0/16"}]}}
    routes = chained_vrf(conf, "10.202.0.0/16", "10.86.0.1", 1003)
    check("10.86.0.0/24 dev eth0" in routes, routes)


# The fuzz suite's hostile variants for the applets whose links only this kernel can make (on
# the host they stop at link creation); fewer per applet, as the VM is emulated.
for applet in ("dummy", "vlan", "ipvlan", "vrf"):
    test_fuzz.register(applet, BIN, sample=int(os.environ.get("CNI_FUZZ_SAMPLE", "12")))

if __name__ == "__main__":
    run_all(cleanup=[BIN])
