#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Differential e2e: each conflist below runs, the way libcni runs it (ADD, CHECK, DEL), once
with Debian's Go plugins (/usr/lib/cni) and once with ours, each time in fresh namespaces. The
result JSON and a normalised snapshot of the kernel (links and their flags, addresses, routes,
rules, sysctls, iptables tables of both variants) and of the host-local files must be the same,
and DEL must leave no more behind than the reference's DEL does. Then the two are mixed: ADD by
one implementation, CHECK and DEL by the other; the CHECK must pass (bar the Go bugs below) and
again nothing more may be left behind (a node can switch implementations with pods running).
The cases with iptables rules run twice: with an `iptables` that is iptables-legacy, and on a
node whose `iptables` is iptables-nft, where both write nf_tables. Only this
machine's kernel features are used; VLAN, ipvlan and dummy cases live in tests/vm."""
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import BIN, LEGACY, REF, canonical_result, check, eq, netns, ns_path, run_all, sh, test  # noqa: E402
from conflist import Names, diff, run_add, run_check, run_del, snapshot  # noqa: E402

# The Go plugins exec `iptables`; this PATH makes that iptables-legacy, where libiptc writes.
ENV = {"PATH": f"{LEGACY}:/usr/sbin:/usr/bin:/sbin:/bin"}
# Debian 12's own `iptables` is iptables-nft: there the Go plugins write nf_tables.
NFT_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}


def host_local(data, *ranges, routes=None):
    ipam = {"type": "host-local", "ranges": [[{"subnet": r}] for r in ranges], "dataDir": data}
    if routes:
        ipam["routes"] = [{"dst": d} for d in routes]
    return ipam


def no_setup(host):
    pass


def uplink(name):
    """A veth in the host namespace for macvlan to hang off, or for host-device to move."""
    def setup(host):
        sh("ip", "-n", host, "link", "add", name, "type", "veth", "peer", "name", name + "p")
        sh("ip", "-n", host, "link", "set", name, "up")
    return setup


