#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""vrf: CNI_IFNAME enslaved with its addresses and routes kept, the shared table, errors,
idempotent DEL, the same state as the Go vrf, and vrf chained after ptp and bridge with routes
through the gateway. These tests need kernel features this machine lacks, so they are marked for
the test VM (tests/vm) and run only there. Each builds its own namespaces in the guest."""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import BIN, REF, Plugin, addrs, check, eq, link, netns, ns_path, run_all, sh, test  # noqa: E402


def vrf_wire(host, ctr, ifname="eth0", v4="10.88.0.2", v6="fd00:88::2", peer="h0", default=True):
    """A veth (ifname in the container, peer in the host) with IPv4/IPv6 addresses and a default route."""
    sh("ip", "-n", host, "link", "add", peer, "type", "veth", "peer", "name", ifname, "netns", ctr)
    sh("ip", "-n", host, "addr", "add", v4.rsplit(".", 1)[0] + ".1/24", "dev", peer)
    sh("ip", "-n", host, "addr", "add", v6.rsplit(":", 1)[0] + ":1/64", "dev", peer, "nodad")
    sh("ip", "-n", host, "link", "set", peer, "up")
    sh("ip", "-n", ctr, "addr", "add", v4 + "/24", "dev", ifname)
    sh("ip", "-n", ctr, "addr", "add", v6 + "/64", "dev", ifname, "nodad")
    sh("ip", "-n", ctr, "link", "set", ifname, "up")
    if default:
        sh("ip", "-n", ctr, "route", "add", "default", "via", v4.rsplit(".", 1)[0] + ".1", "dev", ifname)


def vrf_conf(ctr, ifname="eth0", v4="10.88.0.2", **extra):
    c = {"cniVersion": "1.0.0", "name": "vrf-test", "type": "vrf", "vrfname": "blue",
         "prevResult": {"cniVersion": "1.0.0", "interfaces": [{"name": ifname, "sandbox": ns_path(ctr)}],
                        "ips": [{"address": v4 + "/24", "interface": 0}]}}
    c.update(extra)
    return c


def vrf(plugin_dir=None):
    return Plugin(os.path.join(plugin_dir or BIN, "vrf"))


@test(vm=True)
def vrf_enslaves_keeps_addresses_and_routes():
    """vrf: the VRF is created, the interface enslaved, IPv6 address and default route kept in its table; traffic"""
    with netns("host") as host, netns("ctr") as ctr:
        vrf_wire(host, ctr)
        res = vrf().run("ADD", vrf_conf(ctr, table=1001), host_ns=host, netns=ns_path(ctr), container_id="v-1").ok().json()
        eq(res["ips"][0]["address"], "10.88.0.2/24")
        check("vrf table 1001" in sh("ip", "-n", ctr, "-d", "link", "show", "blue").stdout)
        eq(link(ctr, "eth0")["master"], "blue")
        check("fd00:88::2/64" in sh("ip", "-n", ctr, "-br", "addr", "show", "eth0").stdout, "IPv6 address restored")
        routes = sh("ip", "-n", ctr, "route", "show", "vrf", "blue").stdout
        check("default via 10.88.0.1 dev eth0" in routes, routes)
        check("fd00:88::/64 dev eth0" in sh("ip", "-n", ctr, "-6", "route", "show", "vrf", "blue").stdout)
        sh("ip", "netns", "exec", ctr, "ping", "-c1", "-W3", "-I", "blue", "10.88.0.1")
        vrf().run("CHECK", vrf_conf(ctr, table=1001), host_ns=host, netns=ns_path(ctr), container_id="v-1").ok()
        eq(vrf().run("CHECK", vrf_conf(ctr, table=7), host_ns=host, netns=ns_path(ctr), container_id="v-1").error()["msg"],
           "VRF blue uses table 1001, not 7")
        vrf().run("DEL", vrf_conf(ctr), host_ns=host, netns=ns_path(ctr), container_id="v-1").ok()
        check(link(ctr, "blue") is None, "the VRF goes with its last interface")
        check("master" not in link(ctr, "eth0"))
        vrf().run("DEL", vrf_conf(ctr), host_ns=host, netns=ns_path(ctr), container_id="v-1").ok()
        vrf().run("DEL", vrf_conf(ctr), host_ns=host, netns="", container_id="v-1").ok()


@test(vm=True)
def vrf_shared_table_choice_errors_and_idempotent_del():
    """vrf: two interfaces share one VRF (table 1 picked), the VRF stays until the last DEL; errors roll back"""
    with netns("host") as host, netns("ctr") as ctr:
        vrf_wire(host, ctr)
        vrf_wire(host, ctr, ifname="eth1", v4="10.89.0.2", v6="fd00:89::2", peer="h1", default=False)
        vrf().run("ADD", vrf_conf(ctr), host_ns=host, netns=ns_path(ctr), container_id="v-1").ok()
        vrf().run("ADD", vrf_conf(ctr, "eth1", "10.89.0.2"), host_ns=host, netns=ns_path(ctr), container_id="v-2",
                  ifname="eth1").ok()
        check("vrf table 1 " in sh("ip", "-n", ctr, "-d", "link", "show", "blue").stdout + " ")
        eq(vrf().run("ADD", vrf_conf(ctr, table=5), host_ns=host, netns=ns_path(ctr), container_id="v-3").error()["msg"],
           "cmdAdd failed: VRF blue already exists with a different table 1, not 5")
        sh("ip", "-n", ctr, "link", "add", "dup0", "type", "dummy")
        sh("ip", "-n", ctr, "link", "add", "red", "type", "vrf", "table", "50")
        sh("ip", "-n", ctr, "link", "set", "dup0", "master", "red")
        eq(vrf().run("ADD", vrf_conf(ctr, "dup0", vrfname="green"), host_ns=host, netns=ns_path(ctr), container_id="v-4",
                     ifname="dup0").error()["msg"], "cmdAdd failed: interface dup0 has already a master set: red")
        check(link(ctr, "green") is None, "a VRF created for a failed ADD is removed")
        eq(vrf().run("ADD", vrf_conf(ctr, vrfname="dup0"), host_ns=host, netns=ns_path(ctr), container_id="v-5").error()["msg"],
           "cmdAdd failed: Netlink dup0 is not a VRF")
        c = vrf_conf(ctr)
        del c["prevResult"]
        eq(vrf().run("ADD", c, host_ns=host, netns=ns_path(ctr), container_id="v-6").error()["msg"],
           "missing prevResult from earlier plugin")
        vrf().run("DEL", vrf_conf(ctr), host_ns=host, netns=ns_path(ctr), container_id="v-1").ok()
        check(link(ctr, "blue") is not None, "eth1 still uses it")
        sh("ip", "-n", ctr, "link", "del", "eth1")
        vrf().run("DEL", vrf_conf(ctr, "eth1"), host_ns=host, netns=ns_path(ctr), container_id="v-2", ifname="eth1").ok()
        check(link(ctr, "blue") is None, "DEL with the interface gone still removes the empty VRF")


@test(vm=True)
def vrf_same_state_as_go():
    """vrf: Debian's Go vrf and cni-all give the same result, VRF and addresses, and each DELs the other's"""
    if not REF:
        raise AssertionError("Debian's containernetworking-plugins is not installed")
    seen = {}
    for add_dir, del_dir in [(REF, BIN), (BIN, REF)]:
        with netns("host") as host, netns("ctr") as ctr:
            vrf_wire(host, ctr)
            c = vrf_conf(ctr, cniVersion="0.4.0", table=1001)
            c["prevResult"]["cniVersion"] = "0.4.0"
            out = vrf(add_dir).run("ADD", c, host_ns=host, netns=ns_path(ctr), container_id="v-1").ok()
            # Debian's 1.1.1 predates moving the gateway routes into the VRF table (v1.9 does, as we
            # do), so the VRF's routes are compared without them.
            vrf_routes = [r for r in sh("ip", "-n", ctr, "route", "show", "vrf", "blue").stdout.splitlines() if " via " not in r]
            seen[add_dir] = (out.out.replace(ctr, "CTR"), vrf_routes,
                             [a for a in addrs(ctr, "eth0") if not a.startswith("fe80:")],
                             link(ctr, "eth0")["master"])
            vrf(del_dir).run("DEL", c, host_ns=host, netns=ns_path(ctr), container_id="v-1").ok()
            check(link(ctr, "blue") is None, f"ADD by {add_dir}, DEL by {del_dir}")
    eq(seen[BIN], seen[REF])


def chained_vrf(main_conf, route_dst, gateway, table):
    """`main_conf`'s plugin (host-local with a route to `route_dst`) then vrf: the interface is
    enslaved, table `table` holds the gateway's link route (when the plugin made one) and the
    route to `route_dst` through it, and traffic to an address of `route_dst` on the host flows
    from the VRF; DEL of both leaves the container without the VRF."""
    data = tempfile.mkdtemp()
    main_conf["ipam"]["dataDir"] = data
    plugin = Plugin(os.path.join(BIN, main_conf["type"]))
    try:
        with netns("host") as host, netns("ctr") as ctr:
            res = plugin.run("ADD", main_conf, host_ns=host, netns=ns_path(ctr), container_id="cv-1").ok().json()
            vconf = {"cniVersion": "1.0.0", "name": main_conf["name"], "type": "vrf", "vrfname": "blue", "table": table,
                     "prevResult": res}
            out = vrf().run("ADD", vconf, host_ns=host, netns=ns_path(ctr), container_id="cv-1").ok().json()
            eq(out["ips"], res["ips"])
            eq(link(ctr, "eth0")["master"], "blue")
            routes = sh("ip", "-n", ctr, "route", "show", "table", str(table)).stdout
            check(f"{route_dst} via {gateway} dev eth0" in routes, routes)
            main_routes = sh("ip", "-n", ctr, "route", "show").stdout
            check(route_dst not in main_routes, "the route left the main table: " + main_routes)
            target = route_dst.split("/")[0][:-1] + "1"
            sh("ip", "-n", host, "addr", "add", target + "/32", "dev", "lo")
            sh("ip", "-n", host, "link", "set", "lo", "up")
            sh("ip", "netns", "exec", ctr, "ping", "-c1", "-W3", "-I", "blue", target)
            vrf().run("CHECK", vconf, host_ns=host, netns=ns_path(ctr), container_id="cv-1").ok()
            vrf().run("DEL", vconf, host_ns=host, netns=ns_path(ctr), container_id="cv-1").ok()
            plugin.run("DEL", main_conf, host_ns=host, netns=ns_path(ctr), container_id="cv-1").ok()
            check(link(ctr, "blue") is None and link(ctr, "eth0") is None, "both DELs cleaned up")
            return routes
    finally:
        shutil.rmtree(data)


@test(vm=True)
def ptp_then_vrf_moves_the_gateway_link_route_first():
    """ptp then vrf: table T gets ptp's gateway link route before the route through it; traffic to the route's destination flows"""
    conf = {"cniVersion": "1.0.0", "name": "ptpvrf", "type": "ptp",
            "ipam": {"type": "host-local", "subnet": "10.87.0.0/24", "routes": [{"dst": "10.201.0.0/16"}]}}
    routes = chained_vrf(conf, "10.201.0.0/16", "10.87.0.1", 1002)
    check("10.87.0.1 dev eth0 scope link" in routes, routes)


@test(vm=True)
def bridge_then_vrf_moves_routes_through_the_gateway():
    """bridge then vrf: table T holds the subnet and the route through the bridge's gateway; traffic flows"""
    conf = {"cniVersion": "1.0.0", "name": "brvrf", "type": "bridge", "bridge": "cnivrfbr0", "isGateway": True,
            "ipam": {"type": "host-local", "subnet": "10.86.0.0/24", "routes": [{"dst": "10.202.0.0/16"}]}}
    routes = chained_vrf(conf, "10.202.0.0/16", "10.86.0.1", 1003)
    check("10.86.0.0/24 dev eth0" in routes, routes)


if __name__ == "__main__":
    run_all(cleanup=[BIN])
