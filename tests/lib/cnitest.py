# SPDX-License-Identifier: Apache-2.0
"""Helpers for the Python suites: a TAP runner (one line per test, so meson counts tests),
throwaway network namespaces that are removed even when a test fails, running a plugin binary
the way a runtime does (CNI_* environment, config on stdin) inside a namespace, and what the
tests run: CNI_ALL, BIN, REF and LEGACY (below). A test file's prologue is two lines:

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
    from cnitest import BIN, REF, Plugin, check, netns, run_all, test  # noqa: E402
"""
import atexit
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import uuid

# Every temporary file and directory a test process makes through tempfile (plugin install
# dirs, IPAM data dirs, work dirs) goes under one scratch directory, removed when the process
# exits, pass or fail, so runs leave nothing behind in /tmp.
_SCRATCH = tempfile.mkdtemp(prefix="cni-all-test.")
_SCRATCH_OWNER = os.getpid()
tempfile.tempdir = _SCRATCH


def remove_scratch():
    """Removes this process's scratch directory; runs at exit, and must be called before an
    exec that replaces the process, which skips exit handlers."""
    if os.getpid() != _SCRATCH_OWNER:  # a forked child exiting: the directory is not its own
        return
    # Never recurse into something still mounted (a bind-mounted /sys, say): leave it, loudly.
    with open("/proc/self/mountinfo") as f:
        mounted = [line.split()[4] for line in f if line.split()[4].startswith(_SCRATCH + "/")]
    if mounted:
        print(f"# left {_SCRATCH}: still mounted under it: {' '.join(mounted)}", file=sys.stderr)
        return
    shutil.rmtree(_SCRATCH, ignore_errors=True)


atexit.register(remove_scratch)

_TESTS = []


def test(fn=None, *, vm=False):
    """Registers a test: `@test`, or `@test(vm=True)` for one that needs a kernel feature this
    machine lacks. Those run in the test VM only (tests/vm, where CNI_TEST_IN_VM=1), and the host
    run leaves them out rather than counting them as skipped: each runs in exactly one place."""
    def register(f):
        f.vm = vm
        _TESTS.append(f)
        return f
    return register(fn) if fn else register


# The firewall applet's handle records (docs/compatibility.md, firewall): a test that drops its
# namespaces without a DEL leaves its record behind. Records only spare a DEL a chain read, so
# removing them, even under another suite running at the time, changes no outcome.
FIREWALL_RECORDS = "/run/cni/cni-all-firewall"


def run_all(cleanup=()):
    """Runs the registered tests as TAP, then removes the directories in `cleanup` (and the
    firewall's records, when the machine had none before)."""
    had_records = os.path.isdir(FIREWALL_RECORDS)
    try:
        _run_tests()
    finally:
        for d in cleanup:
            shutil.rmtree(d, ignore_errors=True)
        if not had_records:
            shutil.rmtree(FIREWALL_RECORDS, ignore_errors=True)


def _run_tests():
    """TAP on stdout, with each test's duration as a diagnostic line; a failure's traceback
    also goes to stderr, which is what `meson test --print-errorlogs` shows of a TAP test."""
    only = os.environ.get("CNI_TEST_FILTER")
    in_vm = os.environ.get("CNI_TEST_IN_VM") == "1"
    tests = [t for t in _TESTS if t.vm == in_vm and (not only or only in t.__name__)]
    # CNI_TEST_SHARD=I/N runs every Nth test from the Ith (1-based): one suite in N processes.
    shard, shards = map(int, os.environ.get("CNI_TEST_SHARD", "1/1").split("/"))
    tests = tests[shard - 1::shards]
    failed = 0
    for n, t in enumerate(tests, 1):
        name = (t.__doc__ or t.__name__).strip().splitlines()[0]
        start = time.monotonic()
        try:
            t()
            print(f"ok {n} - {name}", flush=True)
        except Exception:  # noqa: BLE001 - every failure is reported as TAP
            failed += 1
            print(f"not ok {n} - {name}", flush=True)
            print(f"FAILED {t.__name__}:\n{traceback.format_exc()}", file=sys.stderr, flush=True)
            for line in traceback.format_exc().splitlines():
                print(f"# {line}", flush=True)
        print(f"# {t.__name__}: {time.monotonic() - start:.1f} s", flush=True)
    print(f"1..{len(tests)}", flush=True)
    sys.exit(1 if failed else 0)


def check(cond, what=""):
    if not cond:
        raise AssertionError(what)


