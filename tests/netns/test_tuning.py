#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Root tests of the tuning applet: sysctls and link attributes (mac, mtu, promisc, allmulti,
txqueuelen) applied in the container and restored on DEL, CHECK, refused keys (outside
/proc/sys/net, "..", the allowlist), a failed ADD putting everything back, GC of this
network's backups, and Debian's Go tuning reading our backups and we reading its. The
container interface is a veth the test makes; the plugin runs in a throwaway host namespace."""
import json
import os
import shutil
import stat
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import BIN, REF, Plugin, check, eq, netns, ns_path, run_all, sh, test, victim_file  # noqa: E402


def prev(ctr, ifname="eth0"):
    return {"cniVersion": "1.0.0", "interfaces": [{"name": ifname, "mac": "0a:00:00:00:00:01", "sandbox": ns_path(ctr)}],
            "ips": [{"address": "10.86.0.5/24", "interface": 0}]}


def conf(data, ctr, version="1.0.0", **extra):
    c = {"cniVersion": version, "name": "tune-test", "type": "tuning", "dataDir": data, "prevResult": prev(ctr)}
    c.update(extra)
    return c


def tuning(plugin_dir=BIN):
    return Plugin(os.path.join(plugin_dir, "tuning"))


def run(cmd, c, host, ctr, plugin_dir=BIN, **kw):
    return tuning(plugin_dir).run(cmd, c, host_ns=host, netns=ns_path(ctr), container_id="t-1", **kw)


def make_eth0(ctr):
    sh("ip", "-n", ctr, "link", "add", "eth0", "type", "veth", "peer", "name", "peer0")
    sh("ip", "-n", ctr, "link", "set", "eth0", "address", "0a:00:00:00:00:01", "mtu", "1500", "txqueuelen", "1000", "up")


def state(ctr):
    d = json.loads(sh("ip", "-n", ctr, "-d", "-j", "link", "show", "eth0").stdout)[0]
    return {"mac": d["address"], "mtu": d["mtu"], "promisc": d["promiscuity"] > 0, "allmulti": "ALLMULTI" in d["flags"],
            "txqlen": d["txqlen"]}


def sysctl(ctr, path):
    return sh("ip", "netns", "exec", ctr, "cat", "/proc/sys/" + path).stdout.strip()


ALL = {"mac": "0a:58:0a:56:00:05", "mtu": 1400, "promisc": True, "allmulti": True, "txQLen": 555}


@test
def tuning_applies_checks_and_restores():
    """tuning: sysctls, mac, mtu, promisc, allmulti, txQLen in the container; CHECK; DEL restores all"""
    data = tempfile.mkdtemp()
    try:
        with netns("th") as host, netns("tc") as ctr:
            make_eth0(ctr)
            before = state(ctr)
            somaxconn = sysctl(ctr, "net/core/somaxconn")
            c = conf(data, ctr, sysctl={"net.core.somaxconn": "512", "net.ipv4.conf.IFNAME.arp_ignore": "2",
                                        "net/ipv4/conf/eth0/arp_announce": "1"}, **ALL)
            res = run("ADD", c, host, ctr).ok().json()
            eq(res["interfaces"][0]["mac"], "0a:58:0a:56:00:05", "the result carries the new MAC")
            eq(res["ips"], prev(ctr)["ips"])
            eq(state(ctr), {"mac": "0a:58:0a:56:00:05", "mtu": 1400, "promisc": True, "allmulti": True, "txqlen": 555})
            eq([sysctl(ctr, "net/core/somaxconn"), sysctl(ctr, "net/ipv4/conf/eth0/arp_ignore"),
                sysctl(ctr, "net/ipv4/conf/eth0/arp_announce")], ["512", "2", "1"])
            backup = json.load(open(os.path.join(data, "t-1_eth0.json")))
            eq({k: backup[k] for k in ("mac", "mtu", "promisc", "allmulti", "txQLen")},
               {"mac": "0a:00:00:00:00:01", "mtu": 1500, "promisc": False, "allmulti": False, "txQLen": 1000})
            eq(stat.S_IMODE(os.stat(os.path.join(data, "t-1_eth0.json")).st_mode), 0o600)

            run("CHECK", dict(c, prevResult=res), host, ctr).ok()
            sh("ip", "-n", ctr, "link", "set", "eth0", "mtu", "1300")
            eq(run("CHECK", dict(c, prevResult=res), host, ctr).error()["msg"],
               "Error: Tuning configured MTU of eth0 is 1400, current value is 1300")
            sh("ip", "netns", "exec", ctr, "sh", "-c", "echo 0 > /proc/sys/net/ipv4/conf/eth0/arp_ignore")
            eq(run("CHECK", dict(c, prevResult=res, mtu=1300), host, ctr).error()["msg"],
               "Error: Tuning configured value of /proc/sys/net/ipv4/conf/eth0/arp_ignore is 2, current value is 0")

            run("DEL", c, host, ctr).ok()
            eq(state(ctr), before)
            eq(sysctl(ctr, "net/core/somaxconn"), somaxconn)
            eq(sysctl(ctr, "net/ipv4/conf/eth0/arp_announce"), "0")
            eq(os.listdir(data), [])
            run("DEL", c, host, ctr).ok()
            tuning().run("DEL", c, host_ns=host, netns="", container_id="t-1").ok()
    finally:
        shutil.rmtree(data)


@test
def tuning_refuses_keys_and_needs_prev_result():
    """tuning: non-net sysctls, "..", missing prevResult, bad values (integers past 32 bits too);
    nothing changed afterwards"""
    data = tempfile.mkdtemp()
    try:
        with netns("th") as host, netns("tc") as ctr:
            make_eth0(ctr)
            for key, msg in [("kernel.hostname", 'invalid net sysctl key: "kernel.hostname"'),
                             ("net/../kernel/hostname", 'invalid net sysctl key: "net/../kernel/hostname": ".." is not allowed'),
                             ("net/ipv4/conf/IFNAME/../../../kernel/x",
                              'invalid net sysctl key: "net/ipv4/conf/IFNAME/../../../kernel/x": ".." is not allowed')]:
                err = run("ADD", conf(data, ctr, sysctl={key: "1"}, mtu=1400), host, ctr).error()
                eq((err["code"], err["msg"]), (999, msg))
            eq(run("ADD", conf(data, ctr, sysctl={"net.core.nosuch": "1"}), host, ctr).error()["msg"],
               "open /proc/sys/net/core/nosuch: no such file or directory")
            c = conf(data, ctr, mtu=1400)
            del c["prevResult"]
            eq(run("ADD", c, host, ctr).error()["msg"], "Required prevResult missing")
            eq(run("ADD", conf(data, ctr, mac="zz"), host, ctr).error()["msg"],
               "invalid args zz for MAC addr: address zz: invalid MAC address")
            run("DEL", conf(data, ctr, mac="zz"), host, ctr).ok()  # the DEL after that ADD succeeds
            # Go's 64-bit ints: refused past the kernel's 32 bits (Go's netlink would keep the low
            # bits: MTU 1400 here), before anything changes; the DEL decodes them, as Go's.
            eq(run("ADD", conf(data, ctr, mtu=2**32 + 1400), host, ctr).error()["msg"],
               "invalid mtu 4294968696: it must not exceed 4294967295")
            eq(run("ADD", conf(data, ctr, txQLen=2**32), host, ctr).error()["msg"],
               "invalid txQLen 4294967296: it must not exceed 4294967295")
            run("DEL", conf(data, ctr, mtu=2**40, txQLen=2**40), host, ctr).ok()
            eq(state(ctr)["mtu"], 1500)
            eq(os.listdir(data), [])
    finally:
        shutil.rmtree(data)


@test
def tuning_failed_add_puts_everything_back():
    """tuning: an MTU the veth refuses fails the ADD after the MAC and sysctls changed; both are restored"""
    data = tempfile.mkdtemp()
    try:
        with netns("th") as host, netns("tc") as ctr:
            make_eth0(ctr)
            before = state(ctr)
            err = run("ADD", conf(data, ctr, mac="0a:58:0a:56:00:09", mtu=70000,
                                  sysctl={"net.ipv4.conf.IFNAME.arp_ignore": "2"}), host, ctr).error()
            check("70000" in err["msg"] and "eth0" in err["msg"], err["msg"])
            eq(state(ctr), before)
            eq(sysctl(ctr, "net/ipv4/conf/eth0/arp_ignore"), "0")
            eq(os.listdir(data), [])
    finally:
        shutil.rmtree(data)


@test
def tuning_allowlist():
    """tuning: with /etc/cni/tuning/allowlist.conf (in a private mount namespace) only matching keys pass"""
    data = tempfile.mkdtemp()
    allow = os.path.join(data, "allowlist.conf")
    with open(allow, "w") as f:
        f.write("^net\\.ipv4\\.conf\\.IFNAME\\.[a-z_]*$\n\nsomaxconn\n")
    wrapper = os.path.join(data, "tuning-with-allowlist")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\nexec unshare -m --propagation private sh -c 'mount -t tmpfs t /etc && mkdir -p /etc/cni/tuning && "
                f"cp {allow} /etc/cni/tuning/allowlist.conf && exec {BIN}/tuning'\n")
    os.chmod(wrapper, 0o755)
    backups = os.path.join(data, "backups")
    try:
        with netns("th") as host, netns("tc") as ctr:
            make_eth0(ctr)
            p = Plugin(wrapper, cni_path=BIN)
            ok = conf(backups, ctr, sysctl={"net.ipv4.conf.IFNAME.arp_ignore": "1", "net.core.somaxconn": "600"})
            p.run("ADD", ok, host_ns=host, netns=ns_path(ctr), container_id="t-1").ok()
            eq(sysctl(ctr, "net/core/somaxconn"), "600")
            bad = conf(backups, ctr, sysctl={"net.ipv4.ip_forward": "1"})
            eq(p.run("ADD", bad, host_ns=host, netns=ns_path(ctr), container_id="t-2").error()["msg"],
               "Sysctl net.ipv4.ip_forward is not allowed. Only the following sysctls are allowed: "
               "[^net\\.ipv4\\.conf\\.IFNAME\\.[a-z_]*$ somaxconn]")
            eq(sysctl(ctr, "net/ipv4/ip_forward"), "0")
            # Go regexp syntax: a flag group (which ECMAScript lacks) and a POSIX class.
            with open(allow, "w") as f:
                f.write("(?i)^NET\\.CORE\\.[[:alpha:]]+conn$\n")
            p.run("ADD", conf(backups, ctr, sysctl={"net.core.somaxconn": "700"}), host_ns=host, netns=ns_path(ctr),
                  container_id="t-3").ok()
            eq(sysctl(ctr, "net/core/somaxconn"), "700")
            with open(allow, "w") as f:
                f.write("net.(core\n")
            eq(p.run("ADD", conf(backups, ctr, sysctl={"net.core.somaxconn": "800"}), host_ns=host, netns=ns_path(ctr),
                     container_id="t-4").error()["msg"],
               'invalid pattern "net.(core" in /etc/cni/tuning/allowlist.conf: '
               "error parsing regexp: missing closing ): `net.(core`")
            eq(sysctl(ctr, "net/core/somaxconn"), "700")
    finally:
        shutil.rmtree(data)


@test
def tuning_gc_removes_this_networks_stale_backups():
    """tuning: GC deletes backups this network wrote for attachments not in the valid list, nothing else"""
    data = tempfile.mkdtemp()
    try:
        with netns("th") as host, netns("tc") as ctr:
            make_eth0(ctr)
            run("ADD", conf(data, ctr, mtu=1400), host, ctr).ok()
            with open(os.path.join(data, "other_eth0.json"), "w") as f:
                f.write('{\n "mtu": 1500\n}')  # the reference's form: no network, never collected
            files = {"net2_eth0.json": '{"mtu": 1500, "network": "other-net"}',  # another network's
                     "t-1_eth1.json": '{"mtu": 1500, "network": "tune-test"}',  # the valid container's other interface
                     "notes.txt": '{"mtu": 1500, "network": "tune-test"}',      # not a backup's name
                     "junk.json": "not json"}
            for name, text in files.items():
                with open(os.path.join(data, name), "w") as f:
                    f.write(text)
            gc = {"cniVersion": "1.1.0", "name": "tune-test", "type": "tuning", "dataDir": data,
                  "cni.dev/valid-attachments": [{"containerID": "t-1", "ifname": "eth0"}]}
            tuning().run("GC", gc, host_ns=host).ok()
            left = ["junk.json", "net2_eth0.json", "notes.txt", "other_eth0.json"]
            eq(sorted(os.listdir(data)), sorted(left + ["t-1_eth0.json"]))
            tuning().run("GC", dict(gc, **{"cni.dev/valid-attachments": []}), host_ns=host).ok()
            eq(sorted(os.listdir(data)), left)
    finally:
        shutil.rmtree(data)


@test
def tuning_del_restores_only_net_sysctls_from_a_backup():
    """tuning: DEL of a hostile backup writes nothing outside /proc/sys/net, does not crash, reports the skipped entries"""
    data = tempfile.mkdtemp()
    try:
        with victim_file() as victim, netns("th") as host, netns("tc") as ctr:
            make_eth0(ctr)
            c = conf(data, ctr, mtu=1400)
            run("ADD", c, host, ctr).ok()
            escape = "/proc/sys/kernel/../../.." + victim
            hostile = {"mtu": 1500, "network": "tune-test",
                       "sysctl": {"/tmp": "x", escape: "overwritten", "/proc/sys/kernel/core_pattern": "|/bin/false",
                                  "/proc/sys/net/../kernel/core_pattern": "|/bin/false",
                                  "/proc/sys/net/ipv4/conf/eth0/arp_ignore": "2"}}
            with open(os.path.join(data, "t-1_eth0.json"), "w") as f:
                json.dump(hostile, f)
            out = run("DEL", c, host, ctr).ok()
            eq(open(victim).read(), "original", "a '..' path in the backup wrote outside /proc/sys")
            for path in ("/tmp", escape, "/proc/sys/kernel/core_pattern", "/proc/sys/net/../kernel/core_pattern"):
                check(f'skipped "{path}"' in out.err, f"DEL reports {path} as skipped: {out.err!r}")
            eq(sysctl(ctr, "net/ipv4/conf/eth0/arp_ignore"), "2", "a valid entry is still restored")
            eq(state(ctr)["mtu"], 1500)
            eq(os.listdir(data), [])
    finally:
        shutil.rmtree(data)


@test
def tuning_backups_never_follow_a_planted_link():
    """tuning: a symlink planted at the backup's name is replaced, not written through; DEL does not read through one"""
    data = tempfile.mkdtemp()
    try:
        with victim_file() as victim, netns("th") as host, netns("tc") as ctr:
            make_eth0(ctr)
            c = conf(data, ctr, mtu=1400)
            link = os.path.join(data, "t-1_eth0.json")
            os.symlink(victim, link)
            for name in [f".t-1_eth0.json.{i}.tmp" for i in range(3)] + ["t-1_eth0.json.tmp"]:
                os.symlink(victim, os.path.join(data, name))  # guessable temporary names
            run("ADD", c, host, ctr).ok()
            eq(open(victim).read(), "original", "ADD wrote through a planted link")
            check(not os.path.islink(link) and json.load(open(link))["mtu"] == 1500, "the backup replaced the link")
            run("DEL", c, host, ctr).ok()
            eq(state(ctr)["mtu"], 1500)
            # a link at the backup's name on DEL is not read through, and is removed
            run("ADD", c, host, ctr).ok()
            os.unlink(link)
            os.symlink(victim, link)
            out = run("DEL", c, host, ctr).ok()
            check("a symbolic link" in out.err, f"DEL reports the link: {out.err!r}")
            check(not os.path.lexists(link), "DEL removed the planted link")
            eq(open(victim).read(), "original")
    finally:
        shutil.rmtree(data)


