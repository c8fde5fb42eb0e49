#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Root tests of the sbr applet: per-address routing tables and source rules in the container
(dual stack: one table per address), traffic from each source through its own table, `table`
mode (rules only), static `gateways`, addSourceHints, which prevResult addresses count,
rollback of a failed ADD, ADD, DEL, ADD on an interface that stays, the record of moved routes
(DEL, GC, a bad record, a linked folder), idempotent DEL (twice, empty netns, netns or link gone), CHECK, and
the Go sbr leaving the same rules and tables. The container interface is a veth the test wires
to a throwaway host namespace."""
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import BIN, REF, Plugin, check, eq, netns, ns_path, run_all, sh, test  # noqa: E402


def wire(host, ctr):
    """eth0 in the container (10.87.0.2/24, fd00:87::2/64, default routes) to h0 in the host."""
    sh("ip", "-n", host, "link", "add", "h0", "type", "veth", "peer", "name", "eth0", "netns", ctr)
    sh("ip", "-n", host, "addr", "add", "10.87.0.1/24", "dev", "h0")
    sh("ip", "-n", host, "addr", "add", "fd00:87::1/64", "dev", "h0", "nodad")
    sh("ip", "-n", host, "link", "set", "h0", "up")
    sh("ip", "-n", ctr, "link", "set", "lo", "up")
    sh("ip", "-n", ctr, "addr", "add", "10.87.0.2/24", "dev", "eth0")
    sh("ip", "-n", ctr, "addr", "add", "fd00:87::2/64", "dev", "eth0", "nodad")
    sh("ip", "-n", ctr, "link", "set", "eth0", "up")
    sh("ip", "-n", ctr, "route", "add", "default", "via", "10.87.0.1")


def prev(ctr, v6=True):
    ips = [{"address": "10.87.0.2/24", "gateway": "10.87.0.1", "interface": 0}]
    if v6:
        ips.append({"address": "fd00:87::2/64", "gateway": "fd00:87::1", "interface": 0})
    return {"cniVersion": "0.4.0", "interfaces": [{"name": "eth0", "sandbox": ns_path(ctr)}], "ips": ips}


def conf(ctr, v6=True, **extra):
    c = {"cniVersion": "0.4.0", "name": "sbr-test", "type": "sbr", "prevResult": prev(ctr, v6)}
    c.update(extra)
    return c


def run(cmd, c, host, ctr, plugin_dir=BIN, netns=None):
    return Plugin(os.path.join(plugin_dir, "sbr")).run(cmd, c, host_ns=host, netns=ns_path(ctr) if netns is None else netns,
                                                       container_id="s-1")


def lines(ns, *args):
    """Output lines of `ip -n ns ARGS`; none when it fails (a table that does not exist yet)."""
    return [x.strip() for x in sh("ip", "-n", ns, *args, check_rc=False).stdout.splitlines() if x.strip()]


def routing(ctr):
    """Rules and every table's routes of eth0, without what the kernel adds on its own."""
    def added(rules):  # all but the kernel's own rules (lookup local, main, default)
        return [r for r in rules if not r.endswith(("lookup local", "lookup main", "lookup default"))]
    out = {"rules4": added(lines(ctr, "rule")), "rules6": added(lines(ctr, "-6", "rule"))}
    for t in ("main", "100", "101"):
        out[t] = lines(ctr, "route", "show", "table", t) + [r for r in lines(ctr, "-6", "route", "show", "table", t)
                                                              if not r.startswith("fe80::")]
    return out


@test
def sbr_tables_rules_and_traffic():
    """sbr: one table per address (100, 101), source rules, main routes moved; traffic per source; DEL"""
    with netns("sh") as host, netns("sc") as ctr:
        wire(host, ctr)
        res = run("ADD", conf(ctr), host, ctr).ok().json()
        eq([ip["address"] for ip in res["ips"]], ["10.87.0.2/24", "fd00:87::2/64"])
        got = routing(ctr)
        eq(got["rules4"], ["32765:\tfrom 10.87.0.2 lookup 100"])
        eq(got["rules6"], ["32765:\tfrom fd00:87::2 lookup 101"])
        eq(got["main"], [])
        # The IPv6 prefix route has neither source nor gateway: the reference copies such a route
        # into every address's table, so table 100 gets it too.
        eq(got["100"], ["default via 10.87.0.1 dev eth0", "10.87.0.0/24 dev eth0 proto kernel scope link src 10.87.0.2",
                        "fd00:87::/64 dev eth0 proto kernel metric 256 pref medium"])
        check("default via fd00:87::1 dev eth0 metric 1024 pref medium" in got["101"], got["101"])
        check("fd00:87::/64 dev eth0 proto kernel metric 256 pref medium" in got["101"], got["101"])
        sh("ip", "netns", "exec", ctr, "ping", "-c1", "-W2", "-I", "10.87.0.2", "10.87.0.1")
        sh("ip", "netns", "exec", ctr, "ping", "-c1", "-W2", "-I", "fd00:87::2", "fd00:87::1")
        run("CHECK", conf(ctr), host, ctr).ok()

        run("DEL", conf(ctr), host, ctr).ok()
        after = routing(ctr)
        eq((after["rules4"], after["rules6"], after["100"], after["101"]), ([], [], [], []))
        run("DEL", conf(ctr), host, ctr).ok()
        eq(run("CHECK", conf(ctr), host, ctr).error()["msg"], 'sbr: no rule "from 10.87.0.2 lookup ..." for eth0')
        run("DEL", conf(ctr), host, ctr, netns="").ok()
        run("DEL", conf(ctr), host, ctr, netns="/run/netns/sbr-gone-ns").ok()
        check(not os.path.exists("/run/netns/sbr-gone-ns"), "locking the netns file never creates it")
        sh("ip", "-n", ctr, "link", "del", "eth0")
        run("DEL", conf(ctr), host, ctr).ok()


