#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Root tests of the firewall applet after our bridge: with ingressPolicy open two bridges'
containers reach each other; same-bridge blocks traffic between the bridges but not inside
one; isolated also blocks it inside the bridge (when the kernel passes bridged traffic to
iptables). Also the exact rules, DEL removing the per-address rules, CHECK, and refused
input. The firewalld backend runs against a stand-in firewalld (tests/lib/fake_firewalld.py)
on a private dbus-daemon: zone sources, the automatic choice, CHECK, rollback, DEL without
firewalld. Each test builds its own host and container namespaces."""
import ast
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import BIN, FIREWALL_RECORDS, Plugin, check, eq, iptables_save, netns, ns_path, run_all, sh, test  # noqa: E402
from conflist import run_add, run_check, run_del  # noqa: E402


def conflist(data, bridge, subnet, policy=None, name=None, backend=None):
    fwc = {"type": "firewall"}
    if policy:
        fwc["ingressPolicy"] = policy
    if backend:
        fwc["backend"] = backend
    return {"cniVersion": "1.0.0", "name": name or "fw-" + bridge, "plugins": [
        {"type": "bridge", "bridge": bridge, "isGateway": True,
         "ipam": {"type": "host-local", "subnet": subnet, "routes": [{"dst": "0.0.0.0/0"}], "dataDir": data}}, fwc]}


def pings(ctr, ip):
    """One reply within 3 s (a probe every 0.2 s, so a slow first neighbour lookup on a loaded
    machine is no false failure)."""
    return sh("ip", "netns", "exec", ctr, "ping", "-c1", "-i0.2", "-w3", ip, check_rc=False).returncode == 0


def dropped(ctr, ip):
    """No reply to one probe within 1 s."""
    return sh("ip", "netns", "exec", ctr, "ping", "-c1", "-W1", ip, check_rc=False).returncode != 0


def filter_rules(host):
    out = iptables_save(host, "filter")
    return [line for line in out.splitlines() if line.startswith("-A")]


def bridged_traffic_hits_iptables(host):
    r = sh("ip", "netns", "exec", host, "cat", "/proc/sys/net/bridge/bridge-nf-call-iptables", check_rc=False)
    return r.returncode == 0 and r.stdout.strip() == "1"


class Nodes:
    """One host, bridge A with containers a1 and a2, bridge B with container b1."""

    def __init__(self, policy_a, policy_b, backend=None):
        self.policies = (policy_a, policy_b)
        self.backend = backend

    def __enter__(self):
        self.data = tempfile.mkdtemp()
        self._ns = [netns(p) for p in ("fh", "fa1", "fa2", "fb1")]
        self.host, self.a1, self.a2, self.b1 = [n.__enter__() for n in self._ns]
        self.ca = conflist(self.data, "cnifwa", "10.92.0.0/24", self.policies[0], backend=self.backend)
        self.cb = conflist(self.data, "cnifwb", "10.93.0.0/24", self.policies[1], backend=self.backend)
        self.results = {}
        for cid, conf, ctr in [("a1", self.ca, self.a1), ("a2", self.ca, self.a2), ("b1", self.cb, self.b1)]:
            self.results[cid] = run_add(BIN, conf, self.host, ns_path(ctr), cid)
        return self

    def ip(self, cid):
        return self.results[cid]["ips"][0]["address"].split("/")[0]

    def firewall(self, command, cid, **keys):
        """The firewall plugin alone on attachment `cid` (its bridge attachment stays)."""
        conf = self.ca if cid.startswith("a") else self.cb
        fwc = dict(conf["plugins"][1], name=conf["name"], cniVersion=conf["cniVersion"], prevResult=self.results[cid], **keys)
        ctr = {"a1": self.a1, "a2": self.a2, "b1": self.b1}[cid]
        return Plugin(os.path.join(BIN, "firewall")).run(command, fwc, host_ns=self.host, netns=ns_path(ctr), container_id=cid)

    def __exit__(self, *exc):
        for n in reversed(self._ns):
            n.__exit__(None, None, None)
        shutil.rmtree(self.data, ignore_errors=True)


@test
def firewall_open_policy_lets_bridges_talk():
    """firewall: ingressPolicy open - containers of two bridges reach each other; the rules are the reference's"""
    with Nodes(None, None) as n:
        check(pings(n.a1, n.ip("b1")), "a1 -> b1")
        check(pings(n.a1, n.ip("a2")), "a1 -> a2")
        rules = filter_rules(n.host)
        for want in ['-A FORWARD -m comment --comment "CNI firewall plugin rules" -j CNI-FORWARD',
                     '-A CNI-FORWARD -m comment --comment "CNI firewall plugin admin overrides" -j CNI-ADMIN',
                     f'-A CNI-FORWARD -d {n.ip("a1")}/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT',
                     f'-A CNI-FORWARD -s {n.ip("a1")}/32 -j ACCEPT']:
            check(want in rules, f"{want} not in {rules}")
        check(not [r for r in rules if "ISOLATION" in r], "open adds no isolation chains")
        run_check(BIN, n.ca, n.host, ns_path(n.a1), "a1", n.results["a1"])
        run_del(BIN, n.ca, n.host, ns_path(n.a1), "a1", n.results["a1"])
        check(not [r for r in filter_rules(n.host) if n.ip("a1") + "/32" in r], "DEL removed a1's rules")
        check([r for r in filter_rules(n.host) if n.ip("a2") + "/32" in r], "a2's rules stay")


