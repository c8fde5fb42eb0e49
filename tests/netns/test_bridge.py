#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Root tests of the bridge applet: two containers on one bridge reaching each other and the
gateway, port flags, MAC sources, gateway options, L2 mode, rollback of failed ADDs, idempotent
DEL, GC, refused keys, masqueraded traffic, and Debian's Go bridge giving the same state. Each
test builds its own namespaces and bridge; plugins run inside the test's host namespace."""
import json
import os
import re
import shutil
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import (BIN, LEGACY, REF, Plugin, addrs, canonical_result, check,  # noqa: E402
                     check_skipped_link_local, eq, iptables_save, link, link_local,
                     masquerade_source, netns, nft_masq_comments, ns_path, run_all, sh, test)

ENV = {"PATH": f"{LEGACY}:/usr/sbin:/usr/bin:/sbin:/bin"}


def conf(data, version="1.0.0", ipam=True, **extra):
    c = {"cniVersion": version, "name": "br-test", "type": "bridge", "bridge": "cnibr0"}
    if ipam:
        c["ipam"] = {"type": "host-local", "subnet": "10.74.0.0/24", "routes": [{"dst": "0.0.0.0/0"}], "dataDir": data}
    c.update(extra)
    return c


def ports_now(host):
    return sh("ip", "-n", host, "-br", "link", "show", "master", "cnibr0").stdout.strip()


def bridge(plugin_dir=BIN):
    return Plugin(os.path.join(plugin_dir, "bridge"))


def add(host, ctr, c, cid, plugin_dir=BIN, **kw):
    return bridge(plugin_dir).run("ADD", c, host_ns=host, netns=ns_path(ctr), container_id=cid, extra_env=ENV, **kw)


def delete(host, ctr, c, cid, plugin_dir=BIN, netns=None):
    return bridge(plugin_dir).run("DEL", c, host_ns=host, netns=ns_path(ctr) if netns is None else netns,
                                  container_id=cid, extra_env=ENV)


def details(ns, dev):
    return sh("ip", "-n", ns, "-d", "link", "show", dev).stdout


def nat_rules(ns):
    out = iptables_save(ns)
    return [line for line in out.splitlines() if line.startswith("-A") or line.startswith(":CNI")]


def reservations(data, net="br-test"):
    d = os.path.join(data, net)
    return sorted(f for f in os.listdir(d) if f[0].isdigit()) if os.path.isdir(d) else []


def nothing_left(e, host, ctr, released="the address was released"):
    """No reservation, bridge port, nat rule or container eth0 remains."""
    eq(reservations(e.data), [], released)
    eq(ports_now(host), "", "no port left on the bridge")
    eq(nat_rules(host), [])
    check(link(ctr, "eth0") is None, "no eth0 in the container")


class Env:
    """A host namespace, container namespaces and an IPAM data dir, all removed afterwards."""

    def __init__(self, containers=1):
        self.data = tempfile.mkdtemp()
        self.stack = [netns("host")] + [netns("ctr") for _ in range(containers)]
        self.names = [cm.__enter__() for cm in self.stack]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for cm in reversed(self.stack):
            cm.__exit__(None, None, None)
        shutil.rmtree(self.data)


@test
def two_containers_talk_through_the_bridge():
    """bridge: two containers reach each other and the gateway; CHECK; DEL removes all but the bridge"""
    with Env(2) as e:
        host, c1, c2 = e.names
        c = conf(e.data, isGateway=True, ipMasq=True, mtu=1400)
        r1 = add(host, c1, c, "br-1").ok().json()
        add(host, c2, c, "br-2").ok()
        eq([i["name"] for i in r1["interfaces"]][0::2], ["cnibr0", "eth0"])
        eq(r1["ips"], [{"address": "10.74.0.2/24", "gateway": "10.74.0.1", "interface": 2}])
        hostveth = r1["interfaces"][1]["name"]
        br = link(host, "cnibr0")
        eq(br["linkinfo"]["info_kind"] if "linkinfo" in br else "bridge", "bridge")
        eq(link(host, hostveth)["master"], "cnibr0")
        eq(link(c1, "eth0")["mtu"], 1400)
        # One tx and one rx queue per veth end (created so, without the kernel's cut-back).
        for ns, dev in ((host, hostveth), (c1, "eth0")):
            check("numtxqueues 1 numrxqueues 1 " in details(ns, dev), details(ns, dev))
        check("10.74.0.1/24" in sh("ip", "-n", host, "-br", "addr", "show", "cnibr0").stdout)
        eq(r1["interfaces"][0]["mac"], link(host, "cnibr0")["address"])
        # The first ADD, which added the gateway address, pinned the bridge's MAC (assign type
        # 3, set by userspace): it no longer follows the lowest port MAC as ports come and go.
        eq(sh("ip", "netns", "exec", host, "cat", "/sys/class/net/cnibr0/addr_assign_type").stdout.strip(), "3")
        sh("ip", "netns", "exec", c1, "ping", "-c1", "-W2", "10.74.0.3")
        sh("ip", "netns", "exec", c2, "ping", "-c1", "-W2", "10.74.0.1")
        bridge().run("CHECK", dict(c, prevResult=r1), host_ns=host, netns=ns_path(c1), container_id="br-1").ok()
        eq(len(nat_rules(host)), 8)
        delete(host, c1, c, "br-1").ok()
        eq(link(host, "cnibr0")["address"], r1["interfaces"][0]["mac"])
        delete(host, c2, c, "br-2").ok()
        check(link(c1, "eth0") is None and link(host, hostveth) is None)
        check(link(host, "cnibr0") is not None, "the bridge is shared and stays, as in the reference")
        eq(nat_rules(host), [])
        eq(reservations(e.data), [])
        delete(host, c1, c, "br-1").ok()
        delete(host, c1, c, "br-1", netns="").ok()