CASES = {
    "bridge, gateway, ipMasq, hairpin, dual stack, MTU": (no_setup, lambda data: {
        "cniVersion": "1.0.0", "name": "diff-br", "plugins": [{
            "type": "bridge", "bridge": "cnidbr0", "isGateway": True, "ipMasq": True, "hairpinMode": True, "mtu": 1400,
            "ipam": host_local(data, "10.81.0.0/24", "fd00:81::/64", routes=["0.0.0.0/0", "::/0"])}]}),
    "bridge, default gateway, promisc, 0.4.0": (no_setup, lambda data: {
        "cniVersion": "0.4.0", "name": "diff-brdg", "plugins": [{
            "type": "bridge", "bridge": "cnidbr1", "isDefaultGateway": True, "promiscMode": True,
            "ipam": host_local(data, "10.82.0.0/24")}]}),
    "bridge, L2 only": (no_setup, lambda data: {
        "cniVersion": "1.0.0", "name": "diff-brl2", "plugins": [{"type": "bridge", "bridge": "cnidbr2"}]}),
    "ptp, ipMasq, dual stack, MTU": (no_setup, lambda data: {
        "cniVersion": "1.0.0", "name": "diff-ptp", "plugins": [{
            "type": "ptp", "ipMasq": True, "mtu": 1300,
            "ipam": host_local(data, "10.83.0.0/24", "fd00:83::/64", routes=["0.0.0.0/0"])}]}),
    "macvlan, private mode, MTU": (uplink("cnidup0"), lambda data: {
        "cniVersion": "1.0.0", "name": "diff-mv", "plugins": [{
            "type": "macvlan", "master": "cnidup0", "mode": "private", "mtu": 1400,
            "ipam": host_local(data, "10.84.0.0/24")}]}),
    "bridge + tuning (sysctl, mac, mtu, promisc, allmulti)": (no_setup, lambda data: {
        "cniVersion": "1.0.0", "name": "diff-brtune", "plugins": [
            {"type": "bridge", "bridge": "cnidbr3", "isGateway": True, "ipam": host_local(data, "10.86.0.0/24")},
            {"type": "tuning", "dataDir": data + ".tuning", "mac": "0a:58:0a:56:00:99", "mtu": 1400, "promisc": True,
             "allmulti": True, "sysctl": {"net/ipv4/conf/eth0/arp_ignore": "2", "net.core.somaxconn": "321"}}]}),
    "bridge + firewall (same-bridge)": (no_setup, lambda data: {
        "cniVersion": "1.0.0", "name": "diff-brfw", "plugins": [
            {"type": "bridge", "bridge": "cnidbr4", "isGateway": True, "ipam": host_local(data, "10.88.0.0/24")},
            {"type": "firewall", "ingressPolicy": "same-bridge"}]}),
    "ptp + bandwidth (ingress and egress)": (no_setup, lambda data: {
        "cniVersion": "1.0.0", "name": "diff-ptpbw", "plugins": [
            {"type": "ptp", "ipam": host_local(data, "10.89.0.0/24")},
            {"type": "bandwidth", "ingressRate": 8000000, "ingressBurst": 800000, "egressRate": 16000000, "egressBurst": 1600000}]}),
    "bridge + portmap + tuning + bandwidth + firewall": (no_setup, lambda data: {
        "cniVersion": "1.0.0", "name": "diff-chain", "plugins": [
            {"type": "bridge", "bridge": "cnidbr5", "isGateway": True, "hairpinMode": True, "ipMasq": True,
             "ipam": host_local(data, "10.79.0.0/24", routes=["0.0.0.0/0"])},
            {"type": "portmap", "capabilities": {"portMappings": True},
             "runtimeConfig": {"portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"},
                                                {"hostPort": 5353, "containerPort": 53, "protocol": "udp"}]}},
            {"type": "tuning", "dataDir": data + ".tuning", "mtu": 1450, "sysctl": {"net.core.somaxconn": "512"}},
            {"type": "bandwidth", "ingressRate": 8000000, "ingressBurst": 800000, "egressRate": 8000000, "egressBurst": 800000},
            {"type": "firewall"}]}),
    "ptp + sbr, dual stack": (no_setup, lambda data: {
        "cniVersion": "1.0.0", "name": "diff-ptpsbr", "plugins": [
            {"type": "ptp", "ipam": host_local(data, "10.87.0.0/24", "fd00:87::/64", routes=["0.0.0.0/0", "::/0"])},
            {"type": "sbr"}]}),
    "host-device with IPAM, 0.3.1": (uplink("cnidhd0"), lambda data: {
        "cniVersion": "0.3.1", "name": "diff-hd", "plugins": [{
            "type": "host-device", "device": "cnidhd0", "ipam": host_local(data, "10.85.0.0/24")}]}),
}


# Reference bugs this test meets, by case: what the Go plugin's CHECK fails with (ours passes).
GO_CHECK_BUGS = {
    "bridge, L2 only": "no plugin name provided",  # it asks IPAM to CHECK even without IPAM
    "ptp + sbr, dual stack": "Failed to find Gateway",  # ptp looks for its routes in main, where sbr took them from
    # 1.1.1's portmap CHECK looks for an IPv6 chain of an IPv4-only container
    "bridge + portmap + tuning + bandwidth + firewall": "could not check ipv6 dnat",
}


def check_chain(case, plugin_dir, conflist, host, ctr, result, env):
    bug = GO_CHECK_BUGS.get(case) if plugin_dir == REF else None
    try:
        run_check(plugin_dir, conflist, host, ns_path(ctr), "diff-1", result, env=env)
    except AssertionError as e:
        if not bug or bug not in str(e):
            raise
        return
    check(not bug, f"{case}: the Go CHECK bug ({bug}) is gone; drop it from GO_CHECK_BUGS")


def attach(case, add_dir, del_dir, env=ENV):
    """Sets up fresh namespaces, ADD + CHECK with add_dir, CHECK and DEL with del_dir. Returns the
    normalised result, the snapshot after ADD, and what DEL left of it (the differences to the
    snapshot before ADD: even the reference keeps the bridge, ip_forward and last_reserved_ip)."""
    setup, make = CASES[case]
    data = tempfile.mkdtemp(prefix="cni-diff-data.")
    try:
        with netns("dh") as host, netns("dc") as ctr:
            setup(host)
            conflist = make(data)
            names = Names({ns_path(ctr): "CTRNS", ctr: "CTRNS", host: "HOSTNS", data: "DATA"})
            before = snapshot(host, ctr, data, names)
            result = run_add(add_dir, conflist, host, ns_path(ctr), "diff-1", env=env)
            check_chain(case, add_dir, conflist, host, ctr, result, env)
            if del_dir != add_dir:  # a node switched implementations: the other one's CHECK of this ADD
                check_chain(case, del_dir, conflist, host, ctr, result, env)
            after = without_extensions(snapshot(host, ctr, data, names))
            for i in result.get("interfaces", []):
                names.alias(i["name"])
            shown = canonical_result(names.text(json_text(result)))
            run_del(del_dir, conflist, host, ns_path(ctr), "diff-1", result, env=env)
            return shown, after, diff(without_extensions(snapshot(host, ctr, data, names)), before)
    finally:
        shutil.rmtree(data, ignore_errors=True)
        shutil.rmtree(data + ".tuning", ignore_errors=True)


