#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Root tests of the firewall applet after our bridge: with ingressPolicy open two bridges'
containers reach each other; same-bridge blocks traffic between the bridges but not inside
one; isolated also blocks it inside the bridge (when the kernel passes bridged traffic to
iptables). Also the exact rules, DEL removing the per-address rules, CHECK, and refused
input. Each test builds its own host and container namespaces."""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import Plugin, check, eq, install_dir, netns, ns_path, run_all, sh, test  # noqa: E402
from conflist import run_add, run_check, run_del  # noqa: E402

CNI_ALL = os.environ["CNI_ALL"]
BIN = install_dir(CNI_ALL)


def conflist(data, bridge, subnet, policy=None, name=None):
    fwc = {"type": "firewall"}
    if policy:
        fwc["ingressPolicy"] = policy
    return {"cniVersion": "1.0.0", "name": name or "fw-" + bridge, "plugins": [
        {"type": "bridge", "bridge": bridge, "isGateway": True,
         "ipam": {"type": "host-local", "subnet": subnet, "routes": [{"dst": "0.0.0.0/0"}], "dataDir": data}}, fwc]}


def pings(ctr, ip):
    return sh("ip", "netns", "exec", ctr, "ping", "-c1", "-W1", ip, check_rc=False).returncode == 0


def filter_rules(host):
    out = sh("ip", "netns", "exec", host, "iptables-legacy-save", "-t", "filter").stdout
    return [line for line in out.splitlines() if line.startswith("-A")]


def bridged_traffic_hits_iptables(host):
    r = sh("ip", "netns", "exec", host, "cat", "/proc/sys/net/bridge/bridge-nf-call-iptables", check_rc=False)
    return r.returncode == 0 and r.stdout.strip() == "1"


class Nodes:
    """One host, bridge A with containers a1 and a2, bridge B with container b1."""

    def __init__(self, policy_a, policy_b):
        self.policies = (policy_a, policy_b)

    def __enter__(self):
        self.data = tempfile.mkdtemp()
        self._ns = [netns(p) for p in ("fh", "fa1", "fa2", "fb1")]
        self.host, self.a1, self.a2, self.b1 = [n.__enter__() for n in self._ns]
        self.ca = conflist(self.data, "cnifwa", "10.92.0.0/24", self.policies[0])
        self.cb = conflist(self.data, "cnifwb", "10.93.0.0/24", self.policies[1])
        self.results = {}
        for cid, conf, ctr in [("a1", self.ca, self.a1), ("a2", self.ca, self.a2), ("b1", self.cb, self.b1)]:
            self.results[cid] = run_add(BIN, conf, self.host, ns_path(ctr), cid)
        return self

    def ip(self, cid):
        return self.results[cid]["ips"][0]["address"].split("/")[0]

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
        check(not pings(n.a1, n.ip("b1")), "a1 -> b1 must be dropped")
        check(not pings(n.b1, n.ip("a1")), "b1 -> a1 must be dropped")
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
        check(not pings(n.a1, n.ip("b1")), "a1 -> b1 must be dropped")
        if bridged_traffic_hits_iptables(n.host):
            check(not pings(n.a1, n.ip("a2")), "a1 -> a2 must be dropped")
        else:
            print("# bridged traffic bypasses iptables here (no br_netfilter): only the rule is checked")


@test
def firewall_refuses_bad_input():
    """firewall: firewalld backend is code 2, unknown policy, missing prevResult"""
    fw = Plugin(os.path.join(BIN, "firewall"))
    prev = {"cniVersion": "1.0.0", "ips": [{"address": "10.92.0.9/24"}]}
    base = {"cniVersion": "1.0.0", "name": "fw", "type": "firewall", "prevResult": prev}
    with netns("fh") as host, netns("fc") as ctr:
        for extra, code, msg in [({"backend": "firewalld"}, 2, "backend firewalld not supported"),
                                 ({"backend": "pf"}, 999, 'unknown firewall backend "pf"'),
                                 ({"ingressPolicy": "strict"}, 999, 'unknown ingress policy: "strict"'),
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


if __name__ == "__main__":
    run_all(cleanup=[BIN])
