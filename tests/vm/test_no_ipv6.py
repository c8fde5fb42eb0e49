#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tests on a kernel without IPv6, run inside the test VM booted with ipv6.disable=1 (how many
IPv4-only nodes are built) by tests/vm/run-in-vm.sh: bridge, ptp and macvlan ADD, CHECK and DEL
work there, with and without skipIPv6LinkLocal (a no-op then), as Debian's Go bridge does. Each
test builds its own namespaces in the guest."""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import BIN, REF, Plugin, addrs, check, eq, link, netns, ns_path, run_all, sh, test  # noqa: E402


def ipam(data, subnet):
    return {"type": "host-local", "subnet": subnet, "dataDir": data}


@test(vm=True)
def kernel_has_no_ipv6():
    """the guest kernel was booted without IPv6: no /proc/sys/net/ipv6, no inet6 socket"""
    check(not os.path.exists("/proc/sys/net/ipv6"))
    r = sh("ip", "-6", "addr", "show", check_rc=False)
    check(r.returncode != 0 or not r.stdout.strip(), r.stdout)


@test(vm=True)
def bridge_ptp_and_macvlan_without_ipv6():
    """bridge (cni-all with and without skipIPv6LinkLocal, and Go's), ptp and macvlan with the key: ADD, traffic, CHECK, DEL on a kernel without IPv6"""
    data = tempfile.mkdtemp()
    try:
        with netns("host") as host, netns("ctr") as quiet, netns("ctr") as plain, netns("ctr") as go, \
                netns("ctr") as p2p, netns("ctr") as mv:
            br = {"cniVersion": "1.0.0", "name": "br-v4", "type": "bridge", "bridge": "cnibr4", "isGateway": True,
                  "ipam": ipam(data, "10.84.0.0/24")}
            cases = [(quiet, BIN, dict(br, skipIPv6LinkLocal=True), "10.84.0.2/24"), (plain, BIN, br, "10.84.0.3/24")]
            if not REF:
                raise AssertionError("Debian's containernetworking-plugins is not installed")
            cases.append((go, REF, dict(br, skipIPv6LinkLocal=True), "10.84.0.4/24"))
            for ctr, plugin_dir, c, address in cases:
                p = Plugin(os.path.join(plugin_dir, "bridge"))
                r = p.run("ADD", c, host_ns=host, netns=ns_path(ctr), container_id="b-" + ctr).ok().json()
                eq(addrs(ctr, "eth0"), [address])
                sh("ip", "netns", "exec", ctr, "ping", "-c1", "-W3", "10.84.0.1")
                p.run("CHECK", dict(c, prevResult=r), host_ns=host, netns=ns_path(ctr), container_id="b-" + ctr).ok()

            pc = {"cniVersion": "1.0.0", "name": "ptp-v4", "type": "ptp", "skipIPv6LinkLocal": True,
                  "ipam": ipam(data, "10.85.0.0/24")}
            ptp = Plugin(os.path.join(BIN, "ptp"))
            r = ptp.run("ADD", pc, host_ns=host, netns=ns_path(p2p), container_id="p").ok().json()
            eq(addrs(p2p, "eth0"), ["10.85.0.2/24"])
            sh("ip", "netns", "exec", p2p, "ping", "-c1", "-W3", "10.85.0.1")
            ptp.run("CHECK", dict(pc, prevResult=r), host_ns=host, netns=ns_path(p2p), container_id="p").ok()

            sh("ip", "-n", host, "link", "add", "parent0", "type", "veth", "peer", "name", "parent1")
            sh("ip", "-n", host, "link", "set", "parent0", "up")
            mc = {"cniVersion": "1.0.0", "name": "mv-v4", "type": "macvlan", "master": "parent0",
                  "skipIPv6LinkLocal": True, "ipam": ipam(data, "10.86.0.0/24")}
            macvlan = Plugin(os.path.join(BIN, "macvlan"))
            r = macvlan.run("ADD", mc, host_ns=host, netns=ns_path(mv), container_id="m").ok().json()
            eq(addrs(mv, "eth0"), ["10.86.0.2/24"])
            macvlan.run("CHECK", dict(mc, prevResult=r), host_ns=host, netns=ns_path(mv), container_id="m").ok()

            for ctr, plugin_dir, c, _ in cases:
                Plugin(os.path.join(BIN, "bridge")).run("DEL", c, host_ns=host, netns=ns_path(ctr),
                                                        container_id="b-" + ctr).ok()
                check(link(ctr, "eth0") is None)
            ptp.run("DEL", pc, host_ns=host, netns=ns_path(p2p), container_id="p").ok()
            macvlan.run("DEL", mc, host_ns=host, netns=ns_path(mv), container_id="m").ok()
            for ctr in (p2p, mv):
                check(link(ctr, "eth0") is None)
            for net in ("br-v4", "ptp-v4", "mv-v4"):
                eq([f for f in os.listdir(os.path.join(data, net)) if f.startswith("10.")], [], net)
    finally:
        shutil.rmtree(data)


if __name__ == "__main__":
    run_all(cleanup=[BIN])