def eq(got, want, what=""):
    if got != want:
        raise AssertionError(f"{what}\n--- got:\n{got}\n--- want:\n{want}")


# No single command or plugin call in a test may hang the suite: past this it fails that test.
CALL_TIMEOUT = 240


# CNI_TEST_TRACE=SECONDS prints each command that took longer, to find where a suite's time goes.
_TRACE = float(os.environ.get("CNI_TEST_TRACE") or "inf")


def _run(cmd, label="", **kw):
    start = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    took = time.monotonic() - start
    if took > _TRACE:
        print(f"# {took:.2f} s: {' '.join(cmd)} {label}", file=sys.stderr, flush=True)
    return r


# The environment of a plugin run under strace: a sanitizer build's LeakSanitizer cannot stop the
# process's threads under another tracer, and ends it with code 86 (src/sanitizer_options.cpp.in).
UNDER_STRACE = {"ASAN_OPTIONS": "detect_leaks=0"}


def sh(*args, check_rc=True, **kw):
    kw.setdefault("timeout", CALL_TIMEOUT)
    r = _run(list(args), **kw)
    if check_rc and r.returncode != 0:
        raise AssertionError(f"{args} failed ({r.returncode}): {r.stderr}{r.stdout}")
    return r


@contextlib.contextmanager
def netns(prefix="cnit"):
    """A named network namespace under /run/netns, deleted on exit."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    sh("ip", "netns", "add", name)
    try:
        yield name
    finally:
        sh("ip", "netns", "del", name, check_rc=False)


def ns_path(name):
    return f"/run/netns/{name}"


def ip_json(ns, *args):
    out = sh("ip", "-n", ns, "-j", *args).stdout
    return json.loads(out) if out.strip() else []


def link(ns, name):
    """The link as `ip -j link` reports it, or None if there is no such link."""
    r = sh("ip", "-n", ns, "-j", "link", "show", "dev", name, check_rc=False)
    if r.returncode != 0 or not r.stdout.strip():
        return None
    return json.loads(r.stdout)[0]


def link_details(ns, dev):
    """The link's `ip -d` description, normalised. The operstate is left out: the kernel's
    linkwatch moves a new link from UNKNOWN to UP asynchronously, and a link on a dummy master
    stays UNKNOWN; the flags (UP, LOWER_UP) stay in."""
    text = sh("ip", "-n", ns, "-d", "link", "show", dev).stdout
    text = re.sub(r"^\d+: ", "", text)
    text = re.sub(r" state [A-Z]+ ", " ", text)
    text = re.sub(r"(@if)\d+", r"\1N", text)
    text = re.sub(r"link-netns \S+", "link-netns HOST", text)
    return re.sub(r"([0-9a-f]{2}:){5}[0-9a-f]{2}", "MAC", text).splitlines()[:3]


def addrs(ns, dev):
    info = ip_json(ns, "addr", "show", "dev", dev)
    return [f"{a['local']}/{a['prefixlen']}" for i in info for a in i.get("addr_info", [])]


def link_local(ns, dev, wait=2.0):
    """The link's IPv6 link-local addresses, waiting up to `wait` seconds for one to appear."""
    deadline = time.monotonic() + wait
    while True:
        found = [a for a in addrs(ns, dev) if a.startswith("fe80:")]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def check_skipped_link_local(run, conf, result, ctr, address, ping=None):
    """The state skipIPv6LinkLocal gives `ctr`'s IPv4-only eth0: addrgenmode none, `address`
    its only address, `ping` reachable; CHECK (`run(command, conf)`) passes, and fails once a
    link-local address is added (removed again afterwards)."""
    d = sh("ip", "-n", ctr, "-d", "link", "show", "eth0").stdout
    check("addrgenmode none" in d, d)
    eq(addrs(ctr, "eth0"), [address])
    if ping:
        sh("ip", "netns", "exec", ctr, "ping", "-c1", "-W3", ping)
    run("CHECK", dict(conf, prevResult=result)).ok()
    sh("ip", "-n", ctr, "addr", "add", "fe80::1/64", "dev", "eth0")
    eq(run("CHECK", dict(conf, prevResult=result)).error()["msg"],
       "skipIPv6LinkLocal: eth0 has the IPv6 link-local address fe80::1/64")
    sh("ip", "-n", ctr, "addr", "del", "fe80::1/64", "dev", "eth0")


