#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Root tests of the macvlan applet, with a veth in a throwaway host namespace as the master:
siblings talk in bridge mode and not in private mode, mode/MTU/MAC as configured, the master
taken from a chained prevResult (its parent link's index), errors for a bad master, MTU or mode, rollback, idempotent DEL, and Debian's Go macvlan giving
the same state."""
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import (BIN, REF, Plugin, addrs, check, check_skipped_link_local,  # noqa: E402
                     eq, link, link_local, netns, ns_path, run_all, sh, test)


def conf(data, mode="bridge", ipam=True, **extra):
    c = {"cniVersion": "1.0.0", "name": "mv-test", "type": "macvlan", "master": "parent0", "mode": mode}
    if ipam:
        c["ipam"] = {"type": "host-local", "subnet": "10.76.0.0/24", "dataDir": data}
    c.update(extra)
    return c


def macvlan(plugin_dir=BIN):
    return Plugin(os.path.join(plugin_dir, "macvlan"))


class Env:
    """A host namespace holding the master (a veth), container namespaces and a data dir."""

    def __init__(self, containers):
        self.data = tempfile.mkdtemp()
        self.stack = [netns("host")] + [netns("ctr") for _ in range(containers)]
        self.names = [cm.__enter__() for cm in self.stack]
        host = self.names[0]
        sh("ip", "-n", host, "link", "add", "parent0", "mtu", "1450", "type", "veth", "peer", "name", "parent1")
        sh("ip", "-n", host, "link", "set", "parent0", "up")
        sh("ip", "-n", host, "link", "set", "parent1", "up")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for cm in reversed(self.stack):
            cm.__exit__(None, None, None)
        shutil.rmtree(self.data)


def run(cmd, host, ctr, c, cid, plugin_dir=BIN, **kw):
    return macvlan(plugin_dir).run(cmd, c, host_ns=host, netns=ns_path(ctr), container_id=cid, **kw)


def details(ns, dev):
    return sh("ip", "-n", ns, "-d", "link", "show", dev).stdout


@test
def bridge_mode_siblings_talk_and_del_cleans_up():
    """macvlan bridge mode: the state as configured, siblings reach each other, CHECK, DEL"""
    with Env(2) as e:
        host, c1, c2 = e.names
        c = conf(e.data, mtu=1400, mac="0a:00:00:00:00:31")
        r = run("ADD", host, c1, c, "mv-1").ok().json()
        eq(r["interfaces"], [{"mac": "0a:00:00:00:00:31", "name": "eth0", "sandbox": ns_path(c1)}])
        eq(r["ips"], [{"address": "10.76.0.2/24", "gateway": "10.76.0.1", "interface": 0}])
        d = details(c1, "eth0")
        check("macvlan mode bridge" in d and "mtu 1400" in d, d)
        run("ADD", host, c2, conf(e.data), "mv-2").ok()
        sh("ip", "netns", "exec", c1, "ping", "-c1", "-W2", "10.76.0.3")
        run("CHECK", host, c1, dict(c, prevResult=r), "mv-1").ok()
        run("DEL", host, c1, c, "mv-1").ok()
        check(link(c1, "eth0") is None)
        eq(sorted(os.listdir(os.path.join(e.data, "mv-test"))).count("10.76.0.2"), 0)
        run("DEL", host, c1, c, "mv-1").ok()
        macvlan().run("DEL", c, host_ns=host, netns="", container_id="mv-1").ok()


@test
def private_mode_isolates_siblings():
    """macvlan private mode: siblings on the same master cannot reach each other"""
    with Env(2) as e:
        host, c1, c2 = e.names
        run("ADD", host, c1, conf(e.data, mode="private"), "mv-p1").ok()
        run("ADD", host, c2, conf(e.data, mode="private"), "mv-p2").ok()
        check("macvlan mode private" in details(c1, "eth0"))
        r = sh("ip", "netns", "exec", c1, "ping", "-c1", "-W1", "10.76.0.3", check_rc=False)
        check(r.returncode != 0, "private mode must not forward between siblings")


@test
def mac_sources_l2_and_bcqueuelen():
    """macvlan: config mac < CNI_ARGS MAC < runtimeConfig mac; L2 without IPAM; bcqueuelen"""
    with Env(3) as e:
        host, c1, c2, c3 = e.names
        run("ADD", host, c1, conf(e.data, mac="0a:00:00:00:00:41"), "mv-m1", args="IgnoreUnknown=1;MAC=0a:00:00:00:00:42").ok()
        eq(link(c1, "eth0")["address"], "0a:00:00:00:00:42")
        run("ADD", host, c2, conf(e.data, runtimeConfig={"mac": "0a:00:00:00:00:43"}), "mv-m2",
            args="IgnoreUnknown=1;MAC=0a:00:00:00:00:42").ok()
        eq(link(c2, "eth0")["address"], "0a:00:00:00:00:43")
        r = run("ADD", host, c3, conf(e.data, ipam=False, bcqueuelen=123), "mv-l2").ok().json()
        check("UP" in link(c3, "eth0")["flags"] and "ips" not in r, r)
        check("bcqueuelen 123" in details(c3, "eth0"), details(c3, "eth0"))


@test
def skip_ipv6_link_local():
    """macvlan skipIPv6LinkLocal (cni-all's own key): no IPv6 link-local address on an IPv4-only or L2 link, CHECK notices one; kept with an IPv6 result"""
    with Env(3) as e:
        host, c1, c2, c3 = e.names
        c = conf(e.data, skipIPv6LinkLocal=True)
        r = run("ADD", host, c1, c, "mv-q").ok().json()
        check_skipped_link_local(lambda cmd, cc: run(cmd, host, c1, cc, "mv-q"), c, r, c1, "10.76.0.2/24")
        run("ADD", host, c2, conf(e.data, ipam=False, skipIPv6LinkLocal=True), "mv-ql2").ok()
        check("UP" in link(c2, "eth0")["flags"])
        eq(link_local(c2, "eth0", wait=0.5), [])
        dual = conf(e.data, skipIPv6LinkLocal=True)
        dual["ipam"] = {"type": "host-local", "dataDir": e.data,
                        "ranges": [[{"subnet": "10.76.0.0/24"}], [{"subnet": "fd76::/64"}]]}
        run("ADD", host, c3, dual, "mv-d").ok()
        check("addrgenmode none" not in details(c3, "eth0"))
        check(link_local(c3, "eth0"), addrs(c3, "eth0"))
        for ctr, cc, cid in [(c1, c, "mv-q"), (c3, dual, "mv-d")]:
            run("DEL", host, ctr, cc, cid).ok()
        eq(sorted(f for f in os.listdir(os.path.join(e.data, "mv-test")) if f[0].isdigit()), [])


def parent_index(ns, dev):
    """The index of the link `dev` is a macvlan of (in the namespace that link is in)."""
    d = json.loads(sh("ip", "-n", ns, "-j", "-d", "link", "show", dev).stdout)[0]
    return d["link_index"] if "link_index" in d else link(ns, d["link"])["ifindex"]


@test
def master_from_a_chained_prev_result():
    """macvlan without master, chained: the prevResult's first host-side interface (container-side
    with linkInContainer) is the parent, CHECK finds it again; otherwise the default route's link"""
    with Env(1) as e:
        host, c1 = e.names
        sh("ip", "-n", host, "link", "add", "upper0", "type", "veth", "peer", "name", "upper1")
        sh("ip", "-n", host, "link", "set", "upper1", "up")
        sh("ip", "-n", host, "addr", "add", "10.78.0.1/24", "dev", "parent0")
        sh("ip", "-n", host, "route", "add", "default", "via", "10.78.0.254")  # parent0: the default

        def chained(*interfaces, **extra):
            c = conf(e.data, ipam=False, **extra)
            if "master" not in extra:
                del c["master"]
            c["prevResult"] = {"cniVersion": "1.0.0", "interfaces": list(interfaces)}
            return c

        sandboxed = {"name": "eth7", "sandbox": ns_path(c1)}
        c = chained(sandboxed, {"name": "upper1", "mac": "0a:00:00:00:00:71"}, {"name": "upper0"})
        r = run("ADD", host, c1, c, "mv-c").ok().json()
        eq(parent_index(c1, "eth0"), link(host, "upper1")["ifindex"], "the prevResult's first host-side interface")
        eq([i["name"] for i in r["interfaces"]], ["eth0", "upper1"], "the master is listed after the macvlan")
        run("CHECK", host, c1, dict(c, prevResult=r), "mv-c").ok()
        sh("ip", "-n", host, "link", "del", "upper0")
        check("upper1" in run("CHECK", host, c1, dict(c, prevResult=r), "mv-c").error()["msg"], "CHECK looks for it")
        run("DEL", host, c1, c, "mv-c").ok()

        run("ADD", host, c1, chained(sandboxed), "mv-c").ok()  # nothing host-side: the default route's link
        eq(parent_index(c1, "eth0"), link(host, "parent0")["ifindex"])
        run("DEL", host, c1, c, "mv-c").ok()

        sh("ip", "-n", c1, "link", "add", "inner0", "type", "veth", "peer", "name", "inner1")
        c = chained({"name": "parent1"}, {"name": "inner0", "sandbox": ns_path(c1)}, linkInContainer=True)
        r = run("ADD", host, c1, c, "mv-c").ok().json()
        eq(parent_index(c1, "eth0"), link(c1, "inner0")["ifindex"], "linkInContainer: the container-side interface")
        run("CHECK", host, c1, dict(c, prevResult=r), "mv-c").ok()
        run("DEL", host, c1, c, "mv-c").ok()

        c = chained({"name": "upper1"}, master="parent1")  # a configured master wins
        r = run("ADD", host, c1, c, "mv-c").ok().json()
        eq(parent_index(c1, "eth0"), link(host, "parent1")["ifindex"])
        eq(len(r["interfaces"]), 1)
        run("DEL", host, c1, c, "mv-c").ok()


@test
def errors_and_rollback():
    """macvlan: bad master, MTU and mode are clear errors; a failed ADD leaves no link or address"""
    with Env(1) as e:
        host, c1 = e.names
        eq(run("ADD", host, c1, conf(e.data, master="nope0"), "mv-e").error()["msg"],
           'failed to lookup master "nope0": Link not found')
        eq(run("ADD", host, c1, conf(e.data, mtu=9000), "mv-e").error()["msg"],
           "invalid MTU 9000, must be [0, master MTU(1450)]")
        eq(run("ADD", host, c1, conf(e.data, mode="fast"), "mv-e").error()["msg"], 'unknown macvlan mode: "fast"')
        eq(run("ADD", host, c1, conf(e.data, mac="zz"), "mv-e").error()["msg"],
           "invalid args zz for MAC addr: address zz: invalid MAC address")
        for bad in (dict(mode="fast"), dict(mac="zz")):  # checked by ADD alone, as in the reference
            run("DEL", host, c1, conf(e.data, **bad), "mv-e").ok()
        check(link(c1, "eth0") is None, "the refused ADDs made no link")
        eq([f for f in os.listdir(os.path.join(e.data, "mv-test")) if f[0].isdigit()]
           if os.path.isdir(os.path.join(e.data, "mv-test")) else [], [], "nor allocations")
        sh("ip", "-n", c1, "link", "add", "eth0", "type", "veth", "peer", "name", "x0")
        err = run("ADD", host, c1, conf(e.data), "mv-e").error()
        check(err["msg"].startswith('failed to rename macvlan to "eth0"'), err)
        eq([l for l in sh("ip", "-n", c1, "-br", "link").stdout.splitlines() if l.startswith("veth")], [],
           "the temporary link was removed")
        full = conf(e.data)
        full["ipam"]["subnet"] = "10.77.0.0/31"
        check("too small" in run("ADD", host, c1, full, "mv-f", ifname="eth1").error()["msg"])
        check(link(c1, "eth1") is None, "no link for the failed ADD")
        with netns("ctr") as gone:
            gone_path = ns_path(gone)
            run("ADD", host, gone, conf(e.data), "mv-g").ok()
        macvlan().run("DEL", conf(e.data), host_ns=host, netns=gone_path, container_id="mv-g").ok()
        eq([f for f in os.listdir(os.path.join(e.data, "mv-test")) if f.startswith("10.")], [])


@test
def same_state_as_the_go_macvlan():
    """macvlan: the Go plugin and cni-all give the same result and link"""
    if not REF:
        raise AssertionError("Debian's containernetworking-plugins is not installed")
    seen = {}
    for impl, plugin_dir in [("go", REF), ("ours", BIN)]:
        with Env(1) as e:
            host, c1 = e.names
            c = conf(e.data, mtu=1400, mac="0a:00:00:00:00:51")
            c["cniVersion"] = "0.4.0"
            out = run("ADD", host, c1, c, "mv-diff", plugin_dir=plugin_dir).ok()
            d = re.sub(r"^\d+: ", "", details(c1, "eth0"))
            d = re.sub(r"fe80::[0-9a-f:]+", "LINKLOCAL", d)
            d = d.replace(host, "HOSTNS")
            seen[impl] = {"result": out.out.replace(ns_path(c1), "NETNS"),
                          "link": re.sub(r"(@if)\d+", r"\1N", d).splitlines()[:3],
                          "addrs": sh("ip", "-n", c1, "-4", "-br", "addr").stdout,
                          "proxy_arp": sh("ip", "netns", "exec", c1, "cat", "/proc/sys/net/ipv4/conf/eth0/proxy_arp").stdout,
                          "arp_notify": sh("ip", "netns", "exec", c1, "cat", "/proc/sys/net/ipv4/conf/eth0/arp_notify").stdout}
            # v1.9 also sets ndisc_notify; Debian's 1.1.1 does not, so it is checked apart
            ndisc_notify = sh("ip", "netns", "exec", c1, "cat", "/proc/sys/net/ipv6/conf/eth0/ndisc_notify").stdout
            if impl == "ours":
                eq(ndisc_notify, "1\n", "ndisc_notify")
            other = BIN if impl == "go" else REF
            run("DEL", host, c1, c, "mv-diff", plugin_dir=other).ok()
            check(link(c1, "eth0") is None)
    for key in seen["go"]:
        eq(seen["ours"][key], seen["go"][key], key)
    eq(seen["ours"]["arp_notify"], "1\n")


if __name__ == "__main__":
    run_all(cleanup=[BIN])