@test
def firewall_same_bridge_blocks_other_bridges():
    """firewall: same-bridge - a1 cannot reach b1 (nor b1 a1), a1 still reaches a2"""
    with Nodes("same-bridge", "same-bridge") as n:
        check(dropped(n.a1, n.ip("b1")), "a1 -> b1 must be dropped")
        check(dropped(n.b1, n.ip("a1")), "b1 -> a1 must be dropped")
        check(pings(n.a1, n.ip("a2")), "a1 -> a2 stays open")
        rules = filter_rules(n.host)
        c = '-m comment --comment "CNI firewall plugin rules (ingressPolicy: same-bridge)"'
        for want in [f"-A FORWARD {c} -j CNI-ISOLATION-STAGE-1",
                     f"-A CNI-ISOLATION-STAGE-1 -i cnifwa ! -o cnifwa {c} -j CNI-ISOLATION-STAGE-2",
                     f"-A CNI-ISOLATION-STAGE-1 {c} -j RETURN",
                     f"-A CNI-ISOLATION-STAGE-2 -o cnifwa {c} -j DROP",
                     f"-A CNI-ISOLATION-STAGE-2 {c} -j RETURN"]:
            check(want in rules, f"{want} not in {rules}")
        eq(rules.index(f"-A FORWARD {c} -j CNI-ISOLATION-STAGE-1"), 0, "the isolation jump comes first")


@test
def firewall_isolated_blocks_inside_the_bridge_too():
    """firewall: isolated - a1 cannot reach a2 on the same bridge (with bridged traffic in iptables)"""
    with Nodes("isolated", "same-bridge") as n:
        rules = filter_rules(n.host)
        check('-A CNI-ISOLATION-STAGE-1 -i cnifwa -o cnifwa -m comment --comment '
              '"CNI firewall plugin rules (ingressPolicy: isolated)" -j DROP' in rules, rules)
        check(dropped(n.a1, n.ip("b1")), "a1 -> b1 must be dropped")
        if bridged_traffic_hits_iptables(n.host):
            check(dropped(n.a1, n.ip("a2")), "a1 -> a2 must be dropped")
        else:
            print("# bridged traffic bypasses iptables here (no br_netfilter): only the rule is checked")


@test
def firewall_check_names_each_missing_isolation_rule():
    """firewall: CHECK of an isolated attachment fails naming each isolation rule taken away, and passes once it is back"""
    with Nodes("isolated", "same-bridge") as n:
        run_check(BIN, n.ca, n.host, ns_path(n.a1), "a1", n.results["a1"])
        fw = Plugin(os.path.join(BIN, "firewall"))
        conf = dict(n.ca["plugins"][1], name=n.ca["name"], cniVersion=n.ca["cniVersion"], prevResult=n.results["a1"])
        comment = '-m comment --comment "CNI firewall plugin rules (ingressPolicy: isolated)"'
        for chain, match, target in [("FORWARD", "", "CNI-ISOLATION-STAGE-1"),
                                     ("CNI-ISOLATION-STAGE-1", "-i cnifwa ! -o cnifwa", "CNI-ISOLATION-STAGE-2"),
                                     ("CNI-ISOLATION-STAGE-1", "-i cnifwa -o cnifwa", "DROP"),
                                     ("CNI-ISOLATION-STAGE-1", "", "RETURN"),
                                     ("CNI-ISOLATION-STAGE-2", "-o cnifwa", "DROP"),
                                     ("CNI-ISOLATION-STAGE-2", "", "RETURN")]:
            spec = shlex.split(f"{match} {comment} -j {target}")
            sh("ip", "netns", "exec", n.host, "iptables", "-D", chain, *spec)  # the node's variant, as the plugin's
            check(f"-A {chain} {match} {comment} -j {target}".replace("  ", " ") not in filter_rules(n.host), "rule gone")
            err = fw.run("CHECK", conf, host_ns=n.host, netns=ns_path(n.a1), container_id="a1").error()
            shown = f"{match} -j {target}".strip()
            eq((err["code"], err["msg"]),
               (999, f'firewall: ingressPolicy "isolated" needs the rule {chain} {shown}, which is missing'))
            sh("ip", "netns", "exec", n.host, "iptables", "-A", chain, *spec)
            run_check(BIN, n.ca, n.host, ns_path(n.a1), "a1", n.results["a1"])
        # b1's bridge has its own rules: a1's CHECK does not lean on them, nor b1's on a1's
        sh("ip", "netns", "exec", n.host, "iptables", "-D", "CNI-ISOLATION-STAGE-2", "-o", "cnifwa", *shlex.split(comment),
           "-j", "DROP")
        run_check(BIN, n.cb, n.host, ns_path(n.b1), "b1", n.results["b1"])


