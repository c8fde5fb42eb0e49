# SPDX-License-Identifier: Apache-2.0
"""Running a conflist the way libcni does, and a normalised picture of what it left in the
kernel, for the differential tests (the same conflist against Debian's Go plugins and ours).

run_add/run_check/run_del follow libcni: each plugin gets the list's name and cniVersion, ADD
passes every plugin's result to the next as prevResult, CHECK and DEL hand every plugin the
final ADD result, and DEL walks the list in reverse. snapshot() reads links, addresses,
routes, rules, sysctls, iptables tables (legacy and nft) and host-local files, and replaces what is
random per run (host veth names, MACs, IPv6 link-local addresses, interface indexes); qdiscs
and ingress filters too."""
import json
import os
import re
import time

from cnitest import Plugin, sh


def _plugin_conf(conflist, plugin, prev):
    c = dict(plugin)
    c["name"] = conflist["name"]
    c["cniVersion"] = conflist["cniVersion"]
    if prev is not None:
        c["prevResult"] = prev
    return c


def _run(plugin_dir, command, conf, host, netns, cid, ifname, env):
    return Plugin(os.path.join(plugin_dir, conf["type"])).run(
        command, conf, host_ns=host, netns=netns, container_id=cid, ifname=ifname, extra_env=env)


def run_add(plugin_dir, conflist, host, netns, cid, ifname="eth0", env=None):
    """ADD through the list; the final result (parsed), or raises with the failing plugin's output."""
    prev = None
    for p in conflist["plugins"]:
        out = _run(plugin_dir, "ADD", _plugin_conf(conflist, p, prev), host, netns, cid, ifname, env)
        if out.rc != 0:
            raise AssertionError(f"{plugin_dir}/{p['type']} ADD failed: {out.out}{out.err}")
        prev = out.json()
    return prev


def run_check(plugin_dir, conflist, host, netns, cid, result, ifname="eth0", env=None):
    """CHECK through the list; like libcni, nothing for cniVersion before 0.4.0."""
    if tuple(int(x) for x in conflist["cniVersion"].split(".")) < (0, 4, 0):
        return
    for p in conflist["plugins"]:
        out = _run(plugin_dir, "CHECK", _plugin_conf(conflist, p, result), host, netns, cid, ifname, env)
        if out.rc != 0:
            raise AssertionError(f"{plugin_dir}/{p['type']} CHECK failed: {out.out}{out.err}")


def run_del(plugin_dir, conflist, host, netns, cid, result, ifname="eth0", env=None):
    for p in reversed(conflist["plugins"]):
        out = _run(plugin_dir, "DEL", _plugin_conf(conflist, p, result), host, netns, cid, ifname, env)
        if out.rc != 0:
            raise AssertionError(f"{plugin_dir}/{p['type']} DEL failed: {out.out}{out.err}")


class Names:
    """Replaces per-run names: each new host veth becomes VETH0, VETH1, ... in order of first sight."""

    def __init__(self, fixed=None):
        self.map = dict(fixed or {})

    def alias(self, name):
        if name in self.map:
            return self.map[name]
        if re.fullmatch(r"veth[0-9a-f]{8}", name):
            self.map[name] = f"VETH{sum(1 for v in self.map.values() if v.startswith('VETH'))}"
            return self.map[name]
        return name

    def text(self, s):
        for real, alias in self.map.items():
            s = s.replace(real, alias)
        s = re.sub(r"fe80::[0-9a-f:]+", "LINKLOCAL", s)
        return re.sub(r"([0-9a-f]{2}:){5}[0-9a-f]{2}", "MAC", s)


def _links(ns, names):
    out = {}
    links = json.loads(sh("ip", "-n", ns, "-d", "-j", "link", "show").stdout)
    by_index = {link["ifindex"]: link["ifname"] for link in links}
    for link in links:
        name = names.alias(link["ifname"])
        info = link.get("linkinfo", {})
        slave = info.get("info_slave_data", {})
        data = info.get("info_data", {})
        out[name] = {
            "kind": info.get("info_kind", ""),
            "mtu": link["mtu"],
            "up": "UP" in link["flags"],
            "promisc": link.get("promiscuity", 0) > 0,
            "master": names.alias(link["master"]) if "master" in link else None,
            "peer in": "other namespace" if "link_netnsid" in link else
                       names.alias(by_index.get(link.get("link_index"), "")) if "link_index" in link else None,
            "mac assigned by": link.get("addr_assign_type"),
            "bridge port": {k: slave[k] for k in ("hairpin", "isolated", "learning", "state") if k in slave},
            "kind data": {k: v for k, v in data.items() if k in ("mode", "id", "protocol", "vlan_filtering")},
        }
    return out


def _addrs(ns, names):
    out = {}
    for link in json.loads(sh("ip", "-n", ns, "-j", "addr", "show").stdout):
        got = sorted(names.text(f"{a['local']}/{a['prefixlen']} scope {a['scope']}") for a in link.get("addr_info", []))
        if got:
            out[names.alias(link["ifname"])] = got
    return out


