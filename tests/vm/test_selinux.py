#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The tap applet's selinuxContext under SELinux, inside the test VM booted with security=selinux
(tests/vm/run-in-vm.sh). The guest loads a policy of its own, compiled here by checkpolicy: a
domain tap_t that kernel_t (the VM's processes) may enter, and tun_socket rules by which only
tap_t may attach to a tap device labelled tap_t. Unknown classes and permissions are allowed,
so the rest of the guest works as without a policy. Checked: `ip tuntap add` runs in the
label's domain with the config's arguments; with enforcement on, the device it made refuses a
kernel_t process and accepts a tap_t one, where a tap made without the key accepts kernel_t
(the device carries its creator's label); a label the policy does not know, a failing `ip` and
no `ip` in PATH fail ADD and leave nothing behind."""
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import BIN, Plugin, check, eq, link, netns, ns_path, run_all, sh, test  # noqa: E402

SELINUXFS = "/sys/fs/selinux"
TAP_LABEL = "system_u:system_r:tap_t"

POLICY = """
class process
class tun_socket
sid kernel
sid unlabeled
sid file
class process { transition dyntransition sigchld }
class tun_socket { create relabelfrom relabelto attach_queue }
type kernel_t;
type tap_t;
type file_t;
role system_r;
role system_r types { kernel_t tap_t };
allow kernel_t tap_t:process transition;
allow tap_t kernel_t:process sigchld;
allow kernel_t self:process sigchld;
allow kernel_t self:tun_socket { create relabelfrom relabelto attach_queue };
allow tap_t self:tun_socket { create relabelfrom relabelto attach_queue };
user system_u roles { system_r object_r };
sid kernel system_u:system_r:kernel_t
sid unlabeled system_u:object_r:file_t
sid file system_u:object_r:file_t
"""

# Attaches to the tap named argv[1] in the current network namespace (TUNSETIFF with the flags
# `ip tuntap add mode tap ... multi_queue` gave it); prints "attached" or the errno's name.
ATTACH = r"""
import errno, fcntl, os, struct, sys
fd = os.open("/dev/net/tun", os.O_RDWR)
try:
    fcntl.ioctl(fd, 0x400454ca, struct.pack("16sH22x", sys.argv[1].encode(), 0x0002 | 0x1000 | 0x0100))
    print("attached")
except OSError as e:
    print(errno.errorcode[e.errno])
"""


def load_policy():
    """Mounts selinuxfs and loads the policy (permissive: the guest boots so)."""
    os.makedirs(SELINUXFS, exist_ok=True)
    if not os.path.exists(os.path.join(SELINUXFS, "load")):
        sh("mount", "-t", "selinuxfs", "selinuxfs", SELINUXFS)
    work = tempfile.mkdtemp()
    try:
        with open(os.path.join(work, "policy.conf"), "w") as f:
            f.write(POLICY)
        sh("checkpolicy", "-U", "allow", "-c", "33", "-o", os.path.join(work, "policy"), os.path.join(work, "policy.conf"))
        with open(os.path.join(work, "policy"), "rb") as src, open(os.path.join(SELINUXFS, "load"), "wb") as dst:
            dst.write(src.read())
    finally:
        shutil.rmtree(work)
    eq(open("/proc/self/attr/current").read().rstrip("\0\n"), "system_u:system_r:kernel_t")


@contextlib.contextmanager
def enforcing():
    with open(os.path.join(SELINUXFS, "enforce"), "w") as f:
        f.write("1")
    try:
        yield
    finally:
        with open(os.path.join(SELINUXFS, "enforce"), "w") as f:
            f.write("0")


def attach(ns, name, label=None):
    """Attaches to tap `name` in `ns` from a process of this one's domain, or of `label`'s."""
    def enter_label():
        if label:
            with open("/proc/thread-self/attr/exec", "w") as f:
                f.write(label)
    r = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", ATTACH, name],
                       capture_output=True, text=True, preexec_fn=enter_label, timeout=60)
    check(r.returncode == 0, r.stderr)
    return r.stdout.strip()


def fake_ip(directory, body):
    """An `ip` in `directory` that runs `body` (sh) before the real one."""
    real = shutil.which("ip")
    path = os.path.join(directory, "ip")
    with open(path, "w") as f:
        f.write(f"#!/bin/sh\n{body}\nexec {real} \"$@\"\n")
    os.chmod(path, 0o755)
    return {"PATH": f"{directory}:{os.environ.get('PATH', '/usr/sbin:/usr/bin:/sbin:/bin')}"}


def conf(data, **extra):
    c = {"cniVersion": "1.0.0", "name": "tap-selinux", "type": "tap",
         "ipam": {"type": "host-local", "subnet": "10.85.0.0/24", "dataDir": data}}
    c.update(extra)
    return c


def tap():
    return Plugin(os.path.join(BIN, "tap"))


@test(vm=True)
def tap_made_in_the_selinux_context():
    """tap selinuxContext: `ip tuntap add` runs as the label with the config's arguments; the device
    then admits only that domain (enforcing), a tap made without the key admits kernel_t; CHECK, DEL"""
    load_policy()
    data = tempfile.mkdtemp()
    try:
        with netns("host") as host, netns("ctr") as ctr:
            log = os.path.join(data, "ip.log")
            env = fake_ip(data, f'echo "$(tr -d "\\0" < /proc/self/attr/current) $*" >> {log}')
            c = conf(data, selinuxContext=TAP_LABEL, multiQueue=True, owner=4242, group=4343, mtu=1400,
                     mac="0a:00:00:00:00:91")
            res = tap().run("ADD", c, host_ns=host, netns=ns_path(ctr), ifname="tap0", extra_env=env).ok().json()
            eq(res["interfaces"], [{"mac": "0a:00:00:00:00:91", "name": "tap0", "sandbox": ns_path(ctr)}])
            calls = [l for l in open(log).read().splitlines() if " tuntap " in l]
            eq(len(calls), 1, calls)
            label, args = calls[0].split(" ", 1)
            eq(label, TAP_LABEL)
            check(args.startswith("tuntap add mode tap name veth"), args)
            check(args.endswith(" multi_queue user 4242 group 4343"), args)
            d = sh("ip", "-n", ctr, "-d", "link", "show", "tap0").stdout
            for want in ("tun type tap", "multi_queue", "persist on", "user 4242", "group 4343", "mtu 1400", "vnet_hdr off"):
                check(want in d, f"{want!r} in {d}")
            check("10.85.0.2/24" in sh("ip", "-n", ctr, "-br", "addr", "show", "tap0").stdout)
            tap().run("ADD", conf(data, multiQueue=True), host_ns=host, netns=ns_path(ctr), ifname="tap1").ok()
            with enforcing():
                eq(attach(ctr, "tap0"), "EACCES", "kernel_t may not take over a tap_t device")
                eq(attach(ctr, "tap0", TAP_LABEL), "attached", "tap_t may")
                eq(attach(ctr, "tap1"), "attached", "a device made without the key is kernel_t's")
            tap().run("CHECK", dict(c, prevResult=res), host_ns=host, netns=ns_path(ctr), ifname="tap0").ok()
            for ifname in ("tap0", "tap1"):
                tap().run("DEL", c, host_ns=host, netns=ns_path(ctr), ifname=ifname).ok()
                check(link(ctr, ifname) is None)
            eq([f for f in os.listdir(os.path.join(data, "tap-selinux")) if f[0].isdigit()], [])
    finally:
        shutil.rmtree(data)


@test(vm=True)
def tap_selinux_failures_leave_nothing():
    """tap selinuxContext: a label the policy lacks, a failing `ip`, a failure after `ip` made the
    device and no `ip` in PATH fail ADD with their reasons; no device and no allocation remain"""
    load_policy()
    data = tempfile.mkdtemp()
    empty = tempfile.mkdtemp()
    try:
        with netns("host") as host, netns("ctr") as ctr:
            run = lambda c, **kw: tap().run("ADD", c, host_ns=host, netns=ns_path(ctr), ifname="tap0", **kw)  # noqa: E731
            eq(run(conf(data, selinuxContext="system_u:system_r:nosuch_t")).error(),
               {"code": 999, "msg": 'failed to set the SELinux exec label "system_u:system_r:nosuch_t": '
                                    'write /proc/thread-self/attr/exec: invalid argument'})
            env = fake_ip(data, 'case "$*" in *tuntap*) echo "ioctl(TUNSETIFF): Device or resource busy" >&2; exit 1;; esac')
            eq(run(conf(data, selinuxContext=TAP_LABEL), extra_env=env).error()["msg"],
               "failed to run command ioctl(TUNSETIFF): Device or resource busy\n: exit status 1")
            # `ip` makes the device, then a later step fails: the device goes again.
            eq(run(conf(data, selinuxContext=TAP_LABEL, bridge="nobr")).error()["msg"],
               'tap: bridge "nobr" not found in the container namespace')
            eq(run(conf(data, selinuxContext=TAP_LABEL), extra_env={"PATH": empty}).error()["msg"],
               'failed to run command : exec: "ip": executable file not found in $PATH')
            eq([l for l in sh("ip", "-n", ctr, "-br", "link").stdout.splitlines() if not l.startswith("lo ")], [])
            check(not os.path.exists(os.path.join(data, "tap-selinux")), "IPAM never ran")
            tap().run("DEL", conf(data, selinuxContext=TAP_LABEL), host_ns=host, netns=ns_path(ctr), ifname="tap0").ok()
    finally:
        shutil.rmtree(data)
        shutil.rmtree(empty)


if __name__ == "__main__":
    run_all(cleanup=[BIN])