@test
def firewall_refuses_bad_input():
    """firewall: unknown policy, missing prevResult; an unknown backend is chosen as none (as the Go plugin), with a warning"""
    fw = Plugin(os.path.join(BIN, "firewall"))
    prev = {"cniVersion": "1.0.0", "ips": [{"address": "10.92.0.9/24"}]}
    base = {"cniVersion": "1.0.0", "name": "fw", "type": "firewall", "prevResult": prev}
    with netns("fh") as host, netns("fc") as ctr:
        for extra, code, msg in [({"ingressPolicy": "strict"}, 999, 'unknown ingress policy: "strict"'),
                                 ({"ingressPolicy": "same-bridge"}, 999,
                                  'interface needs to be set for ingress policy "same-bridge", make sure to chain '
                                  '"firewall" plugin with "bridge"')]:
            err = fw.run("ADD", dict(base, **extra), host_ns=host, netns=ns_path(ctr)).error()
            eq((err["code"], err["msg"]), (code, msg), str(extra))
        noprev = dict(base)
        del noprev["prevResult"]
        eq(fw.run("ADD", noprev, host_ns=host, netns=ns_path(ctr)).error()["msg"], "must be called as a chained plugin")
        eq(fw.run("ADD", dict(base, cniVersion="0.3.1"), host_ns=host, netns=ns_path(ctr)).error()["code"], 1)
        check(not [r for r in filter_rules(host) if "10.92.0.9" in r], "the failed ADD left no rule")
        long_chain = dict(base, iptablesAdminChainName="X" * 29)
        eq(fw.run("ADD", long_chain, host_ns=host, netns=ns_path(ctr)).error()["msg"],
           'iptablesAdminChainName "' + "X" * 29 + '" is longer than 28 characters')
        fw.run("DEL", long_chain, host_ns=host, netns=ns_path(ctr)).ok()  # DEL does not use the admin chain
        check(not [r for r in filter_rules(host) if "10.92.0.9" in r or "X" * 29 in r], "the refused ADD wrote no rule")
        unknown = dict(base, backend="pf")
        out = fw.run("ADD", unknown, host_ns=host, netns=ns_path(ctr)).ok()
        check('firewall: unknown backend "pf" (iptables, nftables or firewalld); using firewalld if it is running, else '
              'iptables, else nftables' in out.err, out.err)
        check([r for r in filter_rules(host) if "10.92.0.9" in r], "iptables chosen, as with no backend")
        fw.run("DEL", unknown, host_ns=host, netns=ns_path(ctr)).ok()
        check(not [r for r in filter_rules(host) if "10.92.0.9" in r], "DEL removed the rules")


FAKE_FIREWALLD = os.path.join(os.path.dirname(__file__), "..", "lib", "fake_firewalld.py")
BUS_CONF = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <listen>unix:path={path}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/><allow own="*"/><allow send_destination="*"/><allow receive_sender="*"/>
  </policy>
