#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The arm64 static binary (CNI_ALL_STATIC_ARM64, cross-built by `packaging/build-static.sh
--arch arm64 --unit-tests`), run on this x86-64 machine under qemu-user (qemu-aarch64): it is an
aarch64 static executable of at most 3 MB; VERSION, --version and --list answer as the amd64
build's do; its unit tests (CNI_ALL_ARM64_UNIT_TESTS, the same sources cross-built) pass, but for
the two that need what qemu-user does not emulate (they run natively in the unit suite); and real
loopback and host-local calls change a throwaway namespace's lo and a reservation store as the
amd64 build's do. Applets that make links (bridge, ptp...) are not run here: qemu-user refuses
some of the rtnetlink messages they send (EOPNOTSUPP), and nf_tables' netlink entirely."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import addrs, artifact, check, eq, link, netns, ns_path, run_all, sh, test  # noqa: E402

ARM64 = artifact("CNI_ALL_STATIC_ARM64")
UNIT_TESTS = artifact("CNI_ALL_ARM64_UNIT_TESTS")
AMD64 = artifact("CNI_ALL_STATIC")
QEMU = shutil.which("qemu-aarch64") or "qemu-aarch64"


def arm64(*args, **kw):
    return sh(QEMU, ARM64, *args, **kw)


@test
def arm64_binary_is_a_small_static_aarch64_executable():
    """arm64: `file` says ELF 64-bit ARM aarch64, statically linked, stripped; at most 3 MB"""
    check(ARM64 and os.path.exists(ARM64), f"CNI_ALL_STATIC_ARM64 must name the arm64 build, got {ARM64!r}")
    desc = sh("file", "-b", ARM64).stdout
    for word in ("ELF 64-bit LSB", "ARM aarch64", "statically linked", "stripped"):
        check(word in desc, desc)
    check(os.path.getsize(ARM64) <= 3 * 1024 * 1024, f"{os.path.getsize(ARM64)} bytes")


@test
def arm64_binary_answers_as_the_amd64_one():
    """arm64: under qemu-aarch64, --version, --list and VERSION through an applet name print what the amd64 build prints"""
    check(AMD64 and os.path.exists(AMD64), "CNI_ALL_STATIC must name the amd64 build")
    eq(arm64("--version").stdout, sh(AMD64, "--version").stdout)
    eq(arm64("--list").stdout, sh(AMD64, "--list").stdout)
    for applet in ("bridge", "host-local", "portmap", "vpc-eni"):
        got = sh(QEMU, "-0", applet, ARM64, env={"CNI_COMMAND": "VERSION"}).stdout
        want = sh(AMD64, applet, env={"CNI_COMMAND": "VERSION"}).stdout
        eq(got, want, applet)


# What qemu-user cannot emulate, so the unit tests tagged with it run natively only: NETLINK_NETFILTER
# sockets (qemu-user passes only rtnetlink, audit and uevent netlink through).
NOT_UNDER_QEMU = "~[netfilter]"


@test
def arm64_unit_tests_pass_under_qemu():
    """arm64: the unit tests, cross-built, pass under qemu-aarch64 (all but the few qemu-user cannot emulate, which are counted)"""
    check(UNIT_TESTS and os.path.exists(UNIT_TESTS), f"CNI_ALL_ARM64_UNIT_TESTS must name them, got {UNIT_TESTS!r}")
    desc = sh("file", "-b", UNIT_TESTS).stdout
    check("ARM aarch64" in desc and "statically linked" in desc, f"they are static arm64: {desc}")
    # Static, as the binary: run without -L, whose path rewriting would send "/" and /proc/self/exe
    # into the cross C library's root.
    cmd = [QEMU, UNIT_TESTS]
    listed = subprocess.run(cmd + ["--list-test-names-only"], capture_output=True, text=True, timeout=120).stdout
    skipped = subprocess.run(cmd + ["--list-test-names-only", NOT_UNDER_QEMU.replace("~", "")],
                             capture_output=True, text=True, timeout=120).stdout
    total, left_out = len(listed.strip().splitlines()), len(skipped.strip().splitlines())
    check(total >= 130 and left_out <= 2, f"{total} cases, {left_out} left out")
    r = subprocess.run(cmd + [NOT_UNDER_QEMU], capture_output=True, text=True, timeout=600, cwd=os.path.dirname(UNIT_TESTS))
    tail = r.stdout.strip().splitlines()[-3:]
    eq(r.returncode, 0, "\n".join(tail) + r.stderr[-2000:])
    check(any(line.startswith("All tests passed") for line in tail), tail)
    check(f"in {total - left_out} test cases" in tail[-1], tail)


def call(binary, applet, command, conf, ctr, ifname):
    env = {"CNI_COMMAND": command, "CNI_CONTAINERID": "arm64-ctr", "CNI_NETNS": ns_path(ctr), "CNI_IFNAME": ifname,
           "CNI_PATH": "/nonexistent", "PATH": os.environ.get("PATH", "")}
    cmd = [QEMU, "-0", applet, binary] if binary == ARM64 else [binary, applet]
    r = subprocess.run(cmd, input=json.dumps(conf), env=env, capture_output=True, text=True, timeout=60)
    eq(r.returncode, 0, f"{applet} {command}: {r.stdout}{r.stderr}")
    return json.loads(r.stdout) if r.stdout.strip() else None


def lo_up(ns):
    return "UP" in link(ns, "lo")["flags"]


@test
def arm64_loopback_and_host_local_change_the_kernel_and_the_store():
    """arm64: under qemu-aarch64, loopback ADD brings a throwaway namespace's lo up, CHECK passes, DEL takes it down; host-local ADD reserves an address file, DEL removes it; results equal the amd64 build's"""
    results = {}
    for name, binary in (("arm64", ARM64), ("amd64", AMD64)):
        data = tempfile.mkdtemp(prefix="cni-arm64-ipam.")
        try:
            with netns("cnit-a64") as ctr:
                lo = {"cniVersion": "1.0.0", "name": "lo", "type": "loopback"}
                check(not lo_up(ctr), "lo starts down")
                added = call(binary, "loopback", "ADD", lo, ctr, "lo")
                check(lo_up(ctr), f"{name}: ADD brought lo up")
                eq(addrs(ctr, "lo"), ["127.0.0.1/8", "::1/128"])
                call(binary, "loopback", "CHECK", dict(lo, prevResult=added), ctr, "lo")
                call(binary, "loopback", "DEL", lo, ctr, "lo")
                check(not lo_up(ctr), f"{name}: DEL took lo down")
                ipam = {"cniVersion": "1.0.0", "name": "arm64net", "ipam": {
                    "type": "host-local", "dataDir": data, "subnet": "10.214.64.0/24", "routes": [{"dst": "0.0.0.0/0"}]}}
                reserved = call(binary, "host-local", "ADD", ipam, ctr, "eth0")
                store = os.path.join(data, "arm64net")
                eq(open(os.path.join(store, "10.214.64.2")).read().split(), ["arm64-ctr", "eth0"], name)
                call(binary, "host-local", "DEL", ipam, ctr, "eth0")
                eq([f for f in os.listdir(store) if f[0].isdigit()], [], f"{name}: DEL released the address")
                added["interfaces"][0]["sandbox"] = "NS"
                results[name] = (added, reserved)
        finally:
            shutil.rmtree(data, ignore_errors=True)
    eq(results["arm64"], results["amd64"])


if __name__ == "__main__":
    run_all()