def kernel_state(ctr):
    """Every rule and every table's routes, both families, as `ip rule` and `ip route show table all` print them."""
    return {f: lines(ctr, f, "rule") + lines(ctr, f, "route", "show", "table", "all") for f in ("-4", "-6")}


@test
def sbr_add_del_add_on_an_interface_that_stays():
    """sbr: ADD, DEL, ADD leaves the rules and routes of one ADD, and ADD, DEL those before it: DEL
    gives the main table back the routes ADD moved (and not those ADD made itself), also with
    gateways and addSourceHints"""
    with netns("sh") as host, netns("sc") as ctr:
        wire(host, ctr)
        sh("ip", "-n", host, "addr", "add", "10.87.0.254/24", "dev", "h0")
        sh("ip", "-n", ctr, "route", "add", "10.88.0.0/16", "via", "10.87.0.1")
        # The kernel's own IPv6 routes of eth0 come after it is up, its link-local address's local
        # route only once duplicate address detection is done (a second or two): waited for, so
        # neither appears between two snapshots.
        for _ in range(500):
            if "fe80::/64 dev eth0 proto kernel metric 256 pref medium" in lines(ctr, "-6", "route") and any(
                    x.startswith("local fe80::") for x in lines(ctr, "-6", "route", "show", "table", "local")):
                break
            time.sleep(0.01)
        routes = [{"dst": "0.0.0.0/0", "gw": "10.87.0.1"}, {"dst": "10.88.0.0/16", "gw": "10.87.0.1"}]
        plain = conf(ctr, prevResult=dict(prev(ctr), routes=routes))  # wire's default and 10.88/16: the main plugin's
        fixed = dict(conf(ctr, v6=False, prevResult=dict(prev(ctr, v6=False), routes=routes)),
                     gateways=["10.87.0.254"], addSourceHints=True)
        for c in (plain, fixed):
            before = kernel_state(ctr)
            run("ADD", c, host, ctr).ok()
            one_add = kernel_state(ctr)
            run("DEL", c, host, ctr).ok()
            eq(kernel_state(ctr), before, "ADD, DEL")
            run("ADD", c, host, ctr).ok()
            eq(kernel_state(ctr), one_add, "ADD, DEL, ADD")
            sh("ip", "netns", "exec", ctr, "ping", "-c1", "-W2", "-I", "10.87.0.2", "10.87.0.1")
            run("DEL", c, host, ctr).ok()
            eq(kernel_state(ctr), before, "ADD, DEL, ADD, DEL")