</busconfig>
"""


class PrivateBus:
    """A dbus-daemon of its own in a temporary directory, with the stand-in firewalld on it
    unless asked otherwise; the plugin finds it through DBUS_SYSTEM_BUS_ADDRESS."""

    def __init__(self, firewalld=True):
        self.with_firewalld = firewalld
        self.firewalld = None

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="cni-dbus.")
        path = os.path.join(self.dir, "bus")
        self.address = "unix:path=" + path
        with open(os.path.join(self.dir, "bus.conf"), "w") as f:
            f.write(BUS_CONF.format(path=path))
        self.daemon = subprocess.Popen(["dbus-daemon", "--nofork", "--nopidfile", "--config-file=" + os.path.join(self.dir, "bus.conf")])
        for _ in range(100):
            if os.path.exists(path):
                break
            time.sleep(0.05)
        check(os.path.exists(path), "dbus-daemon did not start")
        if self.with_firewalld:
            self.start_firewalld()
        return self

    def __exit__(self, *exc):
        self.stop_firewalld()
        self.daemon.kill()
        self.daemon.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def start_firewalld(self):
        self.firewalld = subprocess.Popen(["/usr/bin/python3", FAKE_FIREWALLD, self.address], stdout=subprocess.PIPE, text=True)
        eq(self.firewalld.stdout.readline().strip(), "ready", "the stand-in firewalld")

    def stop_firewalld(self):
        if self.firewalld:
            self.firewalld.kill()
            self.firewalld.wait()
            self.firewalld = None

    def zone(self, method, *args):
        out = sh("gdbus", "call", "--address", self.address, "--dest", "org.fedoraproject.FirewallD1",
                 "--object-path", "/org/fedoraproject/FirewallD1", "--method", "org.fedoraproject.FirewallD1.zone." + method,
                 *args).stdout
        return ast.literal_eval(out.strip().replace("@as ", ""))[0]

    def sources(self, zone="trusted"):
        return self.zone("getSources", zone)

    def env(self):
        return {"DBUS_SYSTEM_BUS_ADDRESS": self.address}


DUAL_PREV = {"cniVersion": "1.0.0", "interfaces": [{"name": "cnifwd"}],
             "ips": [{"address": "10.94.0.5/24", "interface": 0}, {"address": "fd00:94::5/64", "interface": 0}]}


def firewalld_conf(**keys):
    return dict({"cniVersion": "1.0.0", "name": "fwd", "type": "firewall", "prevResult": DUAL_PREV}, **keys)


@test
def firewalld_backend_zone_sources():
    """firewall firewalld backend: ADD makes each address a zone source and writes no iptables rule; CHECK; DEL"""
    fw = Plugin(os.path.join(BIN, "firewall"))
    with PrivateBus() as bus, netns("fdh") as host, netns("fdc") as ctr:
        run = lambda cmd, conf: fw.run(cmd, conf, host_ns=host, netns=ns_path(ctr), container_id="fd1", extra_env=bus.env())  # noqa: E731
        conf = firewalld_conf(backend="firewalld")
        eq(run("ADD", conf).ok().json(), DUAL_PREV)
        eq(bus.sources(), ["10.94.0.5/32", "fd00:94::5/128"])
        eq(filter_rules(host), [], "firewalld owns the rules: nothing in iptables")
        run("CHECK", conf).ok()
        bus.zone("removeSource", "trusted", "fd00:94::5/128")
        err = run("CHECK", conf).error()
        eq(err["msg"], "firewalld zone trusted does not have the source fd00:94::5")
        run("DEL", conf).ok()
        eq(bus.sources(), [])
        run("DEL", conf).ok()
        internal = firewalld_conf(backend="firewalld", firewalldZone="internal")
        run("ADD", internal).ok()
        eq((bus.sources("internal"), bus.sources()), (["10.94.0.5/32", "fd00:94::5/128"], []))
        run("DEL", internal).ok()
        eq(bus.sources("internal"), [])


@test
def firewalld_backend_errors_and_rollback():
    """firewall firewalld backend: a source already in the zone is fine; a conflict fails ADD and takes back the other source"""
    fw = Plugin(os.path.join(BIN, "firewall"))
    with PrivateBus() as bus, netns("fdh") as host, netns("fdc") as ctr:
        run = lambda cmd, conf, env=None: fw.run(cmd, conf, host_ns=host, netns=ns_path(ctr), container_id="fd2",  # noqa: E731
                                                 extra_env=env or bus.env())
        conf = firewalld_conf(backend="firewalld")
        bus.zone("addSource", "trusted", "10.94.0.5/32")
        run("ADD", conf).ok()  # firewalld's ZONE_ALREADY_SET is not an error
        eq(bus.sources(), ["10.94.0.5/32", "fd00:94::5/128"])
        run("DEL", conf).ok()
        bus.zone("addSource", "public", "fd00:94::5/128")
        err = run("ADD", conf).error()
        eq(err["msg"], "failed to add the address fd00:94::5/128 to trusted zone: org.fedoraproject.FirewallD1.Exception: "
                       "ZONE_CONFLICT: 'fd00:94::5/128' already bound to 'public'")
        eq((bus.sources(), bus.sources("public")), ([], ["fd00:94::5/128"]), "the IPv4 source was taken back")
        bus.zone("addSource", "trusted", "10.94.0.5/32")
        run("ADD", conf).error()
        eq(bus.sources(), ["10.94.0.5/32"], "a source that was there before the failed ADD stays")
        err = run("ADD", firewalld_conf(backend="firewalld", firewalldZone="nosuch")).error()
        eq(err["msg"], "failed to add the address 10.94.0.5/32 to nosuch zone: org.fedoraproject.FirewallD1.Exception: "
                       "INVALID_ZONE: nosuch")
        nobus = {"DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/cni-bus"}
        err = run("ADD", conf, nobus).error()
        eq((err["code"], err["msg"]), (999, "firewalld backend: D-Bus: cannot connect to unix:path=/nonexistent/cni-bus: "
                                            "no such file or directory"))
        out = run("DEL", conf, nobus)
        out.ok()
        check("nothing to remove" in out.err, out.err)
        eq(filter_rules(host), [])


@test
def firewalld_is_chosen_when_on_the_bus():
    """firewall without a backend: firewalld when its name is on the bus, iptables when it is not or there is no bus"""
    fw = Plugin(os.path.join(BIN, "firewall"))
    with PrivateBus() as bus, netns("fdh") as host, netns("fdc") as ctr:
        def run(cmd, ip, cid, env):
            prev = {"cniVersion": "1.0.0", "ips": [{"address": ip + "/24"}]}
            return fw.run(cmd, firewalld_conf(prevResult=prev), host_ns=host, netns=ns_path(ctr), container_id=cid, extra_env=env)
        run("ADD", "10.94.0.6", "a", bus.env()).ok()
        eq((bus.sources(), filter_rules(host)), (["10.94.0.6/32"], []))
        run("CHECK", "10.94.0.6", "a", bus.env()).ok()
        run("DEL", "10.94.0.6", "a", bus.env()).ok()
        eq(bus.sources(), [])
        bus.stop_firewalld()
        run("ADD", "10.94.0.7", "b", bus.env()).ok()
        check("-A CNI-FORWARD -s 10.94.0.7/32 -j ACCEPT" in filter_rules(host), filter_rules(host))
        run("ADD", "10.94.0.8", "c", {"DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/cni-bus"}).ok()
        check("-A CNI-FORWARD -s 10.94.0.8/32 -j ACCEPT" in filter_rules(host), filter_rules(host))
        run("DEL", "10.94.0.7", "b", bus.env()).ok()
        check(not [r for r in filter_rules(host) if "10.94.0.7" in r], "DEL by iptables once firewalld is gone")


NFT_TABLE = ("inet", "cni_plugins_firewall")


def nft_chains(host):
    """table inet cni_plugins_firewall as `nft -j` lists it: {chain: [rule]} ({} when it is missing)."""
    r = sh("ip", "netns", "exec", host, "nft", "-j", "list", "table", *NFT_TABLE, check_rc=False)
    if r.returncode != 0:
        return {}
    chains = {}
    for item in json.loads(r.stdout)["nftables"]:
        if "chain" in item:
            chains.setdefault(item["chain"]["name"], [])
        if "rule" in item:
            chains.setdefault(item["rule"]["chain"], []).append(item["rule"])
    return chains


def nft_lines(host, chain):
    """The rules of one chain of the table as `nft list` shows them, one line each."""
    out = sh("ip", "netns", "exec", host, "nft", "list", "chain", *NFT_TABLE, chain).stdout
    return [line.strip() for line in out.splitlines()[2:-2] if line.strip() and not line.strip().startswith("type ")]


def nft_tables(host):
    text = sh("ip", "netns", "exec", host, "nft", "list", "tables").stdout
    return sorted(tuple(line.split()[1:3]) for line in text.splitlines() if line.startswith("table "))


def only_the_nft_table(host, when):
    """The nftables backend's table and nothing of iptables', in either variant."""
    eq(nft_tables(host), [NFT_TABLE], f"{when}: only the plugin's table")
    for name in ("ip_tables_names", "ip6_tables_names"):
        eq(sh("ip", "netns", "exec", host, "cat", f"/proc/net/{name}").stdout, "", f"{when}: no legacy table")


def accepts_of(host, ip):
    return [line for line in nft_lines(host, "cni-forward") if f"addr {ip} " in line]


@test
def firewall_nft_accepts_with_traffic_and_admin_chain():
    """firewall nftables: its own table, forward -> cni-forward -> CNI-ADMIN, then each address's accepts; with the
    table's forward policy drop only accepted containers pass; the admin chain comes first and is never flushed"""
    with Nodes(None, None, backend="nftables") as n:
        check(pings(n.a1, n.ip("b1")), "a1 -> b1")
        chains = nft_chains(n.host)
        eq(sorted(chains), ["CNI-ADMIN", "cni-forward", "forward"])
        eq([(r["comment"], r["expr"][-1]) for r in chains["forward"]],
           [("CNI firewall plugin rules", {"jump": {"target": "cni-forward"}})])
        lines = nft_lines(n.host, "cni-forward")
        eq(lines[0], 'jump CNI-ADMIN comment "CNI firewall plugin admin overrides"')
        for cid in ("a1", "a2", "b1"):
            ip = n.ip(cid)
            eq([line.split(" comment ")[0] for line in accepts_of(n.host, ip)],
               [f"ip daddr {ip} ct state established,related accept", f"ip saddr {ip} accept"], cid)
            check(all(f", id: {cid}" in line for line in accepts_of(n.host, ip)), "each rule names its attachment")
        only_the_nft_table(n.host, "after ADD")
        sh("ip", "netns", "exec", n.host, "nft", "add chain inet cni_plugins_firewall forward "
           "{ type filter hook forward priority 0 ; policy drop ; }")
        check(pings(n.a1, n.ip("b1")), "a1 -> b1 accepted under a drop policy")
        n.firewall("DEL", "a1").ok()
        eq(accepts_of(n.host, n.ip("a1")), [], "DEL removed a1's rules")
        check(dropped(n.a1, n.ip("b1")), "a1 -> b1 is no longer accepted")
        check(pings(n.a2, n.ip("b1")), "a2 -> b1 still is")
        n.firewall("DEL", "a1").ok()  # idempotent
        n.firewall("ADD", "a1").ok()
        check(pings(n.a1, n.ip("b1")), "a1 accepted again")
        sh("ip", "netns", "exec", n.host, "nft", f"add rule inet cni_plugins_firewall CNI-ADMIN ip daddr {n.ip('b1')} drop")
        check(dropped(n.a1, n.ip("b1")), "the admin chain's drop comes before the accepts")
        n.firewall("ADD", "a2").ok()
        n.firewall("CHECK", "a2").ok()
        eq(len(nft_lines(n.host, "CNI-ADMIN")), 1, "ADD never flushes the admin chain")
        eq(len(accepts_of(n.host, n.ip("a2"))), 2, "an ADD run again adds nothing")
        check("policy drop" in sh("ip", "netns", "exec", n.host, "nft", "list", "chain", *NFT_TABLE, "forward").stdout,
              "ADD keeps the operator's policy")
        only_the_nft_table(n.host, "at the end")