@test
def port_flags_promisc_and_mac_sources():
    """bridge: hairpin, isolation, promisc, and the container MAC from CNI_ARGS < args < runtimeConfig"""
    with Env(3) as e:
        host, c1, c2, c3 = e.names
        r = add(host, c1, conf(e.data, hairpinMode=True, portIsolation=True), "br-f",
                args="IgnoreUnknown=1;MAC=0a:00:00:00:00:01").ok().json()
        d = details(host, r["interfaces"][1]["name"])
        check("hairpin on" in d and "isolated on" in d, d)
        eq(link(c1, "eth0")["address"], "0a:00:00:00:00:01")
        add(host, c2, conf(e.data, args={"cni": {"mac": "0a:00:00:00:00:02"}}), "br-g",
            args="IgnoreUnknown=1;MAC=0a:00:00:00:00:01").ok()
        eq(link(c2, "eth0")["address"], "0a:00:00:00:00:02")
        add(host, c3, conf(e.data, promiscMode=True, args={"cni": {"mac": "0a:00:00:00:00:02"}},
                           runtimeConfig={"mac": "0a:00:00:00:00:03"}), "br-h").ok()
        eq(link(c3, "eth0")["address"], "0a:00:00:00:00:03")
        check("promiscuity 1" in details(host, "cnibr0"))
        err = add(host, c1, conf(e.data, hairpinMode=True, promiscMode=True), "br-x", ifname="eth1").error()
        eq(err["msg"], "cannot set hairpin mode and promiscuous mode at the same time.")
        err = add(host, c1, conf(e.data), "br-y", ifname="eth1", args="MAC=zz").error()
        eq(err["msg"], 'invalid MAC address "zz"')
        err = add(host, c1, conf(e.data, runtimeConfig={"mac": "zz"}, ipMasq=True, ipMasqBackend="pf"), "br-y",
                  ifname="eth1").error()
        eq(err["msg"], 'unknown ipmasq backend "pf"')
        # What only ADD uses does not fail the DEL a runtime sends after the refused ADD.
        for bad in (dict(hairpinMode=True, promiscMode=True), dict(runtimeConfig={"mac": "zz"}),
                    dict(ipMasq=True, ipMasqBackend="pf")):
            bridge().run("DEL", conf(e.data, **bad), host_ns=host, netns=ns_path(c1), container_id="br-y",
                         ifname="eth1", extra_env=ENV).ok()
        check(link(c1, "eth1") is None, "the refused ADDs made no veth")
        eq(len(ports_now(host).splitlines()), 3, "only the three containers' ports")
        eq(len(reservations(e.data)), 3, "and only their addresses")


@test
def default_gateway_and_force_address():
    """bridge: isDefaultGateway adds the default route; a foreign bridge address needs forceAddress"""
    with Env(2) as e:
        host, c1, c2 = e.names
        c = conf(e.data, isDefaultGateway=True)
        del c["ipam"]["routes"]
        add(host, c1, c, "br-d").ok()
        check("default via 10.74.0.1 dev eth0" in sh("ip", "-n", c1, "route").stdout)
        sh("ip", "-n", host, "addr", "flush", "dev", "cnibr0")
        sh("ip", "-n", host, "addr", "add", "10.74.0.254/24", "dev", "cnibr0")
        err = add(host, c2, conf(e.data, isGateway=True), "br-e").error()
        eq(err["msg"], '"cnibr0" already has an IP address different from 10.74.0.1/24')
        eq(reservations(e.data), ["10.74.0.2"], "the failed ADD released its address")
        add(host, c2, conf(e.data, isGateway=True, forceAddress=True), "br-e").ok()
        addrs = sh("ip", "-n", host, "-br", "-4", "addr", "show", "cnibr0").stdout
        check("10.74.0.1/24" in addrs and "10.74.0.254" not in addrs, addrs)


@test
def layer2_and_disabled_container_interface():
    """bridge without IPAM: the container end is up with no address; disableContainerInterface leaves it down"""
    with Env(2) as e:
        host, c1, c2 = e.names
        c = conf(e.data, ipam=False)
        r = add(host, c1, c, "br-l2").ok().json()
        check("UP" in link(c1, "eth0")["flags"])
        check("ips" not in r, r)
        bridge().run("CHECK", dict(c, prevResult=r), host_ns=host, netns=ns_path(c1), container_id="br-l2").ok()
        add(host, c2, conf(e.data, ipam=False, disableContainerInterface=True), "br-off").ok()
        check("UP" not in link(c2, "eth0")["flags"])
        err = add(host, c2, conf(e.data, disableContainerInterface=True), "br-z", ifname="eth1").error()
        eq(err["msg"], "cannot use IPAM when DisableContainerInterface flag is set")