def _lines(ns, *cmd, names):
    text = sh("ip", "netns", "exec", ns, *cmd).stdout
    return sorted(names.text(line.strip()) for line in text.splitlines() if line.strip())


def _routes(ns, names):
    # "linkdown" follows the carrier, and the local-table routes of link-local and anycast
    # addresses appear once addrconf is done: all settle asynchronously, none is what a plugin set.
    return [r.replace(" linkdown", "") for family in ("-4", "-6")
            for r in _lines(ns, "ip", family, "route", "show", "table", "all", names=names)
            if not r.startswith(("local LINKLOCAL ", "anycast "))]


def _settle(ns):
    """Waits (3 s at most) until no IPv6 address of the namespace is tentative."""
    for _ in range(60):
        if not sh("ip", "-n", ns, "-6", "addr", "show", "tentative").stdout.strip():
            return
        time.sleep(0.05)


def _qdiscs(ns, names):
    out = sh("ip", "netns", "exec", ns, "tc", "qdisc", "show").stdout
    lines = [re.sub(r" refcnt \d+", "", line.strip()) for line in out.splitlines() if line.strip()]
    filters = []
    for line in lines:
        if line.startswith("qdisc ingress"):
            dev = line.split(" dev ")[1].split()[0]
            f = sh("ip", "netns", "exec", ns, "tc", "filter", "show", "dev", dev, "ingress").stdout
            # The actions are left out: the Go plugin installs its redirect twice (a "stolen" mirred
            # then an unreachable "pass" one), a quirk of the Go netlink library.
            filters += [line.strip() for line in f.splitlines()
                        if line.strip() and not line.strip().startswith(("action order", "index "))]
    return sorted(names.text(x) for x in lines + filters if not x.startswith("qdisc noqueue"))


def _sysctls(ns, names, links):
    out = {}
    keys = ["net/ipv4/ip_forward", "net/ipv6/conf/all/forwarding", "net/core/somaxconn"]
    for link in links:
        keys += [f"net/ipv6/conf/{link}/accept_ra", f"net/ipv4/conf/{link}/arp_notify", f"net/ipv4/conf/{link}/arp_ignore"]
    for key in keys:
        r = sh("ip", "netns", "exec", ns, "cat", "/proc/sys/" + key, check_rc=False)
        if r.returncode == 0:
            out[names.text(key)] = r.stdout.strip()
    return out


def _iptables(ns, names):
    """Both variants' tables: the Go plugins write the nft one where `iptables` is iptables-nft
    (a kernel without nf_tables, as the VM's, shows it empty)."""
    out = {}
    for tool in ("iptables-legacy-save", "ip6tables-legacy-save", "iptables-nft-save", "ip6tables-nft-save"):
        for table in ("nat", "filter"):
            text = sh("ip", "netns", "exec", ns, tool, "-t", table, check_rc="legacy" in tool).stdout
            rules = [names.text(re.sub(r"\[\d+:\d+\]", "", line)) for line in text.splitlines()
                     if line.startswith(("-A", ":"))]
            out[f"{tool} {table}"] = sorted(rules)
    return out


def _data_dir(data):
    out = {}
    for root, dirs, files in os.walk(data):
        dirs[:] = [d for d in dirs if not d.startswith(".cni-all")]  # cni-all's index buckets
        for f in files:
            if f.startswith(".cni-all") or f == "lock":
                continue  # cni-all's own index, and the lock file the reference also creates lazily
            path = os.path.join(root, f)
            with open(path) as fh:
                out[os.path.relpath(path, data)] = fh.read()
    return out


def snapshot(host, ctr, data, names):
    """Everything a conflist may have changed in the two namespaces and the IPAM data dir."""
    _settle(host)
    _settle(ctr)
    host_links, ctr_links = _links(host, names), _links(ctr, names)
    real = {alias: real for real, alias in names.map.items()}
    return {
        "host links": host_links,
        "container links": ctr_links,
        "host addresses": _addrs(host, names),
        "container addresses": _addrs(ctr, names),
        "host routes": _routes(host, names),
        "container routes": _routes(ctr, names),
        "host rules": _lines(host, "ip", "rule", names=names) + _lines(host, "ip", "-6", "rule", names=names),
        "container rules": _lines(ctr, "ip", "rule", names=names) + _lines(ctr, "ip", "-6", "rule", names=names),
        "host sysctls": _sysctls(host, names, [real.get(n, n) for n in host_links]),
        "container sysctls": _sysctls(ctr, names, [real.get(n, n) for n in ctr_links]),
        "host iptables": _iptables(host, names),
        "host qdiscs": _qdiscs(host, names),
        "ipam files": _data_dir(data),
    }


def diff(a, b, path=""):
    """The keys where two snapshots differ, as readable lines."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            out += diff(a.get(k), b.get(k), f"{path}/{k}")
        return out
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]
