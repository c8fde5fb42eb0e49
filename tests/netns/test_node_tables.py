#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Root tests: cni-all leaves no table the node did not ask for. On a node whose `iptables` is
iptables-nft (this machine's default), no legacy x_tables table may ever appear
(/proc/net/ip_tables_names and ip6_tables_names stay empty: otherwise every `iptables` on the
node warns of legacy tables); on a node whose `iptables` is iptables-legacy, no nf_tables table
of iptables' families may appear. Every applet that touches a firewall - bridge and ptp ipMasq,
portmap, firewall, bridge macspoofchk - goes through a failed ADD, ADD, CHECK, DEL and GC, and
both kinds of table are read after each call, with tools that never create a legacy table
themselves (the /proc files and `nft list tables`). Where the plugins find no `iptables` and no
`nft` program, bridge ipMasq, portmap and firewall write where kube-proxy's rules are, legacy or
iptables-nft, and iptables-nft on a node with none; the firewall's nftables backend writes its own
table there (and on both kinds of node), never an iptables one, and the DEL without a backend
removes its rules too."""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import BIN, LEGACY, Plugin, check, eq, netns, ns_path, run_all, sh, test  # noqa: E402

SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
NODES = {"nft": SYSTEM_PATH, "legacy": f"{LEGACY}:{SYSTEM_PATH}"}  # what `iptables` is for the plugins


def legacy_tables(ns):
    out = {}
    for family, name in (("ip", "ip_tables_names"), ("ip6", "ip6_tables_names")):
        text = sh("ip", "netns", "exec", ns, "cat", f"/proc/net/{name}", check_rc=False).stdout
        out[family] = sorted(text.split())
    return out


def nft_tables(ns):
    """`nft list tables` as (family, name) pairs."""
    text = sh("ip", "netns", "exec", ns, "nft", "list", "tables").stdout
    return sorted(tuple(line.split()[1:3]) for line in text.splitlines() if line.startswith("table "))


def iptables_families_in_nft(ns):
    return [t for t in nft_tables(ns) if t[0] in ("ip", "ip6")]


class Node:
    """A throwaway host and container namespace, a node of one kind; `wrap`: what the plugins run
    under (by default, the system as it is, with the kind's PATH)."""

    def __init__(self, kind, host, ctr, data, wrap=()):
        self.kind, self.host, self.ctr, self.data, self.wrap = kind, host, ctr, data, wrap

    def run(self, plugin, command, conf, expect_ok=True, cid="nt-1"):
        out = Plugin(os.path.join(BIN, plugin)).run(command, conf, host_ns=self.host, netns=ns_path(self.ctr),
                                                   container_id=cid, extra_env={"PATH": NODES[self.kind]}, wrap=self.wrap)
        if expect_ok:
            out.ok()
        else:
            check(out.rc != 0, f"{plugin} {command} was meant to fail: {out}")
        self.assert_clean(f"after {plugin} {command}")
        return out

    def assert_clean(self, when):
        if self.kind == "nft":
            eq(legacy_tables(self.host), {"ip": [], "ip6": []}, f"{when}: a legacy table appeared on an iptables-nft node")
        else:
            eq(iptables_families_in_nft(self.host), [], f"{when}: an nf_tables table of iptables' families appeared on a legacy node")

    def rules_present(self, *needles):
        """Whether the node's variant holds a rule naming any of `needles` (an attachment's
        container id or addresses)."""
        tools = [f"ip{six}tables-{self.kind}-save" for six in ("", "6")]  # neither creates a table
        text = "".join(sh("ip", "netns", "exec", self.host, tool, check_rc=False).stdout for tool in tools)
        return any(n in text for n in needles)


def bridge_conf(data, **extra):
    c = {"cniVersion": "1.1.0", "name": "ntnet", "type": "bridge", "bridge": "cnint0", "isGateway": True,
         "ipam": {"type": "host-local", "dataDir": data,
                  "ranges": [[{"subnet": "10.93.0.0/24"}], [{"subnet": "fd93::/64"}]]}}
    c.update(extra)
    return c


def ptp_conf(data):
    return {"cniVersion": "1.1.0", "name": "ntnet", "type": "ptp", "ipMasq": True,
            "ipam": {"type": "host-local", "dataDir": data, "ranges": [[{"subnet": "10.94.0.0/24"}], [{"subnet": "fd94::/64"}]]}}


def meta_conf(plugin, prev, **extra):
    c = {"cniVersion": "1.1.0", "name": "ntnet", "type": plugin, "prevResult": prev}
    c.update(extra)
    return c


def gc_conf(conf):
    c = {k: v for k, v in conf.items() if k != "prevResult"}
    c["cni.dev/valid-attachments"] = []
    return c


def on_each_node(scenario):
    for kind in NODES:
        data = tempfile.mkdtemp()
        try:
            with netns("nth") as host, netns("ntc") as ctr:
                node = Node(kind, host, ctr, data)
                node.assert_clean("before anything")
                scenario(node)
        finally:
            shutil.rmtree(data)


def ips_of(res):
    return [ip["address"].split("/")[0] for ip in res["ips"]]


def main_plugin_lifecycle(node, plugin, conf, bad, collects):
    node.run(plugin, "ADD", bad, expect_ok=False)
    res = node.run(plugin, "ADD", conf).json()
    check(node.rules_present('nt-1'), f"{node.kind}: {plugin} ADD wrote its rules where the node's iptables writes")
    node.run(plugin, "CHECK", dict(conf, prevResult=res))
    node.run(plugin, "DEL", conf)
    check(not node.rules_present('nt-1'), f"{node.kind}: {plugin} DEL left rules")
    node.run(plugin, "ADD", conf, cid="nt-2")
    node.run(plugin, "GC", gc_conf(conf))
    if collects:
        check(not node.rules_present('nt-2'), f"{node.kind}: {plugin} GC left rules")
        pool = os.path.join(node.data, "ntnet")
        owners = [open(os.path.join(pool, f)).read() for f in os.listdir(pool) if f[0].isdigit() or ":" in f]
        eq([o for o in owners if o.startswith("nt-2")], [], f"{node.kind}: {plugin} GC released nt-2's addresses")
    node.run(plugin, "DEL", conf, cid="nt-2")
    check(not node.rules_present('nt-2'), f"{node.kind}: {plugin} DEL left rules")


@test
def bridge_ipmasq_leaves_only_the_nodes_tables():
    """bridge ipMasq: failed ADD, ADD, CHECK, DEL, GC on an iptables-nft and a legacy node create no table of the other variant"""
    def scenario(node):
        conf = bridge_conf(node.data, ipMasq=True)
        main_plugin_lifecycle(node, "bridge", conf, dict(conf, ipMasqBackend="ebtables"), collects=True)
    on_each_node(scenario)


@test
def ptp_ipmasq_leaves_only_the_nodes_tables():
    """ptp ipMasq: failed ADD, ADD, CHECK, DEL, GC on an iptables-nft and a legacy node create no table of the other variant"""
    def scenario(node):
        conf = ptp_conf(node.data)
        main_plugin_lifecycle(node, "ptp", conf, dict(conf, ipMasqBackend="ebtables"), collects=True)
    on_each_node(scenario)


def meta_lifecycle(node, plugin, extra, bad_extra, collects):
    conf = bridge_conf(node.data)
    res = node.run("bridge", "ADD", conf).json()
    mine = meta_conf(plugin, res, **extra)
    ours = ['nt-1'] + [ip for ip in ips_of(res)]
    node.run(plugin, "ADD", meta_conf(plugin, res, **bad_extra), expect_ok=False)
    node.run(plugin, "ADD", mine)
    check(node.rules_present(*ours), f"{node.kind}: {plugin} ADD wrote its rules where the node's iptables writes")
    node.run(plugin, "CHECK", mine)
    node.run(plugin, "DEL", mine)
    check(not node.rules_present(*ours), f"{node.kind}: {plugin} DEL left rules")
    node.run(plugin, "ADD", mine)
    node.run(plugin, "GC", gc_conf(mine))
    if collects:
        check(not node.rules_present(*ours), f"{node.kind}: {plugin} GC left rules")
    node.run(plugin, "DEL", mine)
    check(not node.rules_present(*ours), f"{node.kind}: {plugin} DEL left rules")
    node.run("bridge", "DEL", conf)


@test
def portmap_leaves_only_the_nodes_tables():
    """portmap: failed ADD, ADD, CHECK, DEL, GC on an iptables-nft and a legacy node create no table of the other variant"""
    maps = {"portMappings": [{"hostPort": 18093, "containerPort": 80, "protocol": "tcp"}]}
    bad = {"portMappings": [{"hostPort": 18093, "containerPort": 80, "protocol": "icmp"}]}
    on_each_node(lambda node: meta_lifecycle(node, "portmap", {"runtimeConfig": maps}, {"runtimeConfig": bad}, True))


@test
def firewall_leaves_only_the_nodes_tables():
    """firewall: failed ADD, ADD, CHECK, DEL, GC on an iptables-nft and a legacy node create no table of the other variant"""
    on_each_node(lambda node: meta_lifecycle(node, "firewall", {}, {"ingressPolicy": "nonsense"}, True))


FIREWALL_TABLE = ("inet", "cni_plugins_firewall")


def firewall_nft_rules(host):
    r = sh("ip", "netns", "exec", host, "nft", "list", "table", *FIREWALL_TABLE, check_rc=False)
    return r.stdout if r.returncode == 0 else ""


def firewall_nft_lifecycle(node):
    """The firewall's nftables backend through a failed ADD, ADD, CHECK, DEL and GC: its own table
    and no iptables table of either variant; the rules go with DEL and with GC."""
    conf = bridge_conf(node.data)
    res = node.run("bridge", "ADD", conf).json()
    mine = meta_conf("firewall", res, backend="nftables", ingressPolicy="same-bridge")
    node.run("firewall", "ADD", dict(mine, ingressPolicy="nonsense"), expect_ok=False)
    for verb in ("ADD", "CHECK", "DEL", "ADD", "GC"):
        node.run("firewall", verb, gc_conf(mine) if verb == "GC" else mine)
        held = [ip for ip in ips_of(res) if f"addr {ip} " in firewall_nft_rules(node.host)]
        eq(bool(held), verb in ("ADD", "CHECK"), f"{node.kind}: the attachment's rules after {verb}")
        eq(legacy_tables(node.host), {"ip": [], "ip6": []}, f"{node.kind}: no legacy table after {verb}")
        eq(iptables_families_in_nft(node.host), [], f"{node.kind}: no iptables-nft table after {verb}")
    node.run("firewall", "DEL", mine)
    node.run("bridge", "DEL", conf)
    eq([t for t in nft_tables(node.host) if t[0] != "bridge"], [FIREWALL_TABLE], "only the firewall's table")


@test
def firewall_nftables_backend_leaves_only_its_table():
    """firewall backend nftables: failed ADD, ADD, CHECK, DEL, GC on an iptables-nft and a legacy node: its own table only"""
    on_each_node(firewall_nft_lifecycle)


@test
def macspoofchk_leaves_only_the_nodes_tables():
    """bridge macspoofchk: its own nftables table only, and no iptables table of either variant, on both kinds of node"""
    def scenario(node):
        conf = bridge_conf(node.data, macspoofchk=True)
        node.run("bridge", "ADD", dict(conf, macspoofchk="yes"), expect_ok=False)
        res = node.run("bridge", "ADD", conf).json()
        check(("bridge", "nat") in nft_tables(node.host), "macspoofchk's table is there")
        node.run("bridge", "CHECK", dict(conf, prevResult=res))
        node.run("bridge", "DEL", conf)
        node.run("bridge", "GC", gc_conf(conf))
        eq(legacy_tables(node.host), {"ip": [], "ip6": []}, "no legacy table on either node")
        eq(iptables_families_in_nft(node.host), [], "no iptables-nft table on either node")
    on_each_node(scenario)


# A legacy node where legacy iptables cannot be used: its `iptables` is iptables-legacy, but the
# plugins run without CAP_NET_RAW, which x_tables' sockets need and nf_tables does not.
NO_RAW_SOCKETS = ("setpriv", "--bounding-set", "-net_raw")


@test
def firewall_chooses_nftables_where_iptables_is_unusable():
    """firewall without a backend, iptables unusable and nf_tables answering: ADD, CHECK, STATUS and DEL in the nftables
    backend's table, no legacy table; backend iptables answers STATUS with code 50"""
    data = tempfile.mkdtemp()
    try:
        with netns("nth") as host, netns("ntc") as ctr:
            node = Node("legacy", host, ctr, data, wrap=NO_RAW_SOCKETS)
            prev = {"cniVersion": "1.1.0", "ips": [{"address": "10.93.0.9/24"}]}
            conf = meta_conf("firewall", prev)
            node.run("firewall", "ADD", conf)
            check("ip saddr 10.93.0.9 accept" in firewall_nft_rules(host), firewall_nft_rules(host))
            eq(legacy_tables(host), {"ip": [], "ip6": []}, "no legacy table")
            node.run("firewall", "CHECK", conf)
            node.run("firewall", "STATUS", {k: v for k, v in conf.items() if k != "prevResult"})
            err = node.run("firewall", "STATUS", {"cniVersion": "1.1.0", "name": "ntnet", "type": "firewall",
                                                  "backend": "iptables"}, expect_ok=False).json()
            eq((err["code"], err["msg"]), (50, "firewall: backend iptables is not usable here"))
            node.run("firewall", "DEL", conf)
            check("10.93.0.9" not in firewall_nft_rules(host), "DEL removed the rules")
    finally:
        shutil.rmtree(data)


# A node image with no firewall program (only cni-all, or a runtime whose PATH lacks /usr/sbin):
# the plugin runs where /usr/sbin, and /sbin with it, is an empty tmpfs of a mount namespace of its own.
NO_PROGRAMS = ("unshare", "-m", "sh", "-c", 'mount -t tmpfs none /usr/sbin && exec "$0" "$@"')
# What the node's namespace holds before the plugins run -> where their rules must go: kube-proxy's
# rules written by each iptables variant, and nothing (nf_tables answers on this machine).
KUBE_PROXY = {"legacy": "iptables-legacy", "nft": "iptables-nft"}
BARE_NODES = [("legacy", "legacy"), ("nft", "nft"), (None, "nft")]


@test
def without_firewall_programs_the_kernel_decides():
    """no iptables or nft program: bridge ipMasq, portmap and firewall write where kube-proxy's rules
    are (legacy or iptables-nft), iptables-nft on an empty node, and no table of the other variant"""
    for kube_proxy, kind in BARE_NODES:
        data = tempfile.mkdtemp()
        try:
            with netns("nth") as host, netns("ntc") as ctr:
                if kube_proxy:
                    tool = KUBE_PROXY[kube_proxy]
                    sh("ip", "netns", "exec", host, tool, "-t", "nat", "-N", "KUBE-SERVICES")
                    sh("ip", "netns", "exec", host, tool, "-t", "nat", "-A", "PREROUTING", "-j", "KUBE-SERVICES")
                else:
                    which = sh("ip", "netns", "exec", host, *NO_PROGRAMS, "sh", "-c", "command -v iptables nft", check_rc=False)
                    eq((which.returncode != 0, which.stdout), (True, ""), "the plugins find no iptables or nft program")
                node = Node(kind, host, ctr, data, wrap=NO_PROGRAMS)
                node.assert_clean("before anything")
                conf = bridge_conf(data, ipMasq=True)
                res = node.run("bridge", "ADD", conf).json()
                ours = ["nt-1"] + ips_of(res)
                maps = {"portMappings": [{"hostPort": 18093, "containerPort": 80, "protocol": "tcp"}]}
                metas = [meta_conf("portmap", res, runtimeConfig=maps), meta_conf("firewall", res)]
                for c in metas:
                    node.run(c["type"], "ADD", c)
                saved = "".join(sh("ip", "netns", "exec", host, f"ip{six}tables-{kind}-save", check_rc=False).stdout
                                for six in ("", "6"))
                for needle in ('id: \\"nt-1\\"', "CNI-HOSTPORT-DNAT", "CNI-FORWARD", "KUBE-SERVICES" if kube_proxy else ""):
                    check(needle in saved, f"{kube_proxy} node: {needle!r} in the {kind} tables:\n{saved}")
                for c in [dict(conf, prevResult=res)] + metas:
                    node.run(c["type"], "CHECK", c)
                eq(firewall_nft_rules(host), "", f"{kube_proxy} node: with iptables usable, no backend means iptables")
                nft_fw = meta_conf("firewall", res, backend="nftables")
                for verb in ("ADD", "CHECK"):
                    node.run("firewall", verb, nft_fw)
                check(all(f"addr {ip} " in firewall_nft_rules(host) for ip in ips_of(res)), "backend nftables without nft")
                for c in reversed(metas):
                    node.run(c["type"], "DEL", c)
                node.run("bridge", "DEL", conf)
                check(not node.rules_present(*ours), f"{kube_proxy} node: DEL left rules")
                check(not any(f"addr {ip} " in firewall_nft_rules(host) for ip in ips_of(res)),
                      f"{kube_proxy} node: the DEL without a backend removed the nftables backend's rules too")
        finally:
            shutil.rmtree(data)


if __name__ == "__main__":
    try:
        run_all(cleanup=[BIN])
    finally:
        shutil.rmtree(LEGACY, ignore_errors=True)