@test
def failed_add_and_del_without_namespace_leave_nothing():
    """bridge: failed ADDs (names, VLANs, subnets) leave no veth or allocation; DEL without the netns cleans up"""
    with Env(1) as e:
        host, c1 = e.names
        sh("ip", "-n", c1, "link", "add", "eth0", "type", "veth", "peer", "name", "x0")
        err = add(host, c1, conf(e.data, ipMasq=True), "br-r").error()
        eq(err["msg"], "container veth name provided (eth0) already exists")
        eq(reservations(e.data), [])
        eq(nat_rules(host), [])
        bad = conf(e.data)
        bad["ipam"]["subnet"] = "10.74.0.0/31"
        err = add(host, c1, bad, "br-s", ifname="eth1").error()
        check("too small" in err["msg"], err)
        eq(ports_now(host), "", "no port left on the bridge")
        err = add(host, c1, dict(bad, macspoofchk=True), "br-t", ifname="eth2").error()
        check("too small" in err["msg"], err)
        eq(spoofcheck_chains(host), ["chain PREROUTING {"], "the failed ADD removed its chains (the shared base chain stays)")
        eq(add(host, c1, conf(e.data, vlan=5000), "br-t", ifname="eth2").error()["msg"],
           "invalid VLAN ID 5000 (must be between 0 and 4094)")
        for trunk, msg in [([{"minID": 10}], "minID and maxID should be configured simultaneously, maxID is missing"),
                           ([{"maxID": 10}], "minID and maxID should be configured simultaneously, minID is missing"),
                           ([{"minID": 0, "maxID": 10}], "incorrect trunk minID parameter: 0"),
                           ([{"minID": 10, "maxID": 4095}], "incorrect trunk maxID parameter: 4095"),
                           ([{"minID": 20, "maxID": 10}], "minID is greater than maxID in trunk parameter"),
                           ([{"id": 5000}], "incorrect trunk id parameter: 5000")]:
            eq(add(host, c1, conf(e.data, vlanTrunk=trunk), "br-t", ifname="eth2").error()["msg"], msg)
        eq(ports_now(host), "", "bad VLAN keys touch nothing")
        # Bridge names Go cannot create either: the same words (and no silent fallback to cni0).
        for name, msg in [("", 'failed to create bridge "": could not add "": LinkAttrs.Name cannot be empty'),
                          ("lo", 'failed to create bridge "lo": "lo" already exists but is not a bridge')]:
            eq(add(host, c1, conf(e.data, bridge=name), "br-n", ifname="eth2").error(), {"code": 999, "msg": msg})
            if REF:
                eq(add(host, c1, conf(e.data, bridge=name), "br-n", ifname="eth2", plugin_dir=REF).error()["msg"], msg)
        check(link(host, "cni0") is None, "no cni0")
        eq(reservations(e.data), [])
    with Env(0) as e:
        host = e.names[0]
        with netns("ctr") as gone:
            add(host, gone, conf(e.data, ipMasq=True), "br-g").ok()
        eq(len(nat_rules(host)), 4)
        bridge().run("DEL", conf(e.data, ipMasq=True), host_ns=host, netns=f"/run/netns/{gone}",
                     container_id="br-g", extra_env=ENV).ok()
        eq(nat_rules(host), [])
        eq(reservations(e.data), [])


@test
def ipam_result_without_an_address_is_released():
    """bridge: an external IPAM result whose address is left out is refused and released, and no port is left"""
    wrapper_dir = tempfile.mkdtemp()
    try:
        # An IPAM plugin that allocates through host-local but prints its first address without
        # "address" (Go's types print that as "<nil>").
        wrapper = os.path.join(wrapper_dir, "nil-ipam")
        with open(wrapper, "w") as f:
            f.write(f"""#!/bin/sh
out=$({BIN}/host-local) || {{ echo "$out"; exit 1; }}
[ "$CNI_COMMAND" = ADD ] || exit 0
echo "$out" | python3 -c 'import json, sys; r = json.load(sys.stdin); del r["ips"][0]["address"]; print(json.dumps(r))'
""")
        os.chmod(wrapper, 0o755)
        plugin = Plugin(os.path.join(BIN, "bridge"), cni_path=f"{wrapper_dir}:{BIN}")
        with Env(1) as e:
            host, c1 = e.names
            c = conf(e.data, ipMasq=True)
            c["ipam"]["type"] = "nil-ipam"
            err = plugin.run("ADD", c, host_ns=host, netns=ns_path(c1), container_id="br-nil", extra_env=ENV).error()
            eq(err, {"code": 999, "msg": "invalid CIDR address: <nil>"})
            nothing_left(e, host, c1, "the allocation was released")
    finally:
        shutil.rmtree(wrapper_dir)