class Plugin:
    """Runs one plugin binary (ours through its launcher, or a reference one)."""

    def __init__(self, path, cni_path=None):
        self.path = path
        self.cni_path = cni_path or os.path.dirname(path)

    def run(self, command, conf, *, host_ns=None, container_id="c1", netns="", ifname="eth0",
            args=None, extra_env=None, raw_env=None, wrap=()):
        """`wrap`: a command line the plugin runs under, inside host_ns (`unshare ...`)."""
        if raw_env is not None:
            env = dict(raw_env)
        else:
            env = {"CNI_COMMAND": command, "CNI_CONTAINERID": container_id, "CNI_NETNS": netns,
                   "CNI_IFNAME": ifname, "CNI_PATH": self.cni_path}
            if args is not None:
                env["CNI_ARGS"] = args
        env["PATH"] = os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        env.update(extra_env or {})
        stdin = conf if isinstance(conf, str) else json.dumps(conf)
        cmd = [*wrap, self.path]
        if host_ns:  # the test's own `ip`: the plugin's PATH may be one without it
            cmd = [shutil.which("ip") or "ip", "netns", "exec", host_ns] + cmd
        r = _run(cmd, input=stdin, env=env, timeout=CALL_TIMEOUT, label=command)
        return Outcome(r.returncode, r.stdout, r.stderr)


class Outcome:
    def __init__(self, rc, out, err):
        self.rc, self.out, self.err = rc, out, err

    def json(self):
        return json.loads(self.out)

    def ok(self):
        if self.rc != 0:
            raise AssertionError(f"plugin failed rc={self.rc}: {self.out} {self.err}")
        return self

    def error(self):
        if self.rc == 0:
            raise AssertionError(f"plugin unexpectedly succeeded: {self.out}")
        return json.loads(self.out)

    def __repr__(self):
        return f"Outcome(rc={self.rc}, out={self.out!r}, err={self.err!r})"


def iptables_save(ns, table="nat", v6=False):
    """`table` of `ns` as iptables-save prints it, the legacy variant's and then the nft one's
    (our plugins, like the Go ones, write where the `iptables` in their PATH writes)."""
    base = "ip6tables" if v6 else "iptables"
    return "".join(sh("ip", "netns", "exec", ns, f"{base}-{variant}-save", "-t", table).stdout
                   for variant in ("legacy", "nft"))


def iptables_list(ns, table="nat", chain=None):
    """`iptables -t TABLE -S [CHAIN]` of `ns` in both variants, without counters or timestamps;
    a variant lacking the chain adds nothing."""
    return "".join(sh("ip", "netns", "exec", ns, f"iptables-{variant}", "-t", table, "-S", *([chain] if chain else []),
                      check_rc=False).stdout for variant in ("legacy", "nft"))


def nft_masq_comments(ns):
    """The comments of the rules in the ipMasq nftables chain (inet cni_plugins_masquerade
    masq_checks) of `ns`; none when the table is absent."""
    out = sh("ip", "netns", "exec", ns, "nft", "list", "chain", "inet", "cni_plugins_masquerade", "masq_checks",
             check_rc=False).stdout
    return [line.split('comment "')[1].rstrip('"') for line in out.splitlines() if "masquerade comment" in line]


def masquerade_source(host, ctr, subnet_prefix, port):
    """Connects from `ctr` to a throwaway "remote" namespace wired to `host` through a veth
    (<subnet_prefix>.1 on the host, .2 remote) and returns the source address the remote side
    saw."""
    with netns("remote") as remote:
        sh("ip", "-n", host, "link", "add", "up0", "type", "veth", "peer", "name", "down0", "netns", remote)
        sh("ip", "-n", host, "addr", "add", f"{subnet_prefix}.1/24", "dev", "up0")
        sh("ip", "-n", host, "link", "set", "up0", "up")
        sh("ip", "-n", remote, "addr", "add", f"{subnet_prefix}.2/24", "dev", "down0")
        sh("ip", "-n", remote, "link", "set", "down0", "up")
        server = subprocess.Popen(
            ["ip", "netns", "exec", remote, "python3", "-c",
             "import socket;s=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);"
             f"s.bind(('{subnet_prefix}.2',{port}));s.listen(1);print('ready',flush=True);"
             "c,a=s.accept();print(a[0],flush=True)"],
            stdout=subprocess.PIPE, text=True)
        try:
            eq(server.stdout.readline().strip(), "ready")
            sh("ip", "netns", "exec", ctr, "python3", "-c",
               f"import socket;socket.create_connection(('{subnet_prefix}.2',{port}),timeout=5).close()")
            return server.stdout.readline().strip()
        finally:
            server.kill()
            server.wait()
            sh("ip", "-n", host, "link", "del", "up0", check_rc=False)


