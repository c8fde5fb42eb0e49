#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Root tests of the ptp applet: kernel state after ADD (container and host sides), traffic to
the host and masqueraded traffic to another namespace, rollback of failed ADDs, idempotent
DEL, GC of the ipMasq rules of gone attachments, and the same ADD through Debian's Go ptp giving the same state. Each test builds its own
"host", "container" (and "remote") namespaces; the plugins run inside the host one."""
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import (BIN, REF, Plugin, addrs, check, check_skipped_link_local, eq,  # noqa: E402
                     iptables_save, legacy_iptables_path, link, link_local,
                     masquerade_source, netns, nft_masq_comments, ns_path, run_all, sh, test)


def conf(data, version="1.0.0", masq=False, ranges=None, **extra):
    c = {"cniVersion": version, "name": "ptp-test", "type": "ptp", "ipMasq": masq, "mtu": 1400,
         "ipam": {"type": "host-local", "dataDir": data, "routes": [{"dst": "0.0.0.0/0"}],
                  "ranges": ranges or [[{"subnet": "10.71.0.0/24"}], [{"subnet": "fd71::/64"}]]}}
    c.update(extra)
    return c


def ptp(plugin_dir=BIN):
    return Plugin(os.path.join(plugin_dir, "ptp"))


def routes(ns, v6=False):
    out = sh("ip", "-n", ns, "-6" if v6 else "-4", "route").stdout
    return sorted(line.strip() for line in out.splitlines() if "fe80" not in line)


def nat_rules(ns, save=None):
    out = save(ns) if save else iptables_save(ns)
    return [line for line in out.splitlines() if line.startswith("-A") or line.startswith(":CNI")]


def legacy_nat(ns):
    return sh("ip", "netns", "exec", ns, "iptables-legacy-save", "-t", "nat").stdout


def reservations(data):
    d = os.path.join(data, "ptp-test")
    return sorted(f for f in os.listdir(d) if f[0].isdigit() or ":" in f) if os.path.isdir(d) else []


@test
def add_check_del_state():
    """ptp ADD: addresses, p2p routes and host side as the reference; CHECK; DEL removes all"""
    data = tempfile.mkdtemp()
    try:
        with netns("host") as host, netns("ctr") as ctr:
            c = conf(data, masq=True)
            res = ptp().run("ADD", c, host_ns=host, netns=ns_path(ctr), container_id="ptp-a").ok().json()
            hostveth = res["interfaces"][0]["name"]
            check(re.fullmatch(r"veth[0-9a-f]{8}", hostveth), hostveth)
            eq(res["interfaces"][1]["name"], "eth0")
            eq(res["interfaces"][1]["sandbox"], ns_path(ctr))
            eq([(ip["address"], ip["gateway"], ip["interface"]) for ip in res["ips"]],
               [("10.71.0.2/24", "10.71.0.1", 1), ("fd71::2/64", "fd71::1", 1)])
            eq(link(ctr, "eth0")["mtu"], 1400)
            eq(routes(ctr), ["10.71.0.0/24 via 10.71.0.1 dev eth0 src 10.71.0.2",
                             "10.71.0.1 dev eth0 scope link src 10.71.0.2",
                             "default via 10.71.0.1 dev eth0"])
            check("fd71::/64 via fd71::1 dev eth0 src fd71::2 metric 1024 pref medium" in routes(ctr, True), routes(ctr, True))
            host_addrs = sh("ip", "-n", host, "-br", "addr", "show", hostveth).stdout
            check("10.71.0.1/32" in host_addrs and "fd71::1/128" in host_addrs, host_addrs)
            check(f"10.71.0.2 dev {hostveth} scope host" in routes(host), routes(host))
            eq(sh("ip", "netns", "exec", host, "cat", "/proc/sys/net/ipv4/ip_forward").stdout.strip(), "1")
            eq(len([r for r in nat_rules(host) if "ptp-a" in r]), 3)
            sh("ip", "netns", "exec", ctr, "ping", "-c1", "-W2", "10.71.0.1")
            sh("ip", "netns", "exec", ctr, "ping", "-c1", "-w5", "fd71::1")  # after the host side's DAD
            check_conf = dict(c, prevResult=res)
            ptp().run("CHECK", check_conf, host_ns=host, netns=ns_path(ctr), container_id="ptp-a").ok()
            ptp().run("DEL", check_conf, host_ns=host, netns=ns_path(ctr), container_id="ptp-a").ok()
            check(link(ctr, "eth0") is None, "container veth gone")
            check(link(host, hostveth) is None, "host veth gone")
            eq(nat_rules(host), [])
            eq(reservations(data), [])
            ptp().run("DEL", c, host_ns=host, netns=ns_path(ctr), container_id="ptp-a").ok()
            ptp().run("DEL", c, host_ns=host, netns="", container_id="ptp-a").ok()
    finally:
        shutil.rmtree(data)


@test
def skip_ipv6_link_local():
    """ptp skipIPv6LinkLocal (cni-all's own key): no IPv6 link-local address on an IPv4-only link, which still reaches the host; CHECK notices one; kept when dual-stack"""
    data = tempfile.mkdtemp()
    try:
        with netns("host") as host, netns("ctr") as ctr, netns("ctr") as dual_ctr:
            c = conf(data, ranges=[[{"subnet": "10.71.0.0/24"}]], skipIPv6LinkLocal=True)
            res = ptp().run("ADD", c, host_ns=host, netns=ns_path(ctr), container_id="ptp-q").ok().json()
            check_skipped_link_local(lambda cmd, cc: ptp().run(cmd, cc, host_ns=host, netns=ns_path(ctr), container_id="ptp-q"),
                                     c, res, ctr, "10.71.0.2/24", ping="10.71.0.1")
            d = conf(data, skipIPv6LinkLocal=True)
            ptp().run("ADD", d, host_ns=host, netns=ns_path(dual_ctr), container_id="ptp-d").ok()
            check(link_local(dual_ctr, "eth0"), addrs(dual_ctr, "eth0"))
            ptp().run("DEL", c, host_ns=host, netns=ns_path(ctr), container_id="ptp-q").ok()
            ptp().run("DEL", d, host_ns=host, netns=ns_path(dual_ctr), container_id="ptp-d").ok()
            eq(reservations(data), [])
    finally:
        shutil.rmtree(data)


@test
def masqueraded_traffic_leaves_with_the_host_address():
    """ptp ipMasq: a container reaches another namespace with the host's address as source"""
    data = tempfile.mkdtemp()
    try:
        with netns("host") as host, netns("ctr") as ctr:
            ptp().run("ADD", conf(data, masq=True), host_ns=host, netns=ns_path(ctr), container_id="ptp-m").ok()
            eq(masquerade_source(host, ctr, "10.199.7", 7777), "10.199.7.1", "source address seen by the remote side")
            ptp().run("DEL", conf(data, masq=True), host_ns=host, netns=ns_path(ctr), container_id="ptp-m").ok()
            eq(nat_rules(host), [])
    finally:
        shutil.rmtree(data)


@test
def nftables_masquerade_leaves_with_the_host_address():
    """ptp ipMasqBackend nftables: the table inet cni_plugins_masquerade masquerades, CHECK sees it, DEL removes it"""
    data = tempfile.mkdtemp()
    try:
        with netns("host") as host, netns("ctr") as ctr:
            c = conf(data, masq=True, ipMasqBackend="nftables")
            res = ptp().run("ADD", c, host_ns=host, netns=ns_path(ctr), container_id="ptp-nft").ok().json()
            eq(nat_rules(host), [], "no iptables rules with the nftables backend")
            eq(len(nft_masq_comments(host)), 2, "one masquerade rule per address (IPv4, IPv6)")
            check(all(r.endswith("net: ptp-test, if: eth0, id: ptp-nft") for r in nft_masq_comments(host)), nft_masq_comments(host))
            eq(masquerade_source(host, ctr, "10.199.7", 7777), "10.199.7.1", "source address seen by the remote side")
            ptp().run("CHECK", dict(c, prevResult=res), host_ns=host, netns=ns_path(ctr), container_id="ptp-nft").ok()
            sh("ip", "netns", "exec", host, "nft", "flush", "chain", "inet", "cni_plugins_masquerade", "masq_checks")
            err = ptp().run("CHECK", dict(c, prevResult=res), host_ns=host, netns=ns_path(ctr), container_id="ptp-nft").error()
            check("masq_checks has 0 rules for this attachment" in err["msg"], err)
            ptp().run("DEL", c, host_ns=host, netns=ns_path(ctr), container_id="ptp-nft").ok()
            eq(nft_masq_comments(host), [], "DEL removed the attachment's rules")
            ptp().run("DEL", c, host_ns=host, netns=ns_path(ctr), container_id="ptp-nft").ok()  # idempotent
    finally:
        shutil.rmtree(data)


@test
def failed_add_leaves_nothing_behind():
    """ptp: ADD failing on an existing ifname, an unknown IPAM, or a failing IPAM undoes everything"""
    data = tempfile.mkdtemp()
    try:
        with netns("host") as host, netns("ctr") as ctr:
            sh("ip", "-n", ctr, "link", "add", "eth0", "type", "veth", "peer", "name", "other0")
            before = sh("ip", "-n", host, "-br", "link").stdout
            err = ptp().run("ADD", conf(data, masq=True), host_ns=host, netns=ns_path(ctr), container_id="ptp-f").error()
            eq(err["msg"], "container veth name provided (eth0) already exists")
            eq(reservations(data), [], "the IPAM allocation was released")
            eq(nat_rules(host), [])
            eq(sh("ip", "-n", host, "-br", "link").stdout, before, "no host veth left")
            bad = conf(data)
            bad["ipam"]["type"] = "no-such-ipam"
            err = ptp().run("ADD", bad, host_ns=host, netns=ns_path(ctr), container_id="ptp-f", ifname="eth1").error()
            check(err["msg"].startswith('failed to find plugin "no-such-ipam" in path'), err)
            full = conf(data, ranges=[[{"subnet": "10.72.0.0/30"}]])  # one usable address
            ptp().run("ADD", full, host_ns=host, netns=ns_path(ctr), container_id="ptp-1", ifname="eth1").ok()
            err = ptp().run("ADD", full, host_ns=host, netns=ns_path(ctr), container_id="ptp-2", ifname="eth2").error()
            check("no IP addresses available in range set" in err["msg"], err)
            check(link(ctr, "eth2") is None, "no link for the failed ADD")
            err = ptp().run("ADD", conf(data, ipMasqBackend="pf", masq=True), host_ns=host,
                            netns=ns_path(ctr), container_id="ptp-n", ifname="eth3").error()
            eq(err["msg"], 'unknown ipmasq backend "pf"')
            ptp().run("DEL", conf(data, ipMasqBackend="pf", masq=True), host_ns=host, netns=ns_path(ctr),
                      container_id="ptp-n", ifname="eth3").ok()  # DEL tries every backend, as the reference's
            check(link(ctr, "eth3") is None, "the refused ADD made no veth")
            eq(nat_rules(host), [], "nor masquerade rules")
            eq(len(reservations(data)), 1, "only ptp-1 holds an address")
    finally:
        shutil.rmtree(data)


@test
def del_after_the_namespace_is_gone_still_removes_the_rules():
    """ptp DEL with the container namespace gone releases the address and the ipMasq rules"""
    data = tempfile.mkdtemp()
    try:
        with netns("host") as host:
            with netns("ctr") as ctr:
                gone = ns_path(ctr)
                ptp().run("ADD", conf(data, masq=True), host_ns=host, netns=gone, container_id="ptp-g").ok()
            eq(len(nat_rules(host)), 4)
            ptp().run("DEL", conf(data, masq=True), host_ns=host, netns=gone, container_id="ptp-g").ok()
            eq(nat_rules(host), [], "the reference leaks these when the link is gone")
            eq(reservations(data), [])
    finally:
        shutil.rmtree(data)


def masq_owners(host, nftables):
    """The attachments whose ipMasq rules `host` holds: "network/containerID/ifname" from the
    comments of masq_checks (nftables), "network/containerID" from the POSTROUTING jumps'
    comments (iptables, both variants and families: its chains name no interface)."""
    if nftables:
        found = (re.search(r"net: (.*), if: (.*), id: (.*)$", c) for c in nft_masq_comments(host))
        return {f"{m[1]}/{m[3]}/{m[2]}" for m in found}
    out = iptables_save(host) + iptables_save(host, v6=True)
    return {f"{net}/{cid}" for net, cid in re.findall(r'-A POSTROUTING .*name: \\"([^"\\]+)\\" id: \\"([^"\\]+)\\"', out)}


@test
def gc_removes_only_the_ipmasq_rules_of_gone_attachments():
    """ptp GC (beyond the reference): the ipMasq rules and addresses of this network's attachments not in cni.dev/valid-attachments go; a valid one's, another network's and an operator's rule stay; iptables legacy and nft, and nftables"""
    nft_path = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    legacy = {"PATH": legacy_iptables_path() + ":/usr/sbin:/usr/bin:/sbin:/bin"}
    cases = (("legacy", legacy, {}, {"ptp-test/keep", "ptp-other/gone"}),
             ("iptables-nft", nft_path, {}, {"ptp-test/keep", "ptp-other/gone"}),
             ("nftables", legacy, {"ipMasqBackend": "nftables"}, {"ptp-test/keep/eth0", "ptp-other/gone/eth3"}))
    foreign = ["POSTROUTING", "-s", "10.9.9.9/32", "-m", "comment", "--comment", "an operator's", "-j", "MASQUERADE"]
    for label, env, keys, kept in cases:
        data = tempfile.mkdtemp()
        try:
            with netns("host") as host, netns("ctr") as c1, netns("ctr") as c2, netns("ctr") as c3, netns("ctr") as c4:
                c = conf(data, version="1.1.0", masq=True, **keys)
                other = dict(c, name="ptp-other")
                for conf_, ctr, cid, ifname in ((c, c1, "keep", "eth0"), (c, c2, "gone", "eth1"), (c, c3, "keep", "eth2"),
                                                (other, c4, "gone", "eth3")):
                    ptp().run("ADD", conf_, host_ns=host, netns=ns_path(ctr), container_id=cid, ifname=ifname, extra_env=env).ok()
                for variant in ("legacy", "nft"):
                    sh("ip", "netns", "exec", host, f"iptables-{variant}", "-t", "nat", "-A", *foreign)
                gc = dict(c, **{"cni.dev/valid-attachments": [{"containerID": "keep", "ifname": "eth0"}]})
                ptp().run("GC", gc, host_ns=host, raw_env={"CNI_COMMAND": "GC", "CNI_PATH": BIN}, extra_env=env).ok()
                eq(masq_owners(host, bool(keys)), kept, label)
                for variant in ("legacy", "nft"):
                    sh("ip", "netns", "exec", host, f"iptables-{variant}", "-t", "nat", "-C", *foreign)  # the operator's rule stays
                eq(reservations(data), ["10.71.0.2", "fd71::2"], f"{label}: IPAM kept only keep/eth0's addresses")
        finally:
            shutil.rmtree(data)


def normalise(text, names):
    for real, alias in names.items():
        text = text.replace(real, alias)
    text = re.sub(r"fe80::[0-9a-f:]+/64", "LINKLOCAL", text)  # derived from the random MAC
    return re.sub(r"([0-9a-f]{2}:){5}[0-9a-f]{2}", "MAC", text)


@test
def same_state_as_the_go_ptp():
    """ptp: the Go plugin and cni-all give the same result, routes, host side and ipMasq rules"""
    if not REF:
        raise AssertionError("Debian's containernetworking-plugins is not installed")
    shim = legacy_iptables_path()
    try:
        seen = {}
        for impl, plugin_dir in [("go", REF), ("ours", BIN)]:
            data = tempfile.mkdtemp()
            try:
                with netns("host") as host, netns("ctr") as ctr:
                    c = conf(data, version="0.4.0", masq=True)
                    out = ptp(plugin_dir).run("ADD", c, host_ns=host, netns=ns_path(ctr), container_id="ptp-diff",
                                              extra_env={"PATH": f"{shim}:/usr/sbin:/usr/bin:/sbin:/bin"}).ok()
                    hostveth = out.json()["interfaces"][0]["name"]
                    names = {hostveth: "HOSTVETH", ns_path(ctr): "NETNS"}
                    seen[impl] = {
                        "result": normalise(out.out, names),
                        "container routes": routes(ctr) + routes(ctr, True),
                        "host routes": [normalise(r, names) for r in routes(host) + routes(host, True)],
                        "host addrs": normalise(sh("ip", "-n", host, "-br", "addr", "show", hostveth).stdout, names),
                        "nat": nat_rules(host),
                    }
                    # Each implementation's DEL must clean up the other's ADD too: swap them.
                    other = BIN if impl == "go" else REF
                    ptp(other).run("DEL", c, host_ns=host, netns=ns_path(ctr), container_id="ptp-diff",
                                   extra_env={"PATH": f"{shim}:/usr/sbin:/usr/bin:/sbin:/bin"}).ok()
                    eq(nat_rules(host), [], f"{impl}'s rules removed by the other implementation")
                    eq(reservations(data), [])
            finally:
                shutil.rmtree(data)
        for key in seen["go"]:
            eq(seen["ours"][key], seen["go"][key], key)
    finally:
        shutil.rmtree(shim)


def nft_variant_nat(ns):
    """The CNI chains and rules that iptables-nft (Debian 12's `iptables`) shows in nf_tables."""
    out = sh("ip", "netns", "exec", ns, "iptables-nft-save", "-t", "nat").stdout
    return [line for line in out.splitlines() if "CNI" in line]


@test
def del_removes_what_the_go_ptp_wrote_through_iptables_nft():
    """ptp: after the Go plugin's ADD with iptables-nft (Debian 12's default iptables), our DEL removes its masquerade chain and rule from nf_tables"""
    if not REF:
        raise AssertionError("Debian's containernetworking-plugins is not installed")
    data = tempfile.mkdtemp()
    nft_path = "/usr/lib/cni:/usr/sbin:/usr/bin:/sbin:/bin"
    check(os.path.realpath(shutil.which("iptables", path=nft_path)).endswith("xtables-nft-multi"),
          "iptables must be the nft variant for this test")
    try:
        with netns("host") as host, netns("ctr") as ctr:
            c = conf(data, version="1.0.0", masq=True)
            ptp(REF).run("ADD", c, host_ns=host, netns=ns_path(ctr), container_id="ptp-nftvariant",
                         extra_env={"PATH": nft_path}).ok()
            written = nft_variant_nat(host)
            check(any(line.startswith(":CNI-") for line in written), written)
            check(any("-A POSTROUTING" in line and "-j CNI-" in line for line in written), written)
            eq(nat_rules(host, legacy_nat), [], "the Go plugin wrote nothing into the legacy tables")
            ptp().run("DEL", c, host_ns=host, netns=ns_path(ctr), container_id="ptp-nftvariant").ok()
            eq(nft_variant_nat(host), [])
            eq(reservations(data), [])
    finally:
        shutil.rmtree(data)


if __name__ == "__main__":
    run_all(cleanup=[BIN])