@test
def tuning_and_the_go_tuning_restore_each_other():
    """tuning: Go's backup restored by our DEL, ours by Go's DEL; same result and link state as Go"""
    if not REF:
        raise AssertionError("Debian's containernetworking-plugins is not installed")
    keys = {"mac": "0a:58:0a:56:00:07", "mtu": 1450, "promisc": True, "allmulti": True}
    seen = {}
    for add_dir, del_dir in [(REF, BIN), (BIN, REF)]:
        data = tempfile.mkdtemp()
        try:
            with netns("th") as host, netns("tc") as ctr:
                make_eth0(ctr)
                before = state(ctr)
                c = conf(data, ctr, version="0.4.0", sysctl={"net.ipv4.conf.IFNAME.arp_ignore": "2"}, **keys)
                c["prevResult"]["cniVersion"] = "0.4.0"
                out = run("ADD", c, host, ctr, plugin_dir=add_dir).ok()
                seen[add_dir] = (out.out.replace(ctr, "CTR"), state(ctr))
                run("DEL", c, host, ctr, plugin_dir=del_dir).ok()
                got = state(ctr)
                eq(got, before, f"ADD by {add_dir}, DEL by {del_dir}")
                eq(os.listdir(data), [])
        finally:
            shutil.rmtree(data)
    eq(seen[BIN], seen[REF])


if __name__ == "__main__":
    run_all(cleanup=[BIN])