def install_dir(cni_all):
    """A fresh plugin directory populated by `cni-all install` (a copy of cni-all, a launcher per applet)."""
    d = tempfile.mkdtemp(prefix="cni-all-bin.")
    sh(cni_all, "install", d)
    return d


LAUNCHER_TAG = b"cni-all launcher v1 applet="


def is_launcher_of(path, applet):
    """Whether `path` is the launcher `cni-all install` lays down for `applet` (src/launcher/):
    a regular file of a few KiB carrying the launcher tag with the applet's name."""
    if os.path.islink(path) or not os.path.isfile(path):
        return False
    data = open(path, "rb").read()
    at = data.find(LAUNCHER_TAG)
    return os.path.getsize(path) < 16384 and at >= 0 and data[at + len(LAUNCHER_TAG):].split(b"\0")[0] == applet.encode()


@contextlib.contextmanager
def victim_file():
    """A file outside any state directory, holding "original": a link planted in a state
    directory points at it, and a test asserts it still holds that."""
    f = tempfile.NamedTemporaryFile("w", delete=False, prefix="cni-victim.")
    f.write("original")
    f.close()
    try:
        yield f.name
    finally:
        os.unlink(f.name)


def legacy_iptables_path():
    """A fresh folder for the front of PATH under which `iptables` (and ip6tables, -save,
    -restore) is iptables-legacy: a node of that kind, for our plugins and Go's alike."""
    d = tempfile.mkdtemp(prefix="cni-legacy-path.")
    for name in ["iptables", "ip6tables", "iptables-save", "ip6tables-save", "iptables-restore", "ip6tables-restore"]:
        os.symlink(f"/usr/sbin/{name.replace('tables', 'tables-legacy', 1)}", os.path.join(d, name))
    return d


def reference_dir():
    """Debian's Go plugins (containernetworking-plugins), or None when they are not installed."""
    d = "/usr/lib/cni"
    return d if os.path.exists(os.path.join(d, "host-local")) else None


def artifact(name):
    """The path the environment variable `name` names: the static binary (CNI_ALL_STATIC), the
    arm64 one and its unit tests (CNI_ALL_STATIC_ARM64, CNI_ALL_ARM64_UNIT_TESTS), the Debian
    package (CNI_ALL_DEB). In a run of scripts/test.sh they are built beside the tests
    (scripts/build-later.sh): CNI_TEST_ARTIFACTS names the folder where each build notes, once
    done, the path (a file named `name`) or its failure (`name`.failed, holding the build log's
    path, whose end is printed); this waits for that note, at most an hour. "" when none."""
    pending = os.environ.get("CNI_TEST_ARTIFACTS")
    if not pending:
        return os.environ.get(name, "")
    done, failed = os.path.join(pending, name), os.path.join(pending, name + ".failed")
    deadline = time.monotonic() + 3600
    while time.monotonic() < deadline:
        if os.path.exists(done):
            return open(done).read().strip()
        if os.path.exists(failed):
            log = open(failed).read().strip()
            tail = open(log, errors="replace").read()[-3000:] if os.path.exists(log) else ""
            print(f"# the build of {name} failed ({log}):\n" + "\n".join("# " + line for line in tail.splitlines()), flush=True)
            return ""
        time.sleep(2)
    print(f"# the build of {name} did not finish within an hour", flush=True)
    return ""


# What the tests run, made when a test file first imports the name and shared by every module
# of the process (the VM suite imports several applets' files): CNI_ALL, the cni-all binary
# under test (meson passes it in the environment); BIN, a plugin folder `cni-all install` laid
# out from it; REF, Debian's Go plugins (reference_dir); LEGACY, a folder for the front of PATH
# that makes the node an iptables-legacy one (legacy_iptables_path). The suites of the static
# binary and of the package have no CNI_ALL, and import none of them.
_RUN_NAMES = {
    "CNI_ALL": lambda: os.environ["CNI_ALL"],
    "BIN": lambda: install_dir(os.environ["CNI_ALL"]),
    "REF": reference_dir,
    "LEGACY": legacy_iptables_path,
}


def __getattr__(name):
    """A name of _RUN_NAMES, made at its first import and kept as the module's own from then on."""
    if name not in _RUN_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = _RUN_NAMES[name]()
    return value


def canonical_result(text):
    """A result as a 1.x consumer sees it: parsed, with an empty dns block removed (Go v1.1
    printed "dns": {} at 1.x; v1.9 omits it)."""
    obj = json.loads(text)
    if obj.get("dns") == {}:
        del obj["dns"]
    return obj