@test
def ipam_route_without_dst_fails_add_only():
    """bridge + host-local: an IPAM route without dst fails the ADD before allocating; a DEL
    with it still removes an attachment and releases its address (as Go's host-local DEL does)"""
    with Env(2) as e:
        host, c1, c2 = e.names
        bad = conf(e.data, ipMasq=True)
        bad["ipam"]["routes"].append({"gw": "10.74.0.254"})
        err = add(host, c1, bad, "br-nodst").error()
        eq(err, {"code": 999, "msg": "invalid CIDR address: <nil>"})
        eq(reservations(e.data), [], "nothing allocated")
        check(link(c1, "eth0") is None, "no eth0 in the container")
        delete(host, c1, bad, "br-nodst").ok()

        add(host, c2, conf(e.data, ipMasq=True), "br-edited").ok()
        eq(len(reservations(e.data)), 1)
        delete(host, c2, bad, "br-edited").ok()
        nothing_left(e, host, c2)


@test
def go_ints_past_int32_fail_add_only():
    """bridge + host-local: integer keys are Go's 64-bit ints. One the kernel cannot take (the
    bridge MTU, an IPAM route's priority) fails the ADD with its value named and nothing left;
    a DEL with it succeeds and removes a live attachment, as Go's DEL does (its config decodes)"""
    with Env(2) as e:
        host, c1, c2 = e.names
        huge_mtu = conf(e.data, ipMasq=True, mtu=2**32 + 1500)  # Go's netlink would set 1500
        err = add(host, c1, huge_mtu, "br-int").error()
        eq(err, {"code": 999, "msg": 'failed to create bridge "cnibr0": could not add "cnibr0": invalid MTU 4294968796: '
                                     "out of the kernel's range [0, 4294967295]"})
        check(link(host, "cnibr0") is None, "no bridge made")
        eq(reservations(e.data), [], "nothing allocated")
        delete(host, c1, huge_mtu, "br-int").ok()

        big_metric = conf(e.data, ipMasq=True)
        big_metric["ipam"]["routes"] = [{"dst": "0.0.0.0/0", "priority": 2**32 + 10}]  # Go's would be metric 10
        err = add(host, c1, big_metric, "br-int").error()
        eq(err, {"code": 999, "msg": "route 0.0.0.0/0: priority 4294967306 is out of range [0, 4294967295]"})
        nothing_left(e, host, c1, "the allocation was released")

        # A non-positive priority is no metric, as Go's netlink leaves it out; any u32 is one.
        no_metric = conf(e.data, ipMasq=True)
        no_metric["ipam"]["routes"] = [{"dst": "0.0.0.0/0", "priority": -1}, {"dst": "10.99.0.0/16", "priority": 3 * 10**9}]
        add(host, c2, no_metric, "br-live").ok()
        eq(sh("ip", "-n", c2, "route", "show", "default").stdout.strip(), "default via 10.74.0.1 dev eth0")
        eq(sh("ip", "-n", c2, "route", "show", "10.99.0.0/16").stdout.strip(), "10.99.0.0/16 via 10.74.0.1 dev eth0 metric 3000000000")
        delete(host, c2, dict(huge_mtu, mtu=2**31), "br-live").ok()
        nothing_left(e, host, c2)


@test
def gc_removes_what_no_valid_attachment_owns():
    """bridge GC: ipMasq rules and IPAM reservations of attachments not in the valid list go, also
    those of an ID too long for the rules' 255-byte comments"""
    with Env(3) as e:
        host, c1, c2, c3 = e.names
        c = conf(e.data, version="1.1.0", ipMasq=True)
        long_id = "stale-long-" + "x" * 240
        add(host, c1, c, "keep-me").ok()
        add(host, c2, c, "stale-one").ok()
        add(host, c3, c, long_id).ok()
        check(any("stale-long-xxx" in r and long_id not in r for r in nat_rules(host)), "the long ID's comments are cut")
        gc = dict(c, **{"cni.dev/valid-attachments": [{"containerID": "keep-me", "ifname": "eth0"}]})
        bridge().run("GC", gc, host_ns=host, raw_env={"CNI_COMMAND": "GC", "CNI_PATH": BIN}).ok()
        rules = nat_rules(host)
        check(any("keep-me" in r for r in rules) and not any("stale-" in r for r in rules), rules)
        chains = [r.split()[0][1:] for r in rules if r.startswith(":CNI-")]
        eq(len(chains), 1, f"only keep-me's chain is left: {rules}")
        check(any(f"-j {chains[0]}" in r and "keep-me" in r for r in rules), rules)
        eq(reservations(e.data), ["10.74.0.2"])
        bridge().run("STATUS", c, host_ns=host, raw_env={"CNI_COMMAND": "STATUS", "CNI_PATH": BIN}).ok()


def spoofcheck_chains(ns):
    """The chain lines of `table bridge nat` in `ns` (none when the table is absent)."""
    out = sh("ip", "netns", "exec", ns, "nft", "list", "table", "bridge", "nat", check_rc=False).stdout
    return [line.strip() for line in out.splitlines() if line.strip().startswith("chain ")]