@test
def firewall_nft_same_bridge_and_isolated():
    """firewall nftables: same-bridge drops traffic between bridges, not inside one; isolated also inside the bridge"""
    with Nodes("same-bridge", "same-bridge", backend="nftables") as n:
        check(dropped(n.a1, n.ip("b1")), "a1 -> b1 must be dropped")
        check(dropped(n.b1, n.ip("a1")), "b1 -> a1 must be dropped")
        check(pings(n.a1, n.ip("a2")), "a1 -> a2 stays open")
        c = 'comment "CNI firewall plugin rules (ingressPolicy: same-bridge)"'
        eq(nft_lines(n.host, "forward")[0], f"jump cni-isolation-stage-1 {c}", "the isolation jump comes first")
        eq(sorted(nft_lines(n.host, "cni-isolation-stage-1")),
           sorted([f'iifname "{b}" oifname != "{b}" jump cni-isolation-stage-2 {c}' for b in ("cnifwa", "cnifwb")]))
        eq(sorted(nft_lines(n.host, "cni-isolation-stage-2")), sorted([f'oifname "{b}" drop {c}' for b in ("cnifwa", "cnifwb")]))
        only_the_nft_table(n.host, "same-bridge")
    with Nodes("isolated", "same-bridge", backend="nftables") as n:
        check('iifname "cnifwa" oifname "cnifwa" drop comment "CNI firewall plugin rules (ingressPolicy: isolated)"'
              in nft_lines(n.host, "cni-isolation-stage-1"), nft_lines(n.host, "cni-isolation-stage-1"))
        check(dropped(n.a1, n.ip("b1")), "a1 -> b1 must be dropped")
        if bridged_traffic_hits_iptables(n.host):
            check(dropped(n.a1, n.ip("a2")), "a1 -> a2 must be dropped")