def json_text(obj):
    return json.dumps(obj, sort_keys=True)


def same_version(snapshot):
    """Debian ships the Go plugins at 1.1.1; where v1.9 (which we follow) changed what a plugin
    writes, the 1.1.1 form is rewritten to the v1.9 one before comparing. portmap marks hairpin
    traffic for masquerading by the container's subnet since v1.9 (by its address before)."""
    for key in ("iptables-legacy-save nat", "iptables-nft-save nat"):
        rules = snapshot["host iptables"][key]
        snapshot["host iptables"][key] = sorted(
            re.sub(r"-A (CNI-DN-\S+) -s (?!127\.)(\d+\.\d+\.\d+)\.\d+/32 (-p \S+ -m \S+ --dport \d+ -j CNI-HOSTPORT-SETMARK)",
                   r"-A \1 -s \2.0/24 \3", r) for r in rules)
    return snapshot


def without_extensions(snapshot):
    """What we add beyond the reference, documented where it is made: portmap's guard rule that
    goes with route_localnet (as kube-proxy's)."""
    for key in ("iptables-legacy-save filter", "iptables-nft-save filter"):
        snapshot["host iptables"][key] = [r for r in snapshot["host iptables"][key]
                                          if "CNI portfwd: block incoming localnet connections" not in r]
    return snapshot


def differential(case, env=ENV):
    if not REF:
        raise AssertionError("Debian's containernetworking-plugins is not installed")
    go_result, go_state, go_left = attach(case, REF, REF, env)
    our_result, our_state, our_left = attach(case, BIN, BIN, env)
    eq(our_result, go_result, f"{case}: result")
    eq(diff(our_state, same_version(go_state)), [], f"{case}: kernel state after ADD (ours != Go)")
    # We may leave less than the reference (tuning restores sysctls), never more.
    for what, left in [("ours, ours", our_left), ("Go's DEL of our ADD", attach(case, BIN, REF, env)[2]),
                       ("our DEL of Go's ADD", attach(case, REF, BIN, env)[2])]:
        eq([x for x in left if x not in go_left], [], f"{case}: {what} leaves more than the reference")
    return go_state


# The cases with iptables rules (ipMasq, portmap, firewall).
NFT_NODE_CASES = ["bridge, gateway, ipMasq, hairpin, dual stack, MTU", "ptp, ipMasq, dual stack, MTU",
                  "bridge + firewall (same-bridge)", "bridge + portmap + tuning + bandwidth + firewall"]


def nft_node(case):
    """The differential on a node whose `iptables` is iptables-nft (Debian 12's default): Go's
    plugins write nf_tables there, and ours must write the same rules in the same place, so the
    node switches either way with pods running (each one's CHECK and DEL of the other's ADD)."""
    go_state = differential(case, NFT_ENV)
    nft_rules = [r for key, rules in go_state["host iptables"].items() if "-nft-" in key for r in rules if "-A CNI-" in r]
    check(nft_rules, f"{case}: Go's ADD wrote no iptables-nft rules (is `iptables` the nft variant?)")


def register(run, cases, name, doc):
    for case in cases:
        def _t(case=case):
            run(case)
        _t.__doc__ = f"{doc}: {case}"
        _t.__name__ = name + "".join(ch if ch.isalnum() else "_" for ch in case)
        test(_t)


register(differential, CASES, "diff_", "conflist, Go vs ours")
register(nft_node, NFT_NODE_CASES, "nft_node_", "conflist on an iptables-nft node, Go vs ours")


if __name__ == "__main__":
    run_all(cleanup=[BIN, LEGACY])