@test
def macspoofchk_drops_frames_from_other_macs():
    """bridge macspoofchk: the reference's bridge nat chains; a changed container MAC is cut off; CHECK; DEL; the Go bridge's chains"""
    with Env(2) as e:
        host, c1, c2 = e.names
        c = conf(e.data, isGateway=True, macspoofchk=True)
        res = add(host, c1, c, "spoof-1").ok().json()
        hostveth, mac = res["interfaces"][1]["name"], res["interfaces"][2]["mac"]
        listing = sh("ip", "netns", "exec", host, "nft", "list", "table", "bridge", "nat").stdout
        cm = 'comment "macspoofchk-spoof-1-eth0"'
        eq(listing,
           "table bridge nat {\n"
           "\tchain PREROUTING {\n"
           "\t\ttype filter hook prerouting priority dstnat; policy accept;\n"
           f"\t\tiifname \"{hostveth}\" jump cni-br-iface-spoof-1-eth0 {cm}\n"
           "\t}\n\n"
           "\tchain cni-br-iface-spoof-1-eth0 {\n"
           f"\t\tjump cni-br-iface-spoof-1-eth0-mac {cm}\n"
           "\t}\n\n"
           "\tchain cni-br-iface-spoof-1-eth0-mac {\n"
           f"\t\tether saddr {mac} return {cm}\n"
           f"\t\tdrop {cm}\n"
           "\t}\n"
           "}\n")
        sh("ip", "netns", "exec", c1, "ping", "-c1", "-W2", "10.74.0.1")
        bridge().run("CHECK", dict(c, prevResult=res), host_ns=host, netns=ns_path(c1), container_id="spoof-1",
                     extra_env=ENV).ok()
        sh("ip", "-n", c1, "neigh", "flush", "all")
        sh("ip", "-n", host, "neigh", "flush", "all")
        sh("ip", "-n", c1, "link", "set", "eth0", "address", "02:00:00:00:be:ef")
        check(sh("ip", "netns", "exec", c1, "ping", "-c1", "-W1", "10.74.0.1", check_rc=False).returncode != 0,
              "frames from another MAC are dropped")
        delete(host, c1, c, "spoof-1").ok()
        eq(spoofcheck_chains(host), ["chain PREROUTING {"], "DEL removed the attachment's chains (the base chain stays)")
        delete(host, c1, c, "spoof-1").ok()  # idempotent
        # The Go bridge writes the same chains; our DEL removes them, and the Go DEL removes ours.
        add(host, c2, c, "spoof-go", plugin_dir=REF).ok()
        eq(len(spoofcheck_chains(host)), 3)
        delete(host, c2, c, "spoof-go").ok()
        eq(spoofcheck_chains(host), ["chain PREROUTING {"])
        add(host, c2, c, "spoof-2").ok()
        delete(host, c2, c, "spoof-2", plugin_dir=REF).ok()
        eq(spoofcheck_chains(host), ["chain PREROUTING {"])


@test
def nftables_ipmasq_traffic_and_gc():
    """bridge ipMasqBackend nftables: masquerades, DEL and GC remove the rules of attachments that are gone"""
    with Env(2) as e:
        host, c1, c2 = e.names
        c = conf(e.data, version="1.1.0", isGateway=True, ipMasq=True, ipMasqBackend="nftables")
        add(host, c1, c, "keep-me").ok()
        add(host, c2, c, "stale-one").ok()
        eq(nat_rules(host), [], "no iptables rules with the nftables backend")
        eq(masquerade_source(host, c1, "10.199.9", 7779), "10.199.9.1")
        gc = dict(c, **{"cni.dev/valid-attachments": [{"containerID": "keep-me", "ifname": "eth0"}]})
        bridge().run("GC", gc, host_ns=host, raw_env={"CNI_COMMAND": "GC", "CNI_PATH": BIN}).ok()
        comments = nft_masq_comments(host)
        eq(len(comments), 1, "the stale attachment's rule went")
        check(comments[0].endswith("if: eth0, id: keep-me"), comments)
        delete(host, c1, c, "keep-me").ok()
        eq(nft_masq_comments(host), [])


@test
def masqueraded_traffic():
    """bridge ipMasq: a container reaches another namespace with the host's address as source"""
    with Env(1) as e:
        host, c1 = e.names
        add(host, c1, conf(e.data, isGateway=True, ipMasq=True), "br-m").ok()
        eq(masquerade_source(host, c1, "10.199.8", 7778), "10.199.8.1")


def normalise(text, names):
    for real, alias in names.items():
        text = text.replace(real, alias)
    text = re.sub(r"fe80::[0-9a-f:]+/64", "LINKLOCAL", text)
    return re.sub(r"([0-9a-f]{2}:){5}[0-9a-f]{2}", "MAC", text)


def gateway_on(host):
    return "10.74.0.1/24" in sh("ip", "-n", host, "-br", "addr", "show", "cnibr0", check_rc=False).stdout


