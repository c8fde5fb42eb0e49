#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""vlan: an 802.1Q child of the master with tagged traffic to a peer, CHECK, DEL, errors and
rollback, the same state as the Go vlan. These tests need kernel features this machine lacks, so
they are marked for the test VM (tests/vm) and run only there. Each builds its own namespaces in
the guest."""
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import BIN, REF, Plugin, addrs, check, eq, link, link_details, netns, ns_path, run_all, sh, test  # noqa: E402


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


@test(vm=True)
def vlan_tagged_traffic_check_del():
    """vlan: the 802.1Q child reaches a peer on VLAN 10; CHECK; DEL, also after the master is gone"""
    with VlanWorld() as w:
        c = vlan_conf(w.data)
        res = w.run("ADD", c).ok().json()
        eq(res["ips"][0]["address"], "10.79.0.2/24")
        check("vlan protocol 802.1Q id 10" in "\n".join(link_details(w.ctr, "eth0")))
        sh("ip", "netns", "exec", w.ctr, "ping", "-c1", "-W3", "10.79.0.100")
        w.run("CHECK", dict(c, prevResult=res)).ok()
        sh("ip", "-n", w.host, "link", "del", "up0")  # the master goes away (and takes the vlan with it)
        w.run("DEL", c).ok()  # the reference fails here: it looks up the master's MTU first
        w.run("DEL", c).ok()
        eq([f for f in os.listdir(os.path.join(w.data, "vlan-test")) if f.startswith("10.")], [])


@test(vm=True)
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


@test(vm=True)
def vlan_same_state_as_go():
    """vlan: Debian's Go vlan and cni-all give the same result and link"""
    if not REF:
        raise AssertionError("Debian's containernetworking-plugins is not installed")
    seen = {}
    for impl, plugin_dir in [("go", REF), ("ours", BIN)]:
        with VlanWorld() as w:
            out = w.run("ADD", vlan_conf(w.data, mtu=1400), plugin_dir=plugin_dir).ok()
            seen[impl] = (out.out.replace(ns_path(w.ctr), "NETNS"), link_details(w.ctr, "eth0"),
                          [a for a in addrs(w.ctr, "eth0") if not a.startswith("fe80:")])
            w.run("DEL", vlan_conf(w.data, mtu=1400), plugin_dir=BIN if impl == "go" else REF).ok()
            check(link(w.ctr, "eth0") is None)
    eq(re.sub(r'"mac": "[^"]*"', "MAC", seen["ours"][0]), re.sub(r'"mac": "[^"]*"', "MAC", seen["go"][0]))
    eq(seen["ours"][1:], seen["go"][1:])


if __name__ == "__main__":
    run_all(cleanup=[BIN])
