#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""loopback: lo up in the container, the reference's result quirk, prevResult passed through, and the
CNI_NETNS checks every applet shares (run before anything changes; a path that is not a network
namespace). Each test builds its own
"host" and "container" network namespaces, runs the applet through its installed launcher inside
the host one, and asserts on kernel and disk state."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import BIN, REF, Plugin, addrs, canonical_result, check, eq, link, netns, ns_path, run_all, sh, test  # noqa: E402


def ours(applet):
    return Plugin(os.path.join(BIN, applet))


def is_up(ns, dev="lo"):
    return "UP" in link(ns, dev)["flags"]


@test
def loopback_add_check_del():
    """loopback: ADD brings lo up and reports it, CHECK passes, DEL brings it down"""
    with netns("host") as host, netns("ctr") as ctr:
        check(not is_up(ctr), "lo starts down in a new namespace")
        conf = {"cniVersion": "1.1.0", "name": "lo-net", "type": "loopback"}
        res = ours("loopback").run("ADD", conf, host_ns=host, netns=ns_path(ctr)).ok().json()
        check(is_up(ctr), "lo is up after ADD")
        check(not is_up(host), "the host namespace's lo is untouched")
        eq(res["cniVersion"], "1.1.0")
        eq(res["interfaces"], [{"mac": "00:00:00:00:00:00", "name": "lo", "sandbox": ns_path(ctr)}])
        check({"address": "127.0.0.1/8", "interface": 0} in res["ips"], res)
        eq(set(addrs(ctr, "lo")) >= {"127.0.0.1/8"}, True)
        ours("loopback").run("CHECK", conf, host_ns=host, netns=ns_path(ctr)).ok()
        ours("loopback").run("DEL", conf, host_ns=host, netns=ns_path(ctr)).ok()
        check(not is_up(ctr), "lo is down after DEL")
        err = ours("loopback").run("CHECK", conf, host_ns=host, netns=ns_path(ctr)).error()
        eq(err, {"code": 999, "msg": "loopback interface is down"})
        ours("loopback").run("DEL", conf, host_ns=host, netns=ns_path(ctr)).ok()  # idempotent


@test
def loopback_del_is_idempotent():
    """loopback: DEL succeeds with an empty CNI_NETNS and with a namespace that is gone"""
    with netns("host") as host:
        conf = {"cniVersion": "0.4.0", "name": "lo-net", "type": "loopback"}
        ours("loopback").run("DEL", conf, host_ns=host, netns="").ok()
        ours("loopback").run("DEL", conf, host_ns=host, netns="/run/netns/cnit-gone-123").ok()
        with netns("ctr") as ctr:
            gone = ns_path(ctr)
        ours("loopback").run("DEL", conf, host_ns=host, netns=gone).ok()


@test
def loopback_result_quirk_matches_reference():
    """loopback: results at every version match Debian's Go loopback (1.x label quirk included)"""
    if not REF:
        raise AssertionError("Debian's containernetworking-plugins is not installed")
    for version in ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0"]:
        with netns("host") as host, netns("ctr") as ctr:
            conf = {"cniVersion": version, "name": "lo-net", "type": "loopback"}
            mine = ours("loopback").run("ADD", conf, host_ns=host, netns=ns_path(ctr)).ok()
            theirs = Plugin(os.path.join(REF, "loopback")).run("ADD", conf, host_ns=host, netns=ns_path(ctr)).ok()
            eq(canonical_result(mine.out), canonical_result(theirs.out), f"loopback at {version}")
            check("version" not in mine.out, "the quirk: a 1.x-shaped result under an old label")


@test
def loopback_passes_prev_result_through():
    """loopback: a prevResult is passed through, converted to the config's version"""
    with netns("host") as host, netns("ctr") as ctr:
        prev = {"cniVersion": "0.3.1", "ips": [{"version": "4", "address": "10.1.0.5/16", "interface": 0}],
                "interfaces": [{"name": "eth0", "sandbox": ns_path(ctr)}]}
        conf = {"cniVersion": "0.3.1", "name": "lo-net", "type": "loopback", "prevResult": prev}
        out = ours("loopback").run("ADD", conf, host_ns=host, netns=ns_path(ctr)).ok()
        eq(out.json(), dict(prev, dns={}))
        check(is_up(ctr))


@test
def loopback_refuses_non_loopback_address():
    """loopback: a non-loopback address on lo is an error naming it"""
    with netns("host") as host, netns("ctr") as ctr:
        sh("ip", "-n", ctr, "addr", "add", "192.0.2.9/32", "dev", "lo")
        conf = {"cniVersion": "1.0.0", "name": "lo-net", "type": "loopback"}
        err = ours("loopback").run("ADD", conf, host_ns=host, netns=ns_path(ctr)).error()
        eq(err, {"code": 999, "msg": "loopback interface found with non-loopback address \"192.0.2.9\""})


@test
def netns_override_check_runs_before_any_change():
    """CNI_NETNS naming the plugin's own namespace is refused (code 8) before anything changes"""
    with netns("host") as host:
        sh("ip", "-n", host, "link", "set", "lo", "up")
        conf = {"cniVersion": "1.0.0", "name": "lo-net", "type": "loopback"}
        err = ours("loopback").run("DEL", conf, host_ns=host, netns=ns_path(host)).error()
        eq(err, {"code": 8, "msg": "plugin's netns and netns from CNI_NETNS should not be the same"})
        check(is_up(host), "lo of the plugin's own namespace was NOT taken down (the reference checks afterwards)")
        ours("loopback").run("DEL", conf, host_ns=host, netns=ns_path(host),
                             extra_env={"CNI_NETNS_OVERRIDE": "true"}).ok()
        check(not is_up(host), "with CNI_NETNS_OVERRIDE the caller asked for it")


@test
def netns_that_is_not_a_namespace():
    """a CNI_NETNS that is not a network namespace is code 8 naming the path"""
    with netns("host") as host, tempfile.NamedTemporaryFile() as f:
        conf = {"cniVersion": "1.0.0", "name": "lo-net", "type": "loopback"}
        err = ours("loopback").run("ADD", conf, host_ns=host, netns=f.name).error()
        eq(err["code"], 8)
        check(f.name in err["msg"], err)
        err = ours("loopback").run("ADD", conf, host_ns=host, netns="/proc/self/ns/mnt").error()
        eq(err["code"], 8)
        check("not a network namespace" in err["msg"], err)


if __name__ == "__main__":
    run_all(cleanup=[BIN])
