#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The test VM's run (tests/vm/run-in-vm.sh): every test marked @test(vm=True) in the applets'
own files (dummy, vlan, ipvlan, host-device, vrf, and bridge's VLAN ports), the VM's own checks
(the link kinds through the kernel's module autoloading, the netlink layer's [.vm] cases), and
the fuzz suite's variants for dummy, vlan, ipvlan and vrf. Each test builds its own namespaces
in the guest."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "netns"))
import test_bridge  # noqa: E402,F401 - registers its VM cases
import test_dummy  # noqa: E402,F401
import test_fuzz  # noqa: E402
import test_host_device  # noqa: E402,F401
import test_ipvlan  # noqa: E402,F401
import test_vlan  # noqa: E402,F401
import test_vrf  # noqa: E402,F401
from cnitest import BIN, CNI_ALL, check, netns, run_all, sh, test  # noqa: E402


@test(vm=True)
def kernel_has_the_link_kinds():
    """the VM kernel autoloads dummy, 8021q, ipvlan and vrf through the module wrapper"""
    with netns("k") as ns:
        sh("ip", "-n", ns, "link", "add", "d0", "type", "dummy")
        sh("ip", "-n", ns, "link", "add", "link", "d0", "name", "d0.10", "type", "vlan", "id", "10")
        sh("ip", "-n", ns, "link", "add", "link", "d0", "name", "ipv0", "type", "ipvlan", "mode", "l2")
        sh("ip", "-n", ns, "link", "add", "vrf1", "type", "vrf", "table", "10")
        kinds = sh("ip", "-n", ns, "-d", "-o", "link").stdout
        for kind in ("dummy", "vlan protocol 802.1Q id 10", "ipvlan", "vrf table 10"):
            check(kind in kinds, kind)


@test(vm=True)
def netlink_layer_vm_cases():
    """the netlink layer's Catch2 cases tagged [.vm] (vrf), which need this kernel"""
    tests = os.path.join(os.path.dirname(CNI_ALL), "tests", "os-tests")
    r = sh(tests, "[.vm]", check_rc=False)
    check(r.returncode == 0, r.stdout[-3000:] + r.stderr[-1000:])
    check("All tests passed" in r.stdout, r.stdout[-1000:])


# The fuzz suite's hostile variants for the applets whose links only this kernel can make (on
# the host they stop at link creation); few per applet: under emulation a variant takes about
# 5 s (25 s before the guest cached its root: tests/vm/prepare-kernel.sh). The host runs each
# applet's sample up to the link.
for applet in ("dummy", "vlan", "ipvlan", "vrf"):
    test_fuzz.register(applet, BIN, sample=int(os.environ.get("CNI_FUZZ_SAMPLE", "4")), vm=True, multi=1)


if __name__ == "__main__":
    run_all(cleanup=[BIN])