@test
def sbr_table_mode_gateways_and_hints():
    """sbr: `table` adds rules only (any u32 id, nothing past it); `gateways` overrides the gateway;
    addSourceHints keeps subnet routes"""
    with netns("sh") as host, netns("sc") as ctr:
        wire(host, ctr)
        run("ADD", conf(ctr, table=500), host, ctr).ok()
        eq(routing(ctr)["rules4"], ["32765:\tfrom 10.87.0.2 lookup 500"])
        check("default via 10.87.0.1 dev eth0" in lines(ctr, "route"), "main routes untouched")
        run("CHECK", conf(ctr, table=500), host, ctr).ok()
        run("DEL", conf(ctr, table=500), host, ctr).ok()
        eq(routing(ctr)["rules4"], [])
        # A table is a Go int: past the kernel's 32 bits ADD refuses it (Go's netlink would use
        # table 500 here), negative too; its DEL decodes it and removes nothing else.
        for table in (2**32 + 500, -1):
            eq(run("ADD", conf(ctr, table=table), host, ctr).error()["msg"],
               f"invalid table {table}: a routing table id lies in [0, 4294967295]")
        eq(routing(ctr)["rules4"], [])
        run("ADD", conf(ctr, table=2**32 - 1), host, ctr).ok()
        eq(routing(ctr)["rules4"], ["32765:\tfrom 10.87.0.2 lookup 4294967295"])
        run("DEL", conf(ctr, table=2**32 + 500), host, ctr).ok()
        eq(routing(ctr)["rules4"], ["32765:\tfrom 10.87.0.2 lookup 4294967295"], "another table's rule stays")
        run("DEL", conf(ctr, table=2**32 - 1), host, ctr).ok()
        eq(routing(ctr)["rules4"], [])

        sh("ip", "-n", host, "addr", "add", "10.87.0.254/24", "dev", "h0")
        run("ADD", conf(ctr, v6=False, gateways=["10.87.0.254"], addSourceHints=True), host, ctr).ok()
        got = routing(ctr)
        eq(got["100"][0], "default via 10.87.0.254 dev eth0")
        eq(got["main"], ["10.87.0.0/24 dev eth0 scope link src 10.87.0.2"])  # replaced with the hint
        run("DEL", conf(ctr, v6=False), host, ctr).ok()
        eq(run("ADD", conf(ctr, gateways=["10.0.0.1", "10.0.0.2"]), host, ctr).error()["msg"],
           "gateways list contains multiple IPv4 addresses: 10.0.0.1 and 10.0.0.2")
        eq(run("ADD", conf(ctr, gateways=["nope"]), host, ctr).error()["msg"], "invalid static gateway IP address: nope")


@test
def sbr_failed_add_is_undone():
    """sbr: a gateway the kernel refuses fails the ADD; rules, tables and main routes are as before;
    prevResult errors"""
    with netns("sh") as host, netns("sc") as ctr:
        wire(host, ctr)
        before = routing(ctr)
        err = run("ADD", conf(ctr, v6=False, gateways=["192.0.2.1"]), host, ctr).error()
        check(err["msg"].startswith("Failed to add default route to 192.0.2.1: "), err["msg"])
        eq(routing(ctr), before)
        c = conf(ctr)
        del c["prevResult"]
        eq(run("ADD", c, host, ctr).error()["msg"], "This plugin must be called as chained plugin")
        eq(run("ADD", dict(c, prevResult=dict(prev(ctr), ips=[])), host, ctr).error()["msg"],
           "No IP addresses supplied on interface: eth0")
        # The Go sbr reads prevResult as given: without a cniVersion it is no 0.4.0 result.
        unversioned = {k: v for k, v in prev(ctr).items() if k != "cniVersion"}
        eq(run("ADD", dict(c, prevResult=unversioned), host, ctr).error()["msg"],
           'could not parse prevResult: result type supports [0.3.0 0.3.1 0.4.0] but unmarshalled CNIVersion is ""')
        run("ADD", conf(ctr), host, ctr, netns="/run/netns/sbr-missing-ns").error()
        check(not os.path.exists("/run/netns/sbr-missing-ns"), "a failed ADD leaves no file where the netns should be")


@test
def sbr_addresses_by_interface_index():
    """sbr: an address whose index names another interface is skipped; absent, negative and
    out-of-range indexes (up to Go's 64-bit int) count as CNI_IFNAME's (the Go sbr's rule,
    compared when it is installed)"""
    rule4, rule6 = "32765:\tfrom 10.87.0.2 lookup 100", "32765:\tfrom fd00:87::2 lookup 101"
    # (interface index of the IPv4 address, of the IPv6 one; index 1 is the host's h0)
    for idx4, idx6, want in [(7, 1, ([rule4], [])), (-1, 0, ([rule4], [rule6])), (None, 1, ([rule4], [])),
                              (2**31, 0, ([rule4], [rule6]))]:  # Go's int is 64 bits wide
        ips = [{"address": "10.87.0.2/24", "gateway": "10.87.0.1", "interface": idx4},
               {"address": "fd00:87::2/64", "gateway": "fd00:87::1", "interface": idx6}]
        if idx4 is None:
            del ips[0]["interface"]
        for impl in [BIN] + ([REF] if REF else []):
            with netns("sh") as host, netns("sc") as ctr:
                wire(host, ctr)
                c = conf(ctr, prevResult={"cniVersion": "0.4.0", "ips": ips,
                                          "interfaces": [{"name": "eth0", "sandbox": ns_path(ctr)}, {"name": "h0"}]})
                run("ADD", c, host, ctr, plugin_dir=impl).ok()
                got = routing(ctr)
                eq((got["rules4"], got["rules6"]), want, f"{impl}, interface indexes {idx4}, {idx6}")
                run("DEL", c, host, ctr, plugin_dir=impl).ok()


RECORDS = "/run/cni/sbr"


def record(name="s-1:eth0.json"):
    with open(os.path.join(RECORDS, name)) as f:
        return json.load(f)


