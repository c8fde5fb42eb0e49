#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The multi-call binary's own commands: dispatch by argv[0] or first argument, --list, --help,
--version, unknown applets (exit 2 with the list), `cni-all install` (launchers, options, other
installers' copies replacing one applet only), and the layout `meson install` lays down. No
root needed."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import CNI_ALL, LAUNCHER_TAG, check, eq, is_launcher_of, run_all, sh, test  # noqa: E402

BUILD_ROOT = os.environ["BUILD_ROOT"]
APPLETS = ["bandwidth", "bridge", "cluster-ipam", "dhcp", "dummy", "firewall", "flannel", "host-device", "host-local", "ipvlan", "loopback", "macvlan", "portmap", "ptp", "sbr", "static", "tap", "tuning", "vlan", "vpc-eni", "vpc-eni-ipam", "vrf"]


def cli(*args, argv0=None, env=None):
    return subprocess.run([argv0 or CNI_ALL, *args], capture_output=True, text=True,
                          env=env or {"PATH": "/usr/bin:/bin"}, executable=CNI_ALL)


@test
def list_and_version():
    """--list names every applet with its kind; --version prints the version"""
    r = cli("--list")
    eq(r.returncode, 0)
    eq([line.split()[0] for line in r.stdout.splitlines()], APPLETS)
    check("ipam" in r.stdout and "main" in r.stdout, r.stdout)
    v = cli("--version")
    eq(v.returncode, 0)
    check(v.stdout.startswith("cni-all "), v.stdout)
    eq(v.stdout.splitlines()[1], "follows containernetworking/plugins v1.9; CNI spec 1.1.0 (configs and results 0.1.0 to 1.1.0)")


@test
def help_texts():
    """--help describes the commands; <applet> --help describes an applet's keys"""
    r = cli("--help")
    eq(r.returncode, 0)
    check("cni-all install DIR" in r.stdout and "host-local" in r.stdout, r.stdout)
    a = cli("host-local", "--help")
    eq(a.returncode, 0)
    check("rangeStart" in a.stdout and "CNI versions: 0.1.0" in a.stdout, a.stdout)
    b = cli("--help", argv0="/opt/cni/bin/static")
    check(b.stdout.startswith("static (ipam)"), b.stdout)
    v = cli("vpc-eni", "--help").stdout  # its commands, and the node file's keys with each ENI's
    for want in ("cni-all vpc-eni node-setup [--imds [URL] [--imds-v1] [--interval SECONDS]] FILE",
                 "cni-all vpc-eni node-teardown [FILE]", "Keys of the node file", "nodePortSupport", "secondaryIps"):
        check(want in v, f"{want!r} in {v}")


def help_keys(applet):
    """(key, type) of each line of the Keys table `<applet> --help` prints."""
    text = cli(applet, "--help").stdout
    if "\nKeys" not in text:
        return []
    table = text.split("\nKeys", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    return [tuple(line.split()[:2]) for line in table]


@test
def help_lists_exactly_the_keys_the_parser_reads():
    """every key --help lists is one the applet decodes: given a value of the wrong JSON type, ADD
    fails with Go's type error naming that key (the help table and the parser are one list)"""
    listed, wrong_types = 0, []
    for a in APPLETS:
        keys = help_keys(a)
        kind = cli(a, "--help").stdout.split("(", 1)[1].split(")", 1)[0]
        for key, typ in keys:
            wrong = 7 if typ == "bool" else True
            conf = {"cniVersion": "1.0.0", "name": "keys-test", "type": a}
            if kind == "ipam":
                conf["ipam"] = {"type": a, key: wrong}
            else:
                conf[key] = wrong
            env = {"PATH": "/usr/bin:/bin", "CNI_COMMAND": "ADD", "CNI_CONTAINERID": "keys-test",
                   "CNI_NETNS": "/nonexistent/netns", "CNI_IFNAME": "eth0", "CNI_PATH": "/nonexistent"}
            r = subprocess.run([CNI_ALL, a], input=json.dumps(conf), capture_output=True, text=True, env=env)
            check(r.returncode != 0, f"{a} {key}: {r.stdout}")
            msg = json.loads(r.stdout)["msg"]
            check("cannot unmarshal" in msg and f".{key} of type " in msg, f"{a} {key}: {msg}")
            if not msg.endswith(f".{key} of type {typ}"):
                wrong_types.append(f"{a} {key} {typ}: {msg}")
            listed += 1
    eq(wrong_types, [])  # the help names each key's type as Go's errors do
    check(listed >= 60, f"only {listed} keys listed")
    # docs/applets/ is generated from the same help.
    gen = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "applet-docs.py")
    r = subprocess.run([sys.executable, gen, "--check", CNI_ALL], capture_output=True, text=True)
    eq((r.returncode, r.stdout), (0, ""))


@test
def unknown_applet_exits_2_with_the_list():
    """an unknown applet name prints what exists and exits 2"""
    r = cli("bridgeX")
    eq(r.returncode, 2)
    check("unknown applet 'bridgeX'" in r.stderr and "host-local" in r.stderr, r.stderr)
    eq(cli().returncode, 2)
    eq(cli("install").returncode, 2)
    # A symlink named after an applet this build does not have.
    r = cli(argv0="/opt/cni/bin/no-such-plugin", env={"CNI_COMMAND": "VERSION"})
    eq(r.returncode, 2)
    check("unknown applet 'no-such-plugin'" in r.stderr, r.stderr)


@test
def dispatch_by_first_argument_and_by_argv0():
    """`cni-all static` and a program named `static` run the same applet"""
    env = {"CNI_COMMAND": "VERSION", "PATH": "/usr/bin:/bin"}
    a = cli("static", env=env)
    b = cli(argv0="/some/dir/static", env=env)
    eq(a.returncode, 0)
    eq(a.stdout, b.stdout)
    check('"supportedVersions"' in a.stdout, a.stdout)


# execve(argv[1]) with exactly the environment strings argv[2:], duplicates kept (os.execve
# takes a mapping, which cannot hold a key twice).
EXEC_WITH_ENV = r"""
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
def strings(items):
    return (ctypes.c_char_p * (len(items) + 1))(*[i.encode() for i in items], None)
libc.execve(sys.argv[1].encode(), strings([sys.argv[1]]), strings(sys.argv[2:]))
sys.exit("execve failed")
"""


@test
def version_is_answered_before_the_c_library_starts():
    """VERSION through a symlink or `cni-all <applet>` is written by the early entry point and is
    byte for byte what the dispatcher answers when that path declines (tests/static checks that
    the static binary makes no other system call)"""
    env = {"CNI_COMMAND": "VERSION", "PATH": "/usr/bin:/bin"}
    d = tempfile.mkdtemp()
    try:
        for a in APPLETS:
            os.symlink(CNI_ALL, os.path.join(d, a))
            versions = cli(a, "--help").stdout.split("CNI versions: ")[1].split("\n")[0].split(", ")
            want = '{"cniVersion":"1.1.0","supportedVersions":[' + ",".join(f'"{v}"' for v in versions) + "]}\n"
            by_link = subprocess.run([os.path.join(d, a)], env=env, capture_output=True, text=True)
            by_arg = cli(a, env=env)
            # An extra argument makes the early path decline: main() and the dispatcher answer.
            by_dispatcher = cli(a, "extra", env=env)
            for r in (by_link, by_arg, by_dispatcher):
                eq((r.returncode, r.stdout, r.stderr), (0, want, ""), a)
        # With CNI_COMMAND twice the last one counts, on both paths (as cni::env_value reads it).
        for first, last, version_doc in (("ADD", "VERSION", True), ("VERSION", "ADD", False)):
            r = subprocess.run([sys.executable, "-c", EXEC_WITH_ENV, os.path.join(d, "bridge"),
                                f"CNI_COMMAND={first}", f"CNI_COMMAND={last}"],
                               input='{"name": "n"}', capture_output=True, text=True)
            eq(r.stdout.startswith('{"cniVersion":"1.1.0","supportedVersions"'), version_doc, (first, last, r.stdout))
        # Only an exact VERSION is taken early; anything else reaches the dispatcher's checks.
        r = subprocess.run([os.path.join(d, "bridge")], env={"CNI_COMMAND": "VERSIONS"}, input='{"name": "n"}',
                           capture_output=True, text=True)
        eq(r.returncode, 1)
        check('"code": 4' in r.stdout and "VERSIONS" in r.stdout, r.stdout)
    finally:
        shutil.rmtree(d)


@test
def dhcp_daemon_subcommand_both_ways():
    """`cni-all dhcp daemon` and `dhcp daemon` (argv[0] dhcp, as its launcher runs it) reach the daemon's flag parser"""
    for r in (cli("dhcp", "daemon", "-bogus"), cli("daemon", "-bogus", argv0="/opt/cni/bin/dhcp")):
        eq(r.returncode, 2, r.stderr)
        eq(r.stderr.strip(), "dhcp daemon: flag provided but not defined: -bogus")


def version_of(path):
    """What VERSION through `path` answers (stdout), or its failure."""
    r = subprocess.run([path], env={"CNI_COMMAND": "VERSION"}, capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else f"rc={r.returncode} {r.stdout} {r.stderr}"


OURS = '{"cniVersion":"1.1.0","supportedVersions":["0.1.0","0.2.0","0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]}'


LAUNCHER_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "launcher")
# How src/launcher/build.py is run for each architecture: the build's compiler for this machine's,
# clang for arm64 (run under qemu-user); and how a launcher of each is run.
LAUNCHER_COMPILER = {"amd64": ["c++"],
                     "arm64": ["clang++-14", "--target=aarch64-linux-gnu", "-fuse-ld=lld", "-Wno-unused-command-line-argument"]}
RUN_LAUNCHER = {"amd64": [], "arm64": [shutil.which("qemu-aarch64") or "qemu-aarch64"]}


def build_launcher(path, applet, arch, *defines):
    """The launcher for `arch` built by src/launcher/build.py at `path`, tagged for `applet` as
    `cni-all install` tags it (an empty name leaves it untagged)."""
    sh(sys.executable, os.path.join(LAUNCHER_SOURCE, "build.py"), os.path.join(LAUNCHER_SOURCE, "launcher.cpp"), path,
       *LAUNCHER_COMPILER[arch], *defines)
    data = bytearray(open(path, "rb").read())
    eq(data[18], 0xB7 if arch == "arm64" else 0x3E, f"an {arch} program (e_machine)")
    at = data.index(LAUNCHER_TAG) + len(LAUNCHER_TAG)
    data[at:at + len(applet)] = applet.encode()
    with open(path, "wb") as f:
        f.write(data)
    if applet:
        check(is_launcher_of(path, applet), f"tagged for {applet}")


@test
def arm64_launcher_runs_its_applet():
    """the arm64 launcher (src/launcher/build.py with clang for aarch64, run under qemu-user) runs the cni-all beside it as its applet, also through a symlink, and answers a CNI error without it"""
    d = tempfile.mkdtemp()
    try:
        launcher = os.path.join(d, "vrf")
        # qemu-aarch64 runs it, and the kernel runs the x86-64 cni-all it executes.
        build_launcher(launcher, "vrf", "arm64")
        shutil.copy(CNI_ALL, os.path.join(d, "cni-all"))
        os.symlink("vrf", os.path.join(d, "vrf-alias"))
        for name in ("vrf", "vrf-alias"):
            r = subprocess.run([*RUN_LAUNCHER["arm64"], os.path.join(d, name), "--help"], capture_output=True, text=True)
            eq(r.returncode, 0, r.stderr)
            check(r.stdout.startswith("vrf (meta)"), r.stdout)
        os.unlink(os.path.join(d, "cni-all"))
        r = subprocess.run([*RUN_LAUNCHER["arm64"], launcher], env={"CNI_COMMAND": "ADD"}, capture_output=True, text=True)
        eq(r.returncode, 1)
        check('"code": 999' in r.stdout and "cannot execute " + os.path.join(d, "cni-all") in r.stdout, r.stdout)
    finally:
        shutil.rmtree(d)


# What a launcher that took any answer of readlinkat for its path would execute relative to the
# working directory: "cni-all" written at the (negative) error's offset leaves `i-all` for
# ENOENT, `ni-all` for EPERM...; a relative answer without a slash `cni-all`, one with a slash
# `sub/cni-all`. Each is planted there, and must never run.
PLANTED = ["cni-all", "ni-all", "i-all", "-all", "all", "ll", "l", "sub/cni-all"]


def plant(work, marker):
    """The programs of PLANTED in `work`: each appends its name to `marker` and prints it."""
    for name in PLANTED:
        path = os.path.join(work, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(f'#!/bin/sh\necho "$0" >> {marker}\necho "planted $0 ran"\n')
        os.chmod(path, 0o755)


def launcher_error(applet, what):
    """The CNI error a launcher tagged for `applet` answers (src/launcher/launcher.cpp)."""
    return {"code": 999, "msg": f"cni-all launcher{' for ' + applet if applet else ''}: {what}"}


def answer(r):
    """A launcher's answer: exit status and its stdout as JSON (or as text if it is not JSON)."""
    try:
        return r.returncode, json.loads(r.stdout)
    except ValueError:
        return r.returncode, r.stdout


# Runs a command in a user and mount namespace of its own (no root needed), after a shell
# `setup` there, from the working directory `setup` leaves.
IN_MOUNT_NS = ["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private", "sh", "-ec"]


def in_mount_ns(setup, cmd, **kw):
    return subprocess.run([*IN_MOUNT_NS, setup + '\nexec "$@"', "sh", *cmd], env={"CNI_COMMAND": "VERSION"},
                          capture_output=True, text=True, timeout=60, **kw)


def deep_folder(top, length):
    """A descriptor of a new folder below `top` whose path is `length` bytes or more, made one
    folder at a time (no system call takes such a path whole)."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    while length > len(top):
        os.mkdir("d" * 250, dir_fd=fd)
        deeper = os.open("d" * 250, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd, length = deeper, length - 251
    return fd


def copy_at(source, dir_fd, name):
    """An executable copy of `source` as `name` in the folder `dir_fd`."""
    with open(source, "rb") as src, os.fdopen(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o755, dir_fd=dir_fd), "wb") as dst:
        dst.write(src.read())


@test
def launcher_never_runs_a_path_it_did_not_find():
    """a launcher (amd64, and arm64 under qemu-user) that cannot read a whole absolute path from /proc/self/exe (no /proc, a relative answer, an unreachable or too long path, a full buffer) answers a CNI error and exits 1, and never runs a program from the working directory; untagged, it says so; a folder's name is escaped in its JSON"""
    top = tempfile.mkdtemp(prefix="cni-launcher.")
    marker = os.path.join(top, "planted-ran")
    ours = (0, json.loads(OURS))
    cannot_read = lambda err: (1, launcher_error("loopback", "cannot find its own folder: readlink /proc/self/exe: " + err))  # noqa: E731

    def run(arch, path, what, want, setup=None, **kw):
        cmd = [*RUN_LAUNCHER[arch], path]
        if setup:
            r = in_mount_ns(setup, cmd, **kw)
        else:
            r = subprocess.run(cmd, env={"CNI_COMMAND": "VERSION"}, capture_output=True, text=True, timeout=60, **kw)
        eq(answer(r), want, f"{arch}, {what}: {r.stderr}")
        ran = open(marker).read() if os.path.exists(marker) else ""
        eq(ran, "", f"{arch}, {what}: a planted program ran")

    try:
        bin_dir, work = os.path.join(top, "bin"), os.path.join(top, "work")
        os.makedirs(bin_dir)
        plant(work, marker)
        # amd64's as `cni-all install` lays it down; arm64's built for the purpose.
        sh(CNI_ALL, "install", bin_dir, "--applets", "loopback")
        launchers = {arch: os.path.join(bin_dir, f"loopback-{arch}") for arch in RUN_LAUNCHER}
        os.rename(os.path.join(bin_dir, "loopback"), launchers["amd64"])
        build_launcher(launchers["arm64"], "loopback", "arm64")
        for arch, path in launchers.items():
            run(arch, path, "as installed", ours, cwd=work)
        # No /proc (an empty tmpfs over it). Under qemu-user the launcher's readlinkat of
        # /proc/self/exe is answered by qemu itself (the real path of the program it was given,
        # /proc or not), so the arm64 launcher finds its folder and runs its applet.
        for arch, path in launchers.items():
            run(arch, path, "without /proc", ours if arch == "arm64" else cannot_read("no such file or directory"),
                f"mount -t tmpfs none /proc; cd {work}")
        # A /proc whose self/exe is a relative link (with a folder, and without one).
        for target in ("sub/loopback-amd64", "loopback-amd64"):
            run("amd64", launchers["amd64"], f"/proc/self/exe -> {target}",
                (1, launcher_error("loopback", "cannot find its own folder: /proc/self/exe is not an absolute path: " + target)),
                f"mount -t tmpfs none /proc; mkdir /proc/self; ln -s {target} /proc/self/exe; cd {work}")
        # Started from a working directory the root no longer reaches (its tmpfs lazily
        # unmounted), the launcher and the planted programs in it: qemu-user answers the
        # readlinkat with ENOENT, as the kernel does without /proc.
        unreachable = os.path.join(top, "unreachable")
        os.makedirs(unreachable)
        run("arm64", "./loopback-arm64", "from an unreachable folder", cannot_read("no such file or directory"),
            f"mount -t tmpfs none {unreachable}; cp -a {work}/. {launchers['arm64']} {unreachable}/; "
            f"cd {unreachable}; umount -l {unreachable}")
        # Its folder's path 4,096 bytes or more long: the kernel's readlinkat (and qemu-user's)
        # fails; run as ./loopback from there, the planted programs beside it.
        fd = deep_folder(top, 4200)
        try:
            for name in PLANTED[1:-1]:  # not cni-all: the launcher's folder is the working one
                copy_at(os.path.join(work, name), fd, name)
            for name in ("cni-all", *(os.path.basename(path) for path in launchers.values())):
                copy_at(os.path.join(bin_dir, name), fd, name)
            for arch in launchers:
                run(arch, f"./loopback-{arch}", "in a folder of 4,200 bytes", cannot_read("file name too long"),
                    preexec_fn=lambda: os.fchdir(fd))
        finally:
            os.close(fd)
        # A result that fills the buffer may have been cut: launchers built with a 64-byte
        # buffer, in a folder whose path is longer; cut, it would name the folder above, where
        # a cni-all is planted.
        cut = os.path.join(top, "p", "q" * 80)
        os.makedirs(cut)
        plant(os.path.dirname(cut), marker)
        shutil.copy(CNI_ALL, os.path.join(cut, "cni-all"))
        for arch in launchers:
            short = os.path.join(cut, f"loopback-{arch}")
            build_launcher(short, "loopback", arch, "-DCNI_LAUNCHER_PATH_MAX=64")
            run(arch, short, "with a full buffer",
                (1, launcher_error("loopback", "cannot find its own folder: its path is 64 bytes or longer")), cwd=work)
        # Untagged (as built, before `cni-all install` names its applet).
        for arch in launchers:
            untagged = os.path.join(bin_dir, f"untagged-{arch}")
            build_launcher(untagged, "", arch)
            run(arch, untagged, "untagged", (1, launcher_error("", "no applet name in its tag (cni-all install writes it)")))
        # A folder whose name JSON must escape, without cni-all in it.
        odd = os.path.join(top, 'a "quoted"\\ folder\n\t')
        os.makedirs(odd)
        for arch, path in launchers.items():
            shutil.copy(path, odd)
            run(arch, os.path.join(odd, os.path.basename(path)), "in an odd folder without cni-all",
                (1, launcher_error("loopback", f"cannot execute {odd}/cni-all: no such file or directory")))
    finally:
        shutil.rmtree(top)


@test
def install_is_idempotent_and_careful():
    """install: the binary and one launcher per applet; idempotent; replaces symlinks, refuses other files unless --force; --help, --applets, --skip"""
    d = tempfile.mkdtemp()
    try:
        r = cli("install", d)
        eq(r.returncode, 0, r.stderr)
        eq(sorted(os.listdir(d)), sorted(APPLETS + ["cni-all"]))
        for a in APPLETS:
            check(is_launcher_of(os.path.join(d, a), a), f"{a} is its own launcher")
            eq(os.stat(os.path.join(d, a)).st_mode & 0o777, 0o755)
        check(f"created {d}/host-local (launcher of cni-all)" in r.stdout, r.stdout)
        again = cli("install", d)
        eq(again.returncode, 0)
        check(f"unchanged {d}/host-local" in again.stdout, again.stdout)
        # The installed copy runs each applet through its launcher, also through a symlink to one.
        eq(version_of(os.path.join(d, "loopback")), OURS)
        os.symlink("loopback", os.path.join(d, "lo-alias"))
        eq(version_of(os.path.join(d, "lo-alias")), OURS)
        os.unlink(os.path.join(d, "lo-alias"))
        r = subprocess.run([os.path.join(d, "vrf"), "--help"], capture_output=True, text=True)
        check(r.stdout.startswith("vrf (meta)"), r.stdout)
        # A regular file that is not ours is left alone without --force.
        os.unlink(os.path.join(d, "static"))
        with open(os.path.join(d, "static"), "w") as f:
            f.write("not ours")
        r = cli("install", d)
        eq(r.returncode, 1)
        check("refusing to replace" in r.stderr and "static" in r.stderr, r.stderr)
        with open(os.path.join(d, "static")) as f:
            eq(f.read(), "not ours")
        r = cli("install", d, "--force")
        eq(r.returncode, 0, r.stderr)
        check(is_launcher_of(os.path.join(d, "static"), "static"), "--force replaced it")
        # A symlink (to cni-all, as older installs made, or elsewhere) is replaced by a launcher.
        for target in ("cni-all", "/usr/lib/cni/loopback"):
            os.unlink(os.path.join(d, "loopback"))
            os.symlink(target, os.path.join(d, "loopback"))
            r = cli("install", d)
            check(f"replaced the symlink {d}/loopback" in r.stdout, r.stdout)
            check(is_launcher_of(os.path.join(d, "loopback"), "loopback"), "a launcher again")
        # Without cni-all beside it a launcher answers with a CNI error, as a plugin would.
        os.rename(os.path.join(d, "cni-all"), os.path.join(d, "cni-all.away"))
        r = subprocess.run([os.path.join(d, "bridge")], env={"CNI_COMMAND": "ADD"}, capture_output=True, text=True)
        eq(r.returncode, 1)
        check('"code": 999' in r.stdout and "cannot execute " + os.path.join(d, "cni-all") in r.stdout, r.stdout)
        os.rename(os.path.join(d, "cni-all.away"), os.path.join(d, "cni-all"))
    finally:
        shutil.rmtree(d)
    # --help prints the install usage (it used to install into a folder named --help).
    here = tempfile.mkdtemp()
    try:
        r = subprocess.run([CNI_ALL, "install", "--help"], capture_output=True, text=True, cwd=here)
        eq(r.returncode, 0)
        check(r.stdout.startswith("usage: cni-all install DIR"), r.stdout)
        eq(os.listdir(here), [])
        r = cli("install", os.path.join(here, "x"), "--applets", "bridge,nosuch")
        eq(r.returncode, 2)
        check("unknown applet 'nosuch'" in r.stderr, r.stderr)
        # --applets: only those; --skip: all but those, and whatever is at their names stays.
        r = cli("install", os.path.join(here, "only"), "--applets", "bridge,host-local")
        eq(r.returncode, 0, r.stderr)
        eq(sorted(os.listdir(os.path.join(here, "only"))), ["bridge", "cni-all", "host-local"])
        os.makedirs(os.path.join(here, "skip"))
        with open(os.path.join(here, "skip", "flannel"), "w") as f:
            f.write("flannel's own")
        r = cli("install", os.path.join(here, "skip"), "--skip=flannel,dhcp")
        eq(r.returncode, 0, r.stderr)
        eq(sorted(os.listdir(os.path.join(here, "skip"))), sorted(a for a in APPLETS + ["cni-all"] if a != "dhcp"))
        eq(open(os.path.join(here, "skip", "flannel")).read(), "flannel's own")
    finally:
        shutil.rmtree(here)


@test
def another_installers_copy_replaces_one_applet_only():
    """install layout: cp, cp -f, install, tar -x and write-then-rename of another plugin onto one applet's name leave every other applet answering VERSION as itself"""
    other = "/usr/lib/cni/loopback"  # a different plugin: Debian's Go loopback
    check(os.path.exists(other), "Debian's containernetworking-plugins is installed")
    go_version = version_of(other)
    ours = {a: subprocess.run([CNI_ALL, a], env={"CNI_COMMAND": "VERSION"}, capture_output=True, text=True).stdout.strip()
            for a in APPLETS}
    styles = {
        "cp": lambda src, dst: sh("cp", src, dst),
        "cp -f": lambda src, dst: sh("cp", "-f", src, dst),
        "install": lambda src, dst: sh("install", "-m", "0755", src, dst),
        "tar -x": lambda src, dst: sh("sh", "-c", f'cd "$(dirname "{src}")" && tar -cf - "$(basename "{src}")" | '
                                                  f'tar -xf - -C "$(dirname "{dst}")" --transform "s|.*|$(basename "{dst}")|"'),
        "rename": lambda src, dst: (shutil.copyfile(src, dst + ".new"), os.chmod(dst + ".new", 0o755), os.rename(dst + ".new", dst)),
    }
    for style, copy in styles.items():
        d = tempfile.mkdtemp()
        try:
            eq(cli("install", d).returncode, 0)
            copy(other, os.path.join(d, "flannel"))
            eq(version_of(os.path.join(d, "flannel")), go_version, f"{style}: flannel is now the copied plugin")
            for a in APPLETS:
                if a != "flannel":
                    eq(version_of(os.path.join(d, a)), ours[a], f"{style} onto flannel: {a} still answers as cni-all")
            # cni-all itself is untouched: the same bytes as the binary that installed it.
            check(open(os.path.join(d, "cni-all"), "rb").read() == open(CNI_ALL, "rb").read(), f"{style}: cni-all intact")
        finally:
            shutil.rmtree(d)


@test
def meson_install_lays_down_launchers():
    """meson install puts cni-all and one launcher per applet into the plugin directory, and the dhcp daemon's systemd units"""
    dest = tempfile.mkdtemp()
    try:
        sh("meson", "install", "-C", BUILD_ROOT, "--no-rebuild", "--quiet", "--destdir", dest)
        bindir = os.path.join(dest, "opt/cni/bin")
        eq(sorted(os.listdir(bindir)), sorted(APPLETS + ["cni-all"]))
        for a in APPLETS:
            check(is_launcher_of(os.path.join(bindir, a), a), f"{a} is a launcher")
        eq(version_of(os.path.join(bindir, "bridge")), OURS)
        units = [os.path.join(root, f) for root, _, files in os.walk(dest) for f in files if f.startswith("cni-dhcp.")]
        eq(sorted(os.path.basename(u) for u in units), ["cni-dhcp.service", "cni-dhcp.socket"])
        service = open([u for u in units if u.endswith(".service")][0]).read()
        check("ExecStart=/opt/cni/bin/dhcp daemon" in service, service)
    finally:
        shutil.rmtree(dest)


if __name__ == "__main__":
    run_all()