@test
def remove_when_unused_takes_the_bridge_with_its_last_port():
    """bridge removeWhenUnused (beyond the reference): the last attachment's DEL removes the bridge an ADD made, its address and route; not while another port (even not ours) is on it, nor without the key, nor a bridge the node made"""
    with Env(2) as e:
        host, c1, c2 = e.names
        keep = conf(e.data, isGateway=True)
        add(host, c1, keep, "br-1").ok()
        delete(host, c1, keep, "br-1").ok()
        check(link(host, "cnibr0") and gateway_on(host), "without the key the bridge stays, as the reference's")
        left = os.listdir("/run/cni/bridge") if os.path.isdir("/run/cni/bridge") else []
        check(not any(f.startswith("cnibr0.") for f in left), f"without the key no file in root's folder: {left}")
        sh("ip", "-n", host, "link", "del", "cnibr0")
        c = conf(e.data, isGateway=True, removeWhenUnused=True)
        add(host, c1, c, "br-1").ok()
        add(host, c2, c, "br-2").ok()
        sh("ip", "-n", host, "link", "add", "brop0", "type", "veth", "peer", "name", "brop1")
        sh("ip", "-n", host, "link", "set", "brop0", "master", "cnibr0")  # an operator's port
        delete(host, c1, c, "br-1").ok()
        check(gateway_on(host), "a port is left: the bridge stays")
        delete(host, c2, c, "br-2").ok()
        check(gateway_on(host), "the operator's port is left: the bridge stays")
        sh("ip", "-n", host, "link", "del", "brop0")
        delete(host, c2, c, "br-2").ok()  # a repeated DEL finds it unused now
        eq(link(host, "cnibr0"), None, "the bridge went with its last port")
        check("10.74.0.0/24" not in sh("ip", "-n", host, "route").stdout, "and its subnet's route")
        left = os.listdir("/run/cni/bridge")
        check("cnibr0.lock" in left and "cnibr0.made" not in left, f"only the lock file is left in root's folder: {left}")
        sh("ip", "-n", host, "link", "add", "cnibr0", "type", "bridge")  # the node's, not made by an ADD
        add(host, c1, c, "br-3").ok()
        delete(host, c1, c, "br-3").ok()
        check(link(host, "cnibr0"), "a bridge no ADD made stays")
        sh("ip", "-n", host, "link", "del", "cnibr0")
        add(host, c1, c, "br-4").ok()
        eq(open("/run/cni/bridge/cnibr0.made").read().split("\n")[1], "br-test", "the note names the network")
        delete(host, c1, dict(c, name="br-other"), "br-4").ok()
        eq(ports_now(host), "", "the port went")
        check(gateway_on(host), "another network's DEL leaves the bridge this network's ADD made")
        delete(host, c1, c, "br-4").ok()
        eq(link(host, "cnibr0"), None, "this network's DEL removes it")


@test
def remove_when_unused_keeps_the_bridge_of_a_pod_whose_peer_index_names_a_gateway():
    """bridge removeWhenUnused: a pod's port is never taken for a "<bridge>.<vlan>" gateway, even
    when the host link of its peer's ifindex (an index in the pod's namespace) is named so: the
    other pod's DEL leaves this pod's veth, the bridge and its address"""
    with Env(2) as e:
        host, c1, c2 = e.names
        c = conf(e.data, isGateway=True, removeWhenUnused=True)
        sh("ip", "-n", host, "link", "add", "cnibr0.7", "index", "2", "type", "veth", "peer", "name", "brdecoy0", "index", "9")
        r1 = add(host, c1, c, "br-1").ok().json()
        add(host, c2, c, "br-2").ok()
        eq(link(c1, "eth0")["ifindex"], 2, "the pod's eth0 has the index of the host's cnibr0.7")
        delete(host, c2, c, "br-2").ok()
        hostveth = r1["interfaces"][1]["name"]
        check(link(host, hostveth) is not None, "the other pod's host veth stays")
        eq(link(host, hostveth)["master"], "cnibr0", "still a port of the bridge")
        check(gateway_on(host), "the bridge and its address stay")
        sh("ip", "netns", "exec", c1, "ping", "-c1", "-W2", "10.74.0.1")
        delete(host, c1, c, "br-1").ok()
        eq(link(host, "cnibr0"), None, "the last pod's DEL removes the bridge")
        check(link(host, "cnibr0.7") is not None, "and leaves the host's own link, never a port")


def race_last_del_and_add(host, c1, c2, del_conf, add_conf, i):
    """Round i: c1's ADD with `del_conf`, then its DEL and c2's ADD with `add_conf` at once; c2
    ends as a port of the bridge, with its gateway, reachable; c2's attachment stays."""
    add(host, c1, del_conf, f"old-{i}").ok()
    outcomes = {}
    work = [threading.Thread(target=lambda: outcomes.update(dele=delete(host, c1, del_conf, f"old-{i}"))),
            threading.Thread(target=lambda: outcomes.update(add=add(host, c2, add_conf, f"new-{i}")))]
    for t in work:
        t.start()
    for t in work:
        t.join()
    outcomes["dele"].ok()
    res = outcomes["add"].ok().json()
    eq(link(host, res["interfaces"][1]["name"])["master"], "cnibr0", f"round {i}")
    check(gateway_on(host), f"round {i}: the gateway is on the bridge")
    sh("ip", "netns", "exec", c2, "ping", "-c1", "-W2", "10.74.0.1")


