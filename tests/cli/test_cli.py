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
from cnitest import LAUNCHER_TAG, check, eq, is_launcher_of, run_all, sh, test  # noqa: E402

CNI_ALL = os.environ["CNI_ALL"]
BUILD_ROOT = os.environ["BUILD_ROOT"]
APPLETS = ["bandwidth", "bridge", "dhcp", "dummy", "firewall", "flannel", "host-device", "host-local", "ipvlan", "loopback", "macvlan", "portmap", "ptp", "sbr", "static", "tap", "tuning", "vlan", "vpc-eni", "vpc-eni-ipam", "vrf"]


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
    """`cni-all dhcp daemon` and `dhcp daemon` (the symlink) reach the daemon's flag parser"""
    for r in (cli("dhcp", "daemon", "-bogus"), cli("daemon", "-bogus", argv0="/opt/cni/bin/dhcp")):
        eq(r.returncode, 2, r.stderr)
        eq(r.stderr.strip(), "dhcp daemon: flag provided but not defined: -bogus")


def version_of(path):
    """What VERSION through `path` answers (stdout), or its failure."""
    r = subprocess.run([path], env={"CNI_COMMAND": "VERSION"}, capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else f"rc={r.returncode} {r.stdout} {r.stderr}"


OURS = '{"cniVersion":"1.1.0","supportedVersions":["0.1.0","0.2.0","0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]}'


@test
def arm64_launcher_runs_its_applet():
    """the arm64 launcher (src/launcher/build.py with clang for aarch64, run under qemu-user) runs the cni-all beside it as its applet, also through a symlink, and answers a CNI error without it"""
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "launcher")
    d = tempfile.mkdtemp()
    try:
        launcher = os.path.join(d, "vrf")
        sh(sys.executable, os.path.join(source, "build.py"), os.path.join(source, "launcher.cpp"), launcher,
           "clang++-14", "--target=aarch64-linux-gnu", "-fuse-ld=lld", "-Wno-unused-command-line-argument")
        check(open(launcher, "rb").read(20)[18] == 0xB7, "an arm64 (EM_AARCH64) program")
        # Tagged as `cni-all install` tags it; qemu-aarch64 runs it, and the kernel runs the
        # x86-64 cni-all it executes.
        data = bytearray(open(launcher, "rb").read())
        at = data.index(LAUNCHER_TAG) + len(LAUNCHER_TAG)
        data[at:at + 3] = b"vrf"
        with open(launcher, "wb") as f:
            f.write(data)
        check(is_launcher_of(launcher, "vrf"), "tagged for vrf")
        shutil.copy(CNI_ALL, os.path.join(d, "cni-all"))
        os.symlink("vrf", os.path.join(d, "vrf-alias"))
        for name in ("vrf", "vrf-alias"):
            r = subprocess.run(["qemu-aarch64", os.path.join(d, name), "--help"], capture_output=True, text=True)
            eq(r.returncode, 0, r.stderr)
            check(r.stdout.startswith("vrf (meta)"), r.stdout)
        os.unlink(os.path.join(d, "cni-all"))
        r = subprocess.run(["qemu-aarch64", launcher], env={"CNI_COMMAND": "ADD"}, capture_output=True, text=True)
        eq(r.returncode, 1)
        check('"code": 999' in r.stdout and "cannot execute " + os.path.join(d, "cni-all") in r.stdout, r.stdout)
    finally:
        shutil.rmtree(d)


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
