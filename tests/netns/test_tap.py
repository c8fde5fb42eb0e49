#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Root tests of the tap applet: the device's flags, owner, MTU and MAC; a bridge inside the
container; L2 without IPAM; errors and rollback; idempotent DEL. (Debian's Go plugins predate
tap, so there is nothing to diff against.)"""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import BIN, Plugin, check, eq, link, netns, ns_path, run_all, sh, test  # noqa: E402


def conf(data, ipam=True, **extra):
    c = {"cniVersion": "1.0.0", "name": "tap-test", "type": "tap"}
    if ipam:
        c["ipam"] = {"type": "host-local", "subnet": "10.84.0.0/24", "dataDir": data}
    c.update(extra)
    return c


def tap():
    return Plugin(os.path.join(BIN, "tap"))


@test
def tap_device_as_configured():
    """tap: multiQueue, owner/group, mtu and mac on a persistent tap with the IPAM result; CHECK; DEL"""
    data = tempfile.mkdtemp()
    try:
        with netns("host") as host, netns("ctr") as ctr:
            c = conf(data, multiQueue=True, owner=4242, group=4343, mtu=1400, mac="0a:00:00:00:00:81")
            res = tap().run("ADD", c, host_ns=host, netns=ns_path(ctr), ifname="tap0").ok().json()
            eq(res["interfaces"], [{"mac": "0a:00:00:00:00:81", "name": "tap0", "sandbox": ns_path(ctr)}])
            d = sh("ip", "-n", ctr, "-d", "link", "show", "tap0").stdout
            for want in ("tun type tap", "vnet_hdr on", "multi_queue", "persist on", "user 4242", "group 4343", "mtu 1400"):
                check(want in d, f"{want!r} in {d}")
            check("10.84.0.2/24" in sh("ip", "-n", ctr, "-br", "addr", "show", "tap0").stdout)
            eq(sh("ip", "netns", "exec", ctr, "cat", "/proc/sys/net/ipv4/conf/tap0/arp_notify").stdout, "1\n")
            tap().run("CHECK", dict(c, prevResult=res), host_ns=host, netns=ns_path(ctr), ifname="tap0").ok()
            tap().run("DEL", c, host_ns=host, netns=ns_path(ctr), ifname="tap0").ok()
            check(link(ctr, "tap0") is None)
            eq([f for f in os.listdir(os.path.join(data, "tap-test")) if f.startswith("10.")], [])
            tap().run("DEL", c, host_ns=host, netns=ns_path(ctr), ifname="tap0").ok()
            tap().run("DEL", c, host_ns=host, netns="", ifname="tap0").ok()
    finally:
        shutil.rmtree(data)


@test
def tap_on_a_container_bridge_and_l2():
    """tap: enslaved to a bridge inside the container; L2 without IPAM; CNI_ARGS/runtimeConfig MAC"""
    data = tempfile.mkdtemp()
    try:
        with netns("host") as host, netns("ctr") as ctr:
            sh("ip", "-n", ctr, "link", "add", "br0", "type", "bridge")
            r = tap().run("ADD", conf(data, ipam=False, bridge="br0", runtimeConfig={"mac": "0a:00:00:00:00:82"}),
                          host_ns=host, netns=ns_path(ctr), ifname="tap1", args="MAC=0a:00:00:00:00:83").ok().json()
            eq(link(ctr, "tap1")["master"], "br0")
            eq(link(ctr, "tap1")["address"], "0a:00:00:00:00:82")
            check("ips" not in r)
            err = tap().run("ADD", conf(data, ipam=False, bridge="nobr"), host_ns=host, netns=ns_path(ctr), ifname="tap2").error()
            eq(err["msg"], 'tap: bridge "nobr" not found in the container namespace')
            check(link(ctr, "tap2") is None, "rolled back")
    finally:
        shutil.rmtree(data)


@test
def tap_errors_and_rollback():
    """tap: selinuxContext on a host without SELinux fails at ADD with the label's error, and without
    `ip` in PATH with Go's exec error (nothing made; the DEL a runtime sends then succeeds, and
    removes an attachment); an existing ifname or an IPAM failure leaves no device behind"""
    data = tempfile.mkdtemp()
    try:
        with netns("host") as host, netns("ctr") as ctr:
            check(not os.path.exists("/sys/fs/selinux/enforce"), "this host has no SELinux (the test VM's suite has)")
            labelled = conf(data, selinuxContext="system_u:system_r:container_t:s0")
            eq(tap().run("ADD", labelled, host_ns=host, netns=ns_path(ctr)).error(),
               {"code": 999, "msg": 'failed to set the SELinux exec label "system_u:system_r:container_t:s0": '
                                    'write /proc/thread-self/attr/exec: invalid argument'})
            eq(tap().run("ADD", labelled, host_ns=host, netns=ns_path(ctr), extra_env={"PATH": data}).error()["msg"],
               'failed to run command : exec: "ip": executable file not found in $PATH')
            eq([l for l in sh("ip", "-n", ctr, "-br", "link").stdout.splitlines() if not l.startswith("lo ")], [])
            check(not os.path.exists(os.path.join(data, "tap-test")), "IPAM never ran")
            tap().run("DEL", labelled, host_ns=host, netns=ns_path(ctr)).ok()
            tap().run("ADD", conf(data), host_ns=host, netns=ns_path(ctr), ifname="tap7").ok()
            tap().run("DEL", labelled, host_ns=host, netns=ns_path(ctr), ifname="tap7").ok()
            check(link(ctr, "tap7") is None, "a DEL with selinuxContext removes the tap")
            eq([f for f in os.listdir(os.path.join(data, "tap-test")) if f[0].isdigit()], [], "and releases its address")
            sh("ip", "-n", ctr, "link", "add", "tap0", "type", "veth", "peer", "name", "x0")
            err = tap().run("ADD", conf(data), host_ns=host, netns=ns_path(ctr), ifname="tap0").error()
            check(err["msg"].startswith('failed to rename tap to "tap0"'), err)
            eq([l for l in sh("ip", "-n", ctr, "-br", "link").stdout.splitlines() if l.startswith("veth")], [])
            bad = conf(data)
            bad["ipam"]["subnet"] = "10.84.0.0/31"
            check("too small" in tap().run("ADD", bad, host_ns=host, netns=ns_path(ctr), ifname="tap9").error()["msg"])
            check(link(ctr, "tap9") is None)
            eq(tap().run("ADD", conf(data, mac="zz"), host_ns=host, netns=ns_path(ctr), ifname="tap8").error()["msg"],
               'invalid MAC address "zz"')
            tap().run("DEL", conf(data, mac="zz"), host_ns=host, netns=ns_path(ctr), ifname="tap8").ok()
            check(link(ctr, "tap8") is None, "the refused ADD made no tap")
    finally:
        shutil.rmtree(data)


if __name__ == "__main__":
    run_all(cleanup=[BIN])