@test
def remove_when_unused_never_races_a_concurrent_add():
    """bridge removeWhenUnused: the last attachment's DEL and another's ADD at once: the ADD always ends on a whole bridge with its gateway, reachable"""
    with Env(2) as e:
        host, c1, c2 = e.names
        c = conf(e.data, isGateway=True, removeWhenUnused=True)
        for i in range(6):
            race_last_del_and_add(host, c1, c2, c, c, i)
            delete(host, c2, c, f"new-{i}").ok()
            eq(link(host, "cnibr0"), None, f"round {i}: gone with the last port")


@test
def add_without_remove_when_unused_never_races_a_del_with_it():
    """bridge: an ADD of a network without removeWhenUnused, sharing the bridge with one that has it, takes the bridge's lock while the bridge's .made note exists, so the other's last DEL never removes the bridge under it; it makes no file"""
    with Env(2) as e:
        host, c1, c2 = e.names
        c = conf(e.data, isGateway=True, removeWhenUnused=True)
        keep = dict(conf(e.data, isGateway=True), name="br-keep")
        for i in range(6):
            race_last_del_and_add(host, c1, c2, c, keep, i)
            left = set(os.listdir("/run/cni/bridge"))
            check(left <= {"cnibr0.lock", "cnibr0.made"}, f"round {i}: only files of the ADD with the key: {left}")
            delete(host, c2, keep, f"new-{i}").ok()
            sh("ip", "-n", host, "link", "del", "cnibr0")


@test
def bridge_whose_ports_all_left_takes_the_new_ports_mac():
    """bridge: a bridge left with MAC 00:00:00:00:00:00 by its last port gets the new port's MAC, pinned
    (the Go plugin fails there, on every ADD: "could not set bridge's mac: invalid argument")"""
    with Env(1) as e:
        host, c1 = e.names
        sh("ip", "-n", host, "link", "add", "cnibr0", "type", "bridge")
        sh("ip", "-n", host, "link", "add", "brgone0", "type", "veth", "peer", "name", "brgone1")
        sh("ip", "-n", host, "link", "set", "brgone0", "master", "cnibr0")
        sh("ip", "-n", host, "link", "del", "brgone0")
        eq(link(host, "cnibr0")["address"], "00:00:00:00:00:00", "the kernel zeroes a bridge without ports")
        r = add(host, c1, conf(e.data, isGateway=True), "br-z").ok().json()
        hostveth = r["interfaces"][1]["name"]
        eq(link(host, "cnibr0")["address"], link(host, hostveth)["address"])
        eq(r["interfaces"][0]["mac"], link(host, hostveth)["address"])
        eq(sh("ip", "netns", "exec", host, "cat", "/sys/class/net/cnibr0/addr_assign_type").stdout.strip(), "3")
        delete(host, c1, conf(e.data, isGateway=True), "br-z").ok()


@test
def skip_ipv6_link_local():
    """bridge skipIPv6LinkLocal (cni-all's own key): no IPv6 link-local address on an IPv4-only link, CHECK notices one; kept with an IPv6 result, without the key, and by Go's bridge; a non-bool refused"""
    with Env(4) as e:
        host, quiet, plain, dual, go = e.names
        c = conf(e.data, isGateway=True, skipIPv6LinkLocal=True)
        r = add(host, quiet, c, "br-q").ok().json()
        eq(link_local(quiet, "eth0", wait=0.5), [])
        check_skipped_link_local(lambda cmd, cc: bridge().run(cmd, cc, host_ns=host, netns=ns_path(quiet), container_id="br-q"),
                                 c, r, quiet, "10.74.0.2/24", ping="10.74.0.1")

        add(host, plain, conf(e.data, isGateway=True), "br-p").ok()
        check(link_local(plain, "eth0"), addrs(plain, "eth0"))

        dual_conf = conf(e.data, isGateway=True, skipIPv6LinkLocal=True)
        dual_conf["ipam"] = {"type": "host-local", "dataDir": e.data,
                             "ranges": [[{"subnet": "10.74.0.0/24"}], [{"subnet": "fd74:0:0:1::/64"}]]}
        rd = add(host, dual, dual_conf, "br-d").ok().json()
        eq([ip["address"] for ip in rd["ips"]], ["10.74.0.4/24", "fd74:0:0:1::2/64"])
        check("addrgenmode none" not in details(dual, "eth0"), details(dual, "eth0"))
        check(link_local(dual, "eth0"), addrs(dual, "eth0"))
        bridge().run("CHECK", dict(dual_conf, prevResult=rd), host_ns=host, netns=ns_path(dual), container_id="br-d").ok()

        if not REF:
            raise AssertionError("Debian's containernetworking-plugins is not installed")
        add(host, go, c, "br-go", plugin_dir=REF).ok()
        check(link_local(go, "eth0"), "the Go bridge ignores the key: " + str(addrs(go, "eth0")))

        err = add(host, go, conf(e.data, skipIPv6LinkLocal="yes"), "br-bad", ifname="eth1").error()
        check("skipIPv6LinkLocal" in err["msg"] and "bool" in err["msg"], err)
        check(link(go, "eth1") is None)

        for ctr, cid, cc in [(quiet, "br-q", c), (plain, "br-p", c), (dual, "br-d", dual_conf), (go, "br-go", c)]:
            delete(host, ctr, cc, cid).ok()
        eq(reservations(e.data), [])