def delete_nft_rule(host, chain, needle):
    out = sh("ip", "netns", "exec", host, "nft", "-a", "list", "chain", *NFT_TABLE, chain).stdout
    handle = next(line.split("# handle ")[1] for line in out.splitlines() if needle in line)
    sh("ip", "netns", "exec", host, "nft", "delete", "rule", *NFT_TABLE, chain, "handle", handle.strip())


@test
def firewall_nft_check_names_what_is_missing():
    """firewall nftables: CHECK fails naming a missing isolation rule or accept, and passes once ADD put them back"""
    with Nodes("isolated", "same-bridge", backend="nftables") as n:
        n.firewall("CHECK", "a1").ok()
        delete_nft_rule(n.host, "cni-isolation-stage-1", 'iifname "cnifwa" oifname "cnifwa" drop')
        eq(n.firewall("CHECK", "a1").error()["msg"],
           'firewall: ingressPolicy "isolated" needs the rule cni-isolation-stage-1 iifname "cnifwa" oifname "cnifwa" drop '
           "in table inet cni_plugins_firewall, which is missing")
        n.firewall("ADD", "a1").ok()
        n.firewall("CHECK", "a1").ok()
        delete_nft_rule(n.host, "cni-forward", f"ip saddr {n.ip('a1')} accept")
        eq(n.firewall("CHECK", "a1").error()["msg"], "firewall (nftables): the rules accepting the attachment's traffic are "
                                                     "missing from cni-forward in table inet cni_plugins_firewall")
        n.firewall("CHECK", "a2").ok()
        n.firewall("ADD", "a1").ok()
        n.firewall("CHECK", "a1").ok()
        eq(len(accepts_of(n.host, n.ip("a1"))), 2, "the retried ADD made both rules anew, no third")
        delete_nft_rule(n.host, "cni-forward", "jump CNI-ADMIN")
        eq(n.firewall("CHECK", "a2").error()["msg"], "firewall (nftables): the jumps forward -> cni-forward -> CNI-ADMIN are "
                                                     "missing in table inet cni_plugins_firewall")
        err = n.firewall("ADD", "a2", iptablesAdminChainName="cni-forward").error()
        eq(err["msg"], 'firewall (nftables): iptablesAdminChainName "cni-forward" names one of the plugin\'s own chains')