def plant(name, network):
    with open(os.path.join(RECORDS, name), "w") as f:
        json.dump({"network": network, "routes": ["dst=10.99.0.0/16 gw=10.87.0.9 scope=0 metric=0 mtu=0 advmss=0 type=1 protocol=3"]}, f)


@test
def sbr_records_the_routes_it_moves():
    """sbr: ADD writes down the main-table routes it moves (/run/cni/sbr/<id>:<ifname>.json, 0600 in
    a 0700 folder), DEL puts back those and drops the record, also when the namespace is gone; a
    record that does not decode is dropped with a warning; GC drops this network's records of
    attachments that are not valid and keeps the rest; a linked records folder is refused"""
    with netns("sh") as host, netns("sc") as ctr:
        wire(host, ctr)
        before = lines(ctr, "route")
        run("ADD", conf(ctr), host, ctr).ok()
        eq(oct(os.stat(RECORDS).st_mode & 0o777), "0o700")
        eq(oct(os.stat(os.path.join(RECORDS, "s-1:eth0.json")).st_mode & 0o777), "0o600")
        rec = record()
        eq(rec["network"], "sbr-test")
        check(any(r.startswith("dst=0.0.0.0/0 gw=10.87.0.1 ") for r in rec["routes"]), rec)
        check(any(r.startswith("dst=10.87.0.0/24 ") and "protocol=2" in r for r in rec["routes"]), rec)
        eq(lines(ctr, "route"), [])
        run("DEL", conf(ctr), host, ctr).ok()
        eq(sorted(lines(ctr, "route")), sorted(before))
        check(not os.path.exists(os.path.join(RECORDS, "s-1:eth0.json")), "the record is gone after DEL")

        run("ADD", conf(ctr), host, ctr).ok()
        run("DEL", conf(ctr), host, ctr, netns="/run/netns/sbr-no-such-ns").ok()
        check(not os.path.exists(os.path.join(RECORDS, "s-1:eth0.json")), "DEL with the namespace gone drops the record")
    with netns("sh") as host, netns("sc") as ctr:
        wire(host, ctr)
        run("ADD", conf(ctr), host, ctr).ok()
        with open(os.path.join(RECORDS, "s-1:eth0.json"), "w") as f:
            f.write('{"network": "sbr-test", "routes": ["dst=10.0.0.0/8 via=1.2.3.4"]}')
        out = run("DEL", conf(ctr), host, ctr).ok()
        check("no route goes back" in out.err, out.err)
        check(not os.path.exists(os.path.join(RECORDS, "s-1:eth0.json")), "a bad record is dropped")

    plant("gone:eth0.json", "sbr-test")
    plant("kept:eth0.json", "sbr-test")
    plant("other:eth0.json", "other-net")
    gc = {"cniVersion": "1.1.0", "name": "sbr-test", "type": "sbr",
          "cni.dev/valid-attachments": [{"containerID": "kept", "ifname": "eth0"}]}
    with netns("sh") as host:
        Plugin(os.path.join(BIN, "sbr")).run("GC", gc, host_ns=host).ok()
    eq(sorted(os.listdir(RECORDS)), ["kept:eth0.json", "other:eth0.json"])
    for name in os.listdir(RECORDS):
        os.unlink(os.path.join(RECORDS, name))

    elsewhere = tempfile.mkdtemp()
    os.rmdir(RECORDS)
    os.symlink(elsewhere, RECORDS)
    try:
        with netns("sh") as host, netns("sc") as ctr:
            wire(host, ctr)
            out = run("ADD", conf(ctr), host, ctr)
            check(out.rc != 0 and RECORDS in out.out, out.out)
            eq(os.listdir(elsewhere), [])
            eq(lines(ctr, "rule", "show", "table", "100"), [])
    finally:
        os.unlink(RECORDS)
        os.rmdir(elsewhere)


@test
def sbr_same_state_as_the_go_sbr():
    """sbr: the Go plugin and cni-all leave the same rules and tables, and each DELs the other's"""
    if not REF:
        raise AssertionError("Debian's containernetworking-plugins is not installed")
    seen = {}
    for add_dir, del_dir in [(REF, BIN), (BIN, REF)]:
        with netns("sh") as host, netns("sc") as ctr:
            wire(host, ctr)
            out = run("ADD", conf(ctr), host, ctr, plugin_dir=add_dir).ok()
            seen[add_dir] = (out.out.replace(ctr, "CTR"), routing(ctr))
            run("DEL", conf(ctr), host, ctr, plugin_dir=del_dir).ok()
            after = routing(ctr)
            eq((after["rules4"], after["rules6"]), ([], []), f"rules left after ADD by {add_dir}, DEL by {del_dir}")
    eq(seen[BIN], seen[REF])


if __name__ == "__main__":
    run_all(cleanup=[BIN])
