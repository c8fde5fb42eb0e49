#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""host-device: a host link moved into the container and back, by name and by MAC, errors and
rollback. These tests need kernel features this machine lacks, so they are marked for the test
VM (tests/vm) and run only there. Each builds its own namespaces in the guest."""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import BIN, Plugin, check, eq, link, netns, ns_path, run_all, sh, test  # noqa: E402


def hostdev_conf(data, **extra):
    c = {"cniVersion": "0.4.0", "name": "hd-test", "type": "host-device", "device": "hostdev0",
         "ipam": {"type": "host-local", "subnet": "10.82.0.0/24", "dataDir": data}}
    c.update(extra)
    return c


class HostDevWorld:
    """A host namespace holding a dummy "hostdev0" to hand out, a container and a data dir."""

    def __enter__(self):
        self.data = tempfile.mkdtemp()
        self.cms = [netns("host"), netns("ctr")]
        self.host, self.ctr = [cm.__enter__() for cm in self.cms]
        sh("ip", "-n", self.host, "link", "add", "hostdev0", "address", "0a:00:00:00:00:61", "type", "dummy")
        sh("ip", "-n", self.host, "link", "set", "hostdev0", "up")
        return self

    def __exit__(self, *exc):
        for cm in reversed(self.cms):
            cm.__exit__(None, None, None)
        shutil.rmtree(self.data)

    def run(self, cmd, conf, plugin_dir=BIN, **kw):
        kw.setdefault("netns", ns_path(self.ctr))
        return Plugin(os.path.join(plugin_dir, "host-device")).run(cmd, conf, host_ns=self.host, container_id="hd", **kw)


@test(vm=True)
def host_device_moves_in_and_back():
    """host-device: the device moves in as eth0 (alias = its name) with IPs; DEL brings it back"""
    with HostDevWorld() as w:
        c = hostdev_conf(w.data)
        res = w.run("ADD", c).ok().json()
        eq(res["interfaces"], [{"name": "eth0", "mac": "0a:00:00:00:00:61", "sandbox": ns_path(w.ctr)}])
        check(link(w.host, "hostdev0") is None, "gone from the host")
        moved = link(w.ctr, "eth0")
        eq(moved["ifalias"], "hostdev0")
        check("UP" in moved["flags"])
        check("10.82.0.2/24" in sh("ip", "-n", w.ctr, "-br", "addr", "show", "eth0").stdout)
        w.run("CHECK", dict(c, prevResult=res)).ok()
        w.run("DEL", c).ok()
        check(link(w.ctr, "eth0") is None)
        back = link(w.host, "hostdev0")
        check(back is not None and back.get("ifalias", "") == "", back)
        w.run("DEL", c).ok()


@test(vm=True)
def host_device_by_mac_errors_and_rollback():
    """host-device: found by hwaddr; clear errors; a failed ADD returns the device; DEL with no netns frees IPAM"""
    with HostDevWorld() as w:
        c = hostdev_conf(w.data, hwaddr="0A:00:00:00:00:61")
        del c["device"]
        w.run("ADD", c).ok()
        w.run("DEL", c).ok()
        check(link(w.host, "hostdev0") is not None)
        bare = hostdev_conf(w.data)
        del bare["device"]
        eq(w.run("ADD", bare).error()["msg"], 'specify either "device", "hwaddr", "kernelpath" or "pciBusID"')
        eq(w.run("ADD", hostdev_conf(w.data, device=None, kernelpath="/tmp/x")).error()["msg"],
           'kernel device path "/tmp/x" must be absolute and begin with /sys/devices/')
        sh("ip", "-n", w.ctr, "link", "add", "eth0", "type", "dummy")
        err = w.run("ADD", hostdev_conf(w.data)).error()
        check("failed to move" in err["msg"], err)
        check(link(w.host, "hostdev0") is not None, "the device came back to the host")
        bad = hostdev_conf(w.data)
        bad["ipam"]["subnet"] = "10.82.0.0/31"
        check("too small" in w.run("ADD", bad, ifname="eth1").error()["msg"])
        check(link(w.host, "hostdev0") is not None, "back after an IPAM failure too")
        w.run("ADD", hostdev_conf(w.data), ifname="eth1").ok()
        w.run("DEL", hostdev_conf(w.data), ifname="eth1", netns="").ok()
        eq([f for f in os.listdir(os.path.join(w.data, "hd-test")) if f.startswith("10.")], [],
           "DEL without a netns still releases the address (the reference does not)")


if __name__ == "__main__":
    run_all(cleanup=[BIN])
