#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""dummy: a dummy link in the container with IPAM, CHECK, idempotent DEL, errors and rollback.
These tests need kernel features this machine lacks, so they are marked for the test VM
(tests/vm) and run only there. Each builds its own namespaces in the guest."""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import BIN, Plugin, check, eq, link, netns, ns_path, run_all, sh, test  # noqa: E402


def dummy_conf(data, **extra):
    c = {"cniVersion": "1.0.0", "name": "dummy-test", "type": "dummy",
         "ipam": {"type": "host-local", "subnet": "10.78.0.0/24", "routes": [{"dst": "10.200.0.0/16"}],
                  "dataDir": data}}
    c.update(extra)
    return c


def dummy():
    return Plugin(os.path.join(BIN, "dummy"))


@test(vm=True)
def dummy_add_check_del():
    """dummy: ADD creates the link with the IPAM result; CHECK; DEL removes link and address"""
    data = tempfile.mkdtemp()
    try:
        with netns("host") as host, netns("ctr") as ctr:
            c = dummy_conf(data)
            res = dummy().run("ADD", c, host_ns=host, netns=ns_path(ctr), container_id="d-1").ok().json()
            eq(res["ips"], [{"address": "10.78.0.2/24", "gateway": "10.78.0.1", "interface": 0}])
            eq(res["interfaces"][0]["name"], "eth0")
            d = sh("ip", "-n", ctr, "-d", "link", "show", "eth0").stdout
            check("dummy" in d and "UP" in d, d)
            check("10.78.0.2/24" in sh("ip", "-n", ctr, "-br", "addr", "show", "eth0").stdout)
            check("10.200.0.0/16 via 10.78.0.1 dev eth0" in sh("ip", "-n", ctr, "route").stdout)
            dummy().run("CHECK", dict(c, prevResult=res), host_ns=host, netns=ns_path(ctr), container_id="d-1").ok()
            dummy().run("DEL", c, host_ns=host, netns=ns_path(ctr), container_id="d-1").ok()
            check(link(ctr, "eth0") is None)
            eq([f for f in os.listdir(os.path.join(data, "dummy-test")) if f.startswith("10.")], [])
            dummy().run("DEL", c, host_ns=host, netns=ns_path(ctr), container_id="d-1").ok()
            dummy().run("DEL", c, host_ns=host, netns="", container_id="d-1").ok()
    finally:
        shutil.rmtree(data)


@test(vm=True)
def dummy_errors_and_rollback():
    """dummy: IPAM is required; an IPAM failure removes the new link"""
    data = tempfile.mkdtemp()
    try:
        with netns("host") as host, netns("ctr") as ctr:
            c = dummy_conf(data)
            del c["ipam"]
            eq(dummy().run("ADD", c, host_ns=host, netns=ns_path(ctr)).error()["msg"],
               "dummy interface requires an IPAM configuration")
            bad = dummy_conf(data)
            bad["ipam"]["subnet"] = "10.78.0.0/31"
            err = dummy().run("ADD", bad, host_ns=host, netns=ns_path(ctr)).error()
            check("too small" in err["msg"], err)
            check(link(ctr, "eth0") is None, "the link of the failed ADD was removed")
    finally:
        shutil.rmtree(data)


if __name__ == "__main__":
    run_all(cleanup=[BIN])