@test
def same_state_as_the_go_bridge():
    """bridge: the Go plugin and cni-all give the same result, routes, bridge address, rules and sysctls"""
    if not REF:
        raise AssertionError("Debian's containernetworking-plugins is not installed")
    seen = {}
    for impl, plugin_dir in [("go", REF), ("ours", BIN)]:
        with Env(1) as e:
            host, c1 = e.names
            c = conf(e.data, version="0.4.0", isGateway=True, ipMasq=True, hairpinMode=True)
            out = add(host, c1, c, "br-diff", plugin_dir=plugin_dir).ok()
            hostveth = out.json()["interfaces"][1]["name"]
            names = {hostveth: "HOSTVETH", ns_path(c1): "NETNS"}
            seen[impl] = {
                "result": normalise(out.out, names),
                "container routes": sh("ip", "-n", c1, "route").stdout,
                "bridge addrs": normalise(sh("ip", "-n", host, "-br", "addr", "show", "cnibr0").stdout, names),
                "port": normalise(re.sub(r"^\d+: ", "", details(host, hostveth).splitlines()[0]), names),
                "container link": normalise(re.sub(r"^\d+: ", "", details(c1, "eth0").splitlines()[0]), names),
                "hairpin": "hairpin on" in details(host, hostveth),
                "bridge MAC pinned to its own, not the first port's":
                    (out.json()["interfaces"][0]["mac"] != link(host, hostveth)["address"],
                     sh("ip", "netns", "exec", host, "cat", "/sys/class/net/cnibr0/addr_assign_type").stdout),
                "nat": nat_rules(host),
                "sysctls (host veth and bridge accept_ra, container arp_notify and accept_dad)": [
                    sh("ip", "netns", "exec", ns, "cat", "/proc/sys/" + path).stdout.strip()
                    for ns, path in [(host, f"net/ipv6/conf/{hostveth}/accept_ra"), (host, "net/ipv6/conf/cnibr0/accept_ra"),
                                     (c1, "net/ipv4/conf/eth0/arp_notify"), (c1, "net/ipv6/conf/eth0/accept_dad")]],
            }
            other = BIN if impl == "go" else REF
            delete(host, c1, c, "br-diff", plugin_dir=other).ok()
            eq(nat_rules(host), [], f"{impl}'s rules removed by the other implementation")
            eq(reservations(e.data), [])
    for key in seen["go"]:
        eq(seen["ours"][key], seen["go"][key], key)
    eq(seen["ours"]["sysctls (host veth and bridge accept_ra, container arp_notify and accept_dad)"], ["0", "0", "1", "0"])


# The port VLAN keys need a VLAN-filtering bridge, which only the test VM's kernel has.

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


@test(vm=True)
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


@test(vm=True)
def remove_when_unused_takes_the_vlan_gateways_too():
    """bridge removeWhenUnused with vlan: the last attachment's DEL removes the bridge and its "<bridge>.<vlan>" gateways"""
    with VbrWorld() as w:
        c = vbr_conf(w.data, vlan=100, isGateway=True, removeWhenUnused=True)
        c2 = vbr_conf(w.data, vlan=101, isGateway=True, removeWhenUnused=True)
        w.run("ADD", c, w.c1, "vb-1").ok()
        w.run("ADD", c2, w.c2, "vb-2").ok()
        w.run("DEL", c, w.c1, "vb-1").ok()
        check(link(w.host, "cnivbr0") and link(w.host, "cnivbr0.100"), "vb-2's port is left: the bridge and gateways stay")
        w.run("DEL", c2, w.c2, "vb-2").ok()
        for gone in ("cnivbr0", "cnivbr0.100", "cnivbr0.101"):
            eq(link(w.host, gone), None, gone)
        eq([l["ifname"] for l in json.loads(sh("ip", "-n", w.host, "-j", "link").stdout)], ["lo"], "not even the gateways' peers")


@test(vm=True)
def bridge_vlan_preserve_default_and_trunk_only():
    """bridge: preserveDefaultVlan keeps VID 1 beside the PVID; a trunk alone keeps VID 1 as PVID"""
    with VbrWorld() as w:
        w.run("ADD", vbr_conf(w.data, vlan=100, preserveDefaultVlan=True), w.c1, "vb-1").ok()
        eq(port_vlans(w.host, host_port(w.host, w.c1)), {1: ["Egress Untagged"], 100: PVID})
        w.run("ADD", vbr_conf(w.data, vlanTrunk=[{"id": 7}]), w.c2, "vb-2").ok()
        eq(port_vlans(w.host, host_port(w.host, w.c2)), {1: PVID, 7: []})


@test(vm=True)
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


if __name__ == "__main__":
    run_all(cleanup=[BIN, LEGACY])