def fw_conf(network, ip, backend=None, **keys):
    c = {"cniVersion": "1.1.0", "name": network, "type": "firewall",
         "prevResult": {"cniVersion": "1.1.0", "ips": [{"address": ip + "/24"}]}}
    if backend:
        c["backend"] = backend
    c.update(keys)
    return c


def gc_conf(network, keep, backend=None):
    c = {k: v for k, v in fw_conf(network, "10.0.0.1", backend).items() if k != "prevResult"}
    c["cni.dev/valid-attachments"] = [{"containerID": cid, "ifname": "eth0"} for cid in keep]
    return c


def rules_of(host, ip):
    """The attachment rules of `ip` in both backends: iptables' CNI-FORWARD and the nftables table."""
    ipt = [r for r in filter_rules(host) if f" {ip}/32 " in r]
    nft = accepts_of(host, ip) if "cni-forward" in nft_chains(host) else []
    return ipt + nft


def records():
    return set(os.listdir(FIREWALL_RECORDS)) if os.path.isdir(FIREWALL_RECORDS) else set()


@test
def firewall_gc_removes_only_gone_attachments_rules():
    """firewall GC, each backend: the rules of the network's attachments not listed go; the listed ones', another network's
    and an address another attachment holds stay"""
    fw = Plugin(os.path.join(BIN, "firewall"))
    for backend in ("iptables", "nftables"):
        with netns("fgh") as host, netns("fgc") as ctr:
            def run(cmd, conf, cid):
                return fw.run(cmd, conf, host_ns=host, netns=ns_path(ctr), container_id=cid)
            before = records()
            run("ADD", fw_conf("fwgc", "10.95.0.2", backend), "g1").ok()
            run("ADD", fw_conf("fwgc", "10.95.0.3", backend), "g2").ok()
            run("ADD", fw_conf("fwgc", "10.95.0.5", backend), "g4").ok()
            run("ADD", fw_conf("other", "10.95.0.4", backend), "g3").ok()
            run("ADD", fw_conf("other", "10.95.0.5", backend), "g5").ok()  # g4's address, in another network
            run("GC", gc_conf("fwgc", ["g1"], backend), "").ok()
            eq(rules_of(host, "10.95.0.3"), [], f"{backend}: g2's rules went")
            for ip in ("10.95.0.2", "10.95.0.4", "10.95.0.5"):
                check(rules_of(host, ip), f"{backend}: {ip}'s rules stay")
            run("GC", gc_conf("fwgc", [], backend), "").ok()
            eq(rules_of(host, "10.95.0.2"), [], f"{backend}: g1's rules went")
            check(rules_of(host, "10.95.0.4"), f"{backend}: another network's rules stay")
            run("DEL", fw_conf("other", "10.95.0.4", backend), "g3").ok()
            run("DEL", fw_conf("other", "10.95.0.5", backend), "g5").ok()
            eq(rules_of(host, "10.95.0.4") + rules_of(host, "10.95.0.5"), [], f"{backend}: DEL removed the rest")
            eq(records() - before, set(), f"{backend}: no record left")


@test
def firewall_del_and_gc_work_across_backends():
    """firewall: an attachment made with iptables is removed by a DEL or GC configured for nftables, and the reverse"""
    fw = Plugin(os.path.join(BIN, "firewall"))
    with netns("fxh") as host, netns("fxc") as ctr:
        def run(cmd, conf, cid="x1"):
            return fw.run(cmd, conf, host_ns=host, netns=ns_path(ctr), container_id=cid)
        for made, removed in (("iptables", "nftables"), ("nftables", None), ("nftables", "iptables")):
            run("ADD", fw_conf("fwx", "10.96.0.2", made)).ok()
            check(rules_of(host, "10.96.0.2"), f"{made} ADD")
            run("DEL", fw_conf("fwx", "10.96.0.2", removed)).ok()
            eq(rules_of(host, "10.96.0.2"), [], f"made with {made}, DEL with {removed or 'no backend'}")
            run("ADD", fw_conf("fwx", "10.96.0.3", made), "x2").ok()
            run("GC", gc_conf("fwx", [], removed)).ok()
            eq(rules_of(host, "10.96.0.3"), [], f"made with {made}, GC with {removed or 'no backend'}")


@test
def firewall_del_reads_no_chain_where_the_attachment_has_no_record():
    """firewall DEL: where the attachment's record is, it acts there only (a copy of its rule in the other backend,
    not its own, stays: that chain was not read); with no record anywhere it reads both, as the reference's DEL"""
    fw = Plugin(os.path.join(BIN, "firewall"))
    with netns("frh") as host, netns("frc") as ctr:
        def run(cmd, conf, cid="r1"):
            return fw.run(cmd, conf, host_ns=host, netns=ns_path(ctr), container_id=cid)
        copy = ("ip", "netns", "exec", host, "iptables-nft")
        run("ADD", fw_conf("fwr", "10.96.1.2", "nftables")).ok()
        sh(*copy, "-N", "CNI-FORWARD")
        sh(*copy, "-A", "CNI-FORWARD", "-s", "10.96.1.2/32", "-j", "ACCEPT")
        run("DEL", fw_conf("fwr", "10.96.1.2", "iptables")).ok()
        eq(accepts_of(host, "10.96.1.2"), [], "the recorded nftables rules went")
        eq(filter_rules(host), ["-A CNI-FORWARD -s 10.96.1.2/32 -j ACCEPT"], "the iptables chain was not read")
        run("DEL", fw_conf("fwr", "10.96.1.2", "nftables")).ok()
        eq(filter_rules(host), [], "without a record DEL reads both backends")


@test
def firewall_add_that_died_before_its_handles_were_saved_is_still_found():
    """firewall, each backend: ADD notes the network and addresses before its commit, so an ADD that died before it
    saved the handles (the record without them) leaves rules that a DEL, and a GC, still remove"""
    fw = Plugin(os.path.join(BIN, "firewall"))
    for backend in ("iptables", "nftables"):
        with netns("fdh") as host, netns("fdc") as ctr:
            def run(cmd, conf, cid):
                return fw.run(cmd, conf, host_ns=host, netns=ns_path(ctr), container_id=cid)
            for verb, conf in (("DEL", fw_conf("fwd", "10.96.2.2", backend)), ("GC", gc_conf("fwd", [], backend))):
                before = records()
                run("ADD", fw_conf("fwd", "10.96.2.2", backend), "d1").ok()
                made = records() - before
                eq(len(made), 1, f"{backend}: one record")
                path = os.path.join(FIREWALL_RECORDS, made.pop())
                with open(path) as f:
                    noted = [ln for ln in f.read().splitlines() if ln.startswith(("net ", "ip "))]
                with open(path, "w") as f:
                    f.write("\n".join(noted) + "\n")
                check(rules_of(host, "10.96.2.2"), f"{backend}: the rules are there")
                run(verb, conf, "d1").ok()
                eq(rules_of(host, "10.96.2.2"), [], f"{backend}: {verb} found them by the noted record")
                eq(records() - before, set(), f"{backend}: {verb} dropped the record")


@test
def firewall_status_answers_50_without_its_backend():
    """firewall STATUS: passes where the chosen backend works, code 50 naming it where it does not"""
    fw = Plugin(os.path.join(BIN, "firewall"))
    with netns("fsh") as host:
        conf = {"cniVersion": "1.1.0", "name": "fws", "type": "firewall"}
        for backend in (None, "iptables", "nftables"):
            fw.run("STATUS", dict(conf, **({"backend": backend} if backend else {})), host_ns=host).ok()
        err = fw.run("STATUS", dict(conf, backend="firewalld"), host_ns=host,
                     extra_env={"DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/cni-bus"}).error()
        eq((err["code"], err["msg"]), (50, "firewall: backend firewalld is not usable here"))


if __name__ == "__main__":
    run_all(cleanup=[BIN])
