#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tests of the opt-in call log (docs/logging.md), with host-local calls in a temporary data
directory and the dhcp daemon on a temporary socket (no network namespace needed): off by
default; the node-wide file (CNI_ALL_LOG_CONFIG), over which a network may only set its own
logLevel; one line per call with the applet, verb, network, container, ifname, netns, duration
and the result or the error's code and message; the steps at debug level; rotation by size,
bounded by the node file; syslog through /dev/log only (a mount namespace of its own); concurrent
calls leaving whole lines; a log that cannot be written never failing a call; the dhcp daemon's
lines with levels. And every way a network config or a planted file could make root append to,
create, rename or delete a file other than its own log, or fill the disk: each is tried, and its
target is left as it was (a case that needs another user's file runs as root only)."""
import concurrent.futures
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import CNI_ALL, check, eq, run_all, test  # noqa: E402

LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (error|info|debug) ")
LINE_LIMIT = 16384  # docs/logging.md: a line is cut past this
AS_ROOT = os.geteuid() == 0
NOBODY = 65534


def host_local(work, cid, *, node=None, extra=None, command="ADD", subnet="10.231.0.0/24", wrap=(), raw=None):
    conf = {"cniVersion": "1.0.0", "name": "lognet", "ipam": {"type": "host-local", "subnet": subnet, "dataDir": f"{work}/data"}}
    conf.update(extra or {})
    env = {"CNI_COMMAND": command, "CNI_CONTAINERID": cid, "CNI_NETNS": "/run/netns/none", "CNI_IFNAME": "eth0",
           "CNI_PATH": os.path.dirname(CNI_ALL), "CNI_ALL_LOG_CONFIG": node or f"{work}/no-such-settings.json",
           "PATH": os.environ.get("PATH", "")}
    return subprocess.run([*wrap, CNI_ALL, "host-local"], input=json.dumps(conf) if raw is None else raw, env=env, capture_output=True, text=True,
                          timeout=60)


def settings(work, **keys):
    path = f"{work}/log.json"
    with open(path, "w") as f:
        json.dump(keys, f)
    return path


def lines(path):
    with open(path) as f:
        out = f.read().splitlines()
    for line in out:
        check(LINE.match(line), f"a whole, timestamped line: {line[:200]!r}")
    return out


def ok(r, what=""):
    """The call succeeded and answered with its addresses: logging never fails a call."""
    eq(r.returncode, 0, f"{what}: {r.stdout} {r.stderr}")
    check(json.loads(r.stdout)["ips"], r.stdout)


def state(path):
    """What a file is: its kind, owner, mode, links, inode and content (a link's target)."""
    st = os.lstat(path)
    body = os.readlink(path) if stat.S_ISLNK(st.st_mode) else open(path, "rb").read() if stat.S_ISREG(st.st_mode) else None
    if isinstance(body, bytes) and len(body) > 200:
        body = f"{len(body)} bytes, sha256 {hashlib.sha256(body).hexdigest()}"
    return (stat.S_IFMT(st.st_mode), st.st_uid, stat.S_IMODE(st.st_mode), st.st_nlink, st.st_ino, body)


def victim(path, data=b"echo original\n", mode=0o644):
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)
    return path


def folder(path, mode=0o700, owner=None):
    os.mkdir(path)
    os.chmod(path, mode)
    if owner is not None:
        os.chown(path, owner, owner)
    return path


def log_made_by_the_logger(work, path, size=0):
    """The node's log file as the logger makes it (one call), then grown to `size` bytes."""
    ok(host_local(work, f"mk-{os.path.basename(path)}", node=settings(work, logLevel="info", logFile=path)))
    if size:
        os.truncate(path, size)


class Work:
    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="cni-log.")
        return self.dir

    def __exit__(self, *exc):
        shutil.rmtree(self.dir)


@test
def off_by_default():
    """logging: without settings nothing is written anywhere"""
    with Work() as work:
        r = host_local(work, "c1")
        eq(r.returncode, 0, r.stdout)
        eq(sorted(os.listdir(work)), ["data"])


@test
def node_wide_line_per_call():
    """logging: the node's settings at info give one line per call: the call, its duration, its result or error"""
    with Work() as work:
        node = settings(work, logLevel="info", logFile=f"{work}/cni.log")
        eq(host_local(work, "c1", node=node).returncode, 0)
        eq(host_local(work, "c1", node=node).returncode, 1)  # a second ADD of the same id
        eq(host_local(work, "c1", node=node, command="DEL").returncode, 0)
        got = lines(f"{work}/cni.log")
        eq(len(got), 3, got)
        check(re.search(r' info host-local ADD net="lognet" id="c1" ifname="eth0" netns="/run/netns/none" [\d.]+ms ok '
                        r'result=\{"cniVersion":"1.0.0","ips":\[\{"address":"10.231.0.2/24"', got[0]), got[0])
        check(re.search(r' error host-local ADD net="lognet" id="c1" .* error code=999 msg="failed to allocate for range 0: '
                        r'10.231.0.2 has been allocated to c1, duplicate allocation is not allowed"', got[1]), got[1])
        check(re.search(r' info host-local DEL net="lognet" id="c1" .* ok$', got[2]), got[2])
        eq(stat.S_IMODE(os.stat(f"{work}/cni.log").st_mode), 0o600)


@test
def network_sets_its_level_only():
    """logging: a network's logLevel raises or lowers its own calls' level in the node's log; its logFile is ignored"""
    with Work() as work:
        node = settings(work, logLevel="info", logFile=f"{work}/node.log", networkLogLevels={"max": "debug"})
        ok(host_local(work, "c2", node=node, extra={"logLevel": "debug", "logFile": f"{work}/net.log"}))
        check(not os.path.exists(f"{work}/net.log"), "the network's logFile is not opened")
        got = lines(f"{work}/node.log")
        check(any(" debug host-local ADD config: " in line for line in got), got)
        check(any(" debug host-local ADD the network's logFile is ignored" in line for line in got), got)
        check(any(" info host-local ADD " in line and " ok " in line for line in got), got)
        # a network's networkLogLevels alone (no other "log... key or value) is ignored too, and said so at debug
        node_debug = settings(work, logLevel="debug", logFile=f"{work}/node.log")
        ok(host_local(work, "c4", node=node_debug, extra={"name": "n4", "networkLogLevels": {"min": "off", "max": "debug"}}))
        check(any(" debug host-local ADD the network's networkLogLevels is ignored" in line for line in lines(f"{work}/node.log")),
              lines(f"{work}/node.log"))
        node = settings(work, logLevel="info", logFile=f"{work}/node.log", networkLogLevels={"max": "debug"})
        got = lines(f"{work}/node.log")
        # error only: a successful call writes nothing
        before = len(got)
        ok(host_local(work, "c3", node=node, extra={"logLevel": "error"}))
        eq(len(lines(f"{work}/node.log")), before, "nothing at error level for a call that succeeded")


@test
def network_levels_are_bounded_by_the_node():
    """logging: a network's logLevel is held to the node's networkLogLevels (error..info unless root's file says otherwise), with a line saying so; a network cannot widen them"""
    with Work() as work:
        log = f"{work}/cni.log"

        def calls(node, level, cid, **more):
            """A successful ADD and a failing one (the same id again) at the network's `level`;
            the new lines."""
            before = len(lines(log)) if os.path.exists(log) else 0
            extra = {"logLevel": level, **more}
            ok(host_local(work, cid, node=node, extra=extra))
            eq(host_local(work, cid, node=node, extra=extra).returncode, 1)
            return lines(log)[before:]

        def levels(got):
            return [line.split(" ")[1] for line in got]

        node = settings(work, logLevel="info", logFile=log)
        for asked in ("off", "none"):  # its errors are logged all the same; held to error, no held line
            got = calls(node, asked, f"o-{asked}")
            eq(levels(got), ["error"], got)
            check("is held to" not in got[0], got)
        got = calls(settings(work, logLevel="info", logFile=log, networkLogLevels={"min": "info"}), "off", "o-info")
        eq(levels(got), ["info", "info", "info", "error"], got)  # held to info: the held line, as every info line
        check(got[0].endswith(' host-local ADD the network\'s logLevel "off" is held to "info", the lowest the node\'s '
                              'networkLogLevels allow (docs/logging.md)'), got[0])
        node = settings(work, logLevel="info", logFile=log)  # the same file, back to the defaults
        got = calls(node, "debug", "d1", networkLogLevels={"min": "off", "max": "debug"})
        eq(levels(got), ["info", "info", "info", "error"], got)  # no steps: held to info, said once per call
        check(got[0].endswith(' host-local ADD the network\'s logLevel "debug" is held to "info", the highest the node\'s '
                              'networkLogLevels allow (docs/logging.md)'), got[0])
        eq(levels(calls(node, "verbose", "v1")), ["info", "error"])
        eq(levels(calls(node, "error", "e1")), ["error"])
        # root's file widens them
        node = settings(work, logLevel="info", logFile=log, networkLogLevels={"min": "off", "max": "debug"})
        eq(calls(node, "off", "o2"), [])
        check("debug" in levels(calls(node, "debug", "d2")), "steps at debug")
        # a min above the max is the max; names it does not know leave the defaults
        node = settings(work, logLevel="info", logFile=log, networkLogLevels={"min": "debug", "max": "error"})
        got = calls(node, "debug", "d3")
        eq(levels(got), ["error"], got)
        for i, bounds in enumerate(({"min": "silly", "max": 7}, "debug", ["off", "debug"])):
            node = settings(work, logLevel="info", logFile=log, networkLogLevels=bounds)
            eq(levels(calls(node, "off", f"o-bad{i}")), ["error"], bounds)
            eq(levels(calls(node, "debug", f"d-bad{i}")), ["info", "info", "info", "error"], bounds)


@test
def network_file_is_neither_appended_to_nor_created():
    """logging: a network's logFile naming a shell start-up file (or a new file) leaves it untouched, logging on or off"""
    with Work() as work:
        target = victim(f"{folder(work + '/root')}/.bashrc")
        before = state(target)
        hostile = {"logLevel": "debug", "logFile": target, "x": "$(touch /tmp/pwned)"}
        ok(host_local(work, "a1", extra=hostile), "node logging off")
        node = settings(work, logLevel="info", logFile=f"{work}/node.log", networkLogLevels={"max": "debug"})
        ok(host_local(work, "a2", node=node, extra=hostile), "node logging on")
        eq(state(target), before, "the network's logFile is not written")
        check(any('"$(touch /tmp/pwned)"' in line for line in lines(f"{work}/node.log")), "the config went to the node's log")
        for cid, node_file in (("a3", None), ("a4", node)):
            ok(host_local(work, cid, node=node_file, extra={"logLevel": "info", "logFile": f"{work}/root/made-by-root"}))
            check(not os.path.exists(f"{work}/root/made-by-root"), "no file is created where the network says")


@test
def network_cannot_rotate_or_delete():
    """logging: a network's logMaxSize/logKeep neither delete nor rename its logFile's target, nor rotate the node's log"""
    with Work() as work:
        target = victim(f"{folder(work + '/root')}/data.bin", b"x" * 5000)
        before = state(target)
        for keep in (0, 1):
            ok(host_local(work, f"k{keep}", extra={"logLevel": "info", "logFile": target, "logMaxSize": 4096, "logKeep": keep}))
            eq(state(target), before, f"logKeep {keep}")
            eq(sorted(os.listdir(f"{work}/root")), ["data.bin"], f"logKeep {keep}: nothing renamed")
        # the node's own log, past the network's logMaxSize: the node's size and count hold
        log = f"{work}/logs/cni.log"
        folder(f"{work}/logs")
        log_made_by_the_logger(work, log, 5000)
        node = settings(work, logLevel="info", logFile=log)
        ok(host_local(work, "k2", node=node, extra={"logMaxSize": 4096, "logKeep": 0}))
        eq(sorted(os.listdir(f"{work}/logs")), ["cni.log"])
        check(os.path.getsize(log) > 5000, "appended to, not rotated")


@test
def huge_config_line_is_capped():
    """logging: a 5 MB config at debug is logged cut, with a marker, not whole; a line break or other control character becomes a space"""
    with Work() as work:
        node = settings(work, logLevel="debug", logFile=f"{work}/cni.log")
        ok(host_local(work, "h1", node=node, extra={"pad": "x" * (5 << 20)}))
        got = lines(f"{work}/cni.log")
        for line in got:
            check(len(line.encode()) + 1 <= LINE_LIMIT, f"a line of {len(line)} bytes")
        config = [line for line in got if " debug host-local ADD config: " in line]
        eq(len(config), 1, got)
        check(re.search(r"\.\.\.\[truncated \d+ bytes\]$", config[0]), config[0][-200:])
        check(os.path.getsize(f"{work}/cni.log") < 4 * LINE_LIMIT, "the log stays small")
        raw = json.dumps({"cniVersion": "1.0.0", "name": "n", "ipam": {"type": "host-local", "subnet": "10.231.1.0/24",
                                                                        "dataDir": f"{work}/data"}})
        ok(host_local(work, "h2", node=node, raw=raw.replace(", ", ",\r\n\t")))  # JSON's whitespace
        got = [line for line in lines(f"{work}/cni.log") if " debug host-local ADD config: " in line]
        eq(got[-1].split(" config: ")[1], raw.replace(", ", ",   "))


@contextlib.contextmanager
def unix_listener(path):
    """A datagram socket bound at `path`, closed at the end."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.bind(path)
        s.setblocking(False)
        yield s


def received(s):
    """The datagrams the socket got (every sender has exited: what was sent is queued)."""
    out = []
    while True:
        try:
            out.append(s.recv(65536).decode())
        except BlockingIOError:
            return out


@test
def syslog_socket_of_the_config_refused():
    """logging: syslog:<socket>, in the node's settings or a network's, sends nothing to that socket"""
    with Work() as work, unix_listener(f"{work}/target.sock") as s:
        ok(host_local(work, "s1", node=settings(work, logLevel="info", logFile=f"syslog:{work}/target.sock")))
        ok(host_local(work, "s2", extra={"logLevel": "debug", "logFile": f"syslog:{work}/target.sock"}))
        ok(host_local(work, "s3", node=settings(work, logLevel="info", logFile="syslog"),
                      extra={"logFile": f"syslog:{work}/target.sock"}))
        eq(received(s), [])


@test
def syslog_through_dev_log():
    """logging: logFile syslog sends one datagram per line to /dev/log, priority daemon.info"""
    with Work() as work, unix_listener(f"{work}/log.sock") as s:
        node = settings(work, logLevel="info", logFile="syslog")
        # a mount namespace of its own whose /dev/log is the test's socket
        wrap = ["unshare", "--mount", "--propagation", "private"] if AS_ROOT else ["unshare", "-Urm"]
        script = 'mount -t tmpfs none /dev && : > /dev/log && mount --bind "$0" /dev/log && exec "$@"'
        ok(host_local(work, "s4", node=node, wrap=[*wrap, "sh", "-c", script, f"{work}/log.sock"]))
        got = received(s)
        eq(len(got), 1, got)
        check(re.match(r"^<30>cni-all\[\d+\]: \S+ info host-local ADD net=\"lognet\" id=\"s4\"", got[0]), got[0])


@test
def log_folder_must_be_the_nodes():
    """logging: a folder reached through a symbolic link, writable by others or under such a folder is refused"""
    with Work() as work:
        real = folder(f"{work}/real")
        folder(f"{real}/sub")
        os.symlink(real, f"{work}/link")
        folder(f"{work}/open", 0o777)
        folder(f"{work}/group", 0o770)
        folder(f"{folder(work + '/ww', 0o777)}/inner")
        refused = [f"{work}/link/cni.log", f"{work}/link/sub/cni.log", f"{work}/open/cni.log", f"{work}/group/cni.log",
                   f"{work}/ww/inner/cni.log", f"{work}/real/../real/cni.log"]
        if AS_ROOT:
            folder(f"{work}/nobodys", owner=NOBODY)
            folder(f"{folder(work + '/nobody-above', owner=NOBODY)}/inner")
            refused += [f"{work}/nobodys/cni.log", f"{work}/nobody-above/inner/cni.log"]
        for i, path in enumerate(refused):
            ok(host_local(work, f"d{i}", node=settings(work, logLevel="debug", logFile=path)), path)
        for d in ("real", "real/sub", "open", "group", "ww/inner", *(("nobodys", "nobody-above/inner") if AS_ROOT else ())):
            eq(os.listdir(f"{work}/{d}"), [] if d != "real" else ["sub"], d)
        # under a sticky folder others may write (as /tmp), a missing last folder is made, 0700
        folder(f"{work}/sticky", 0o1777)
        ok(host_local(work, "d-ok", node=settings(work, logLevel="info", logFile=f"{work}/sticky/new/cni.log")))
        eq(stat.S_IMODE(os.stat(f"{work}/sticky/new").st_mode), 0o700)
        eq(len(lines(f"{work}/sticky/new/cni.log")), 1)


@test
def file_the_logger_did_not_make_is_refused():
    """logging: a symbolic link, a hard link, a file of another mode or owner at the log's name, or at a rotated name, is left as it was"""
    with Work() as work:
        elsewhere = folder(f"{work}/elsewhere")
        logs = folder(f"{work}/logs")
        log = f"{logs}/cni.log"
        node = settings(work, logLevel="debug", logFile=log)
        plants = {
            "symlink": lambda: os.symlink(victim(f"{elsewhere}/a"), log),
            "hardlink": lambda: os.link(victim(f"{elsewhere}/b", mode=0o600), log),
            "mode 0644": lambda: victim(log),
            "mode 0640": lambda: victim(log, mode=0o640),
            "a folder": lambda: os.mkdir(log),
        }
        if AS_ROOT:
            plants["owner nobody"] = lambda: (victim(log, mode=0o600), os.chown(log, NOBODY, NOBODY))
        for i, (what, plant) in enumerate(plants.items()):
            plant()
            before = state(log)
            ok(host_local(work, f"f{i}", node=node), what)
            eq(state(log), before, what)
            eq(os.listdir(logs), ["cni.log"], what)
            if stat.S_ISDIR(os.lstat(log).st_mode):
                os.rmdir(log)
            else:
                os.unlink(log)
        for name in os.listdir(elsewhere):
            eq(open(f"{elsewhere}/{name}", "rb").read(), b"echo original\n", name)
        # the log is the logger's and full; what sits at its rotated names is not
        rotated = {"symlink": lambda p: os.symlink(f"{elsewhere}/a", p),
                   "hardlink": lambda p: os.link(f"{elsewhere}/b", p),
                   "mode 0644": lambda p: victim(p)}
        log_made_by_the_logger(work, log)
        node = settings(work, logLevel="info", logFile=log, logMaxSize=4096, logKeep=2)
        for i, (what, plant) in enumerate(rotated.items()):
            for at in (f"{log}.1", f"{log}.2"):
                os.truncate(log, 4096)
                plant(at)
                before, full = state(at), state(log)
                ok(host_local(work, f"r{i}{at[-1]}", node=node), f"{what} at {at}")
                eq(state(at), before, f"{what} at {at}")
                eq(state(log), full, f"{what} at {at}: no rotation, the line is lost")
                os.unlink(at)
        for name in os.listdir(elsewhere):
            eq(open(f"{elsewhere}/{name}", "rb").read(), b"echo original\n", name)


@test
def bounds_from_the_node_file():
    """logging: logMaxSize is held to 4 KiB..1 GiB and logKeep to 20 however large the node file says"""
    with Work() as work:
        log = f"{work}/cni.log"
        log_made_by_the_logger(work, log, (1 << 30) + 1)  # sparse
        node = settings(work, logLevel="info", logFile=log, logMaxSize=1 << 40, logKeep=1000)
        for n in range(1, 21):
            os.close(os.open(f"{log}.{n}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        ok(host_local(work, "b1", node=node))
        eq(os.path.getsize(f"{log}.1"), (1 << 30) + 1, "rotated past 1 GiB")
        eq(len(lines(log)), 1)
        eq(sorted(os.listdir(work)), sorted(["cni.log", "data", "log.json"] + [f"cni.log.{n}" for n in range(1, 21)]))
        # and below 4 KiB: 4 KiB
        node = settings(work, logLevel="info", logFile=f"{work}/small.log", logMaxSize=100, logKeep=1)
        for i in range(30):
            ok(host_local(work, f"b-small{i}", node=node, subnet="10.234.0.0/16"))
        check(os.path.exists(f"{work}/small.log.1"), "rotated")
        for name in ("small.log", "small.log.1"):
            size = os.path.getsize(f"{work}/{name}")
            check(1000 < size <= 4096, f"{name}: {size} bytes")


@test
def settings_others_can_write_are_ignored():
    """logging: a node settings file its group or others may write, or not root's, turns nothing on"""
    with Work() as work:
        node = settings(work, logLevel="info", logFile=f"{work}/cni.log")
        for i, mode in enumerate((0o666, 0o664)):
            os.chmod(node, mode)
            ok(host_local(work, f"n{i}", node=node), oct(mode))
        if AS_ROOT:
            os.chmod(node, 0o644)
            os.chown(node, NOBODY, NOBODY)
            ok(host_local(work, "n-nobody", node=node))
        check(not os.path.exists(f"{work}/cni.log"), "nothing logged")


@test
def settings_in_a_folder_others_can_change_are_ignored():
    """logging: a node settings file whose folder others may change (writable, a link, another owner's, under such a folder) turns nothing on; a missing folder is not made"""
    with Work() as work:
        folder(f"{work}/logs")
        keys = {"logLevel": "debug", "logFile": f"{work}/logs/cni.log"}
        folder(f"{work}/real")
        os.symlink(f"{work}/real", f"{work}/link")
        places = {"open": folder(f"{work}/open", 0o777), "group": folder(f"{work}/group", 0o770),
                  "ww/inner": folder(f"{folder(work + '/ww', 0o777)}/inner"), "link": f"{work}/link"}
        if AS_ROOT:
            places["nobodys"] = folder(f"{work}/nobodys", owner=NOBODY)
        for i, (what, where) in enumerate(places.items()):
            node = settings(where, **keys)  # a file only root may write, in a folder others may change
            ok(host_local(work, f"t{i}", node=node), what)
            eq(os.listdir(f"{work}/logs"), [], f"{what}: nothing logged")
        ok(host_local(work, "t-dotdot", node=f"{work}/real/../real/log.json"))
        eq(os.listdir(f"{work}/logs"), [], "a path with .. in it: nothing logged")
        stderr = dhcp_daemon(work, f"{work}/open/log.json")
        check(f"dhcp daemon: not logging: {work}/open/log.json: open {work}/open: others may write it" in stderr, stderr)
        stderr = dhcp_daemon(work, "log.json")
        check("dhcp daemon: not logging: open log.json: not an absolute path" in stderr, stderr)
        ok(host_local(work, "t-missing", node=f"{work}/missing/log.json"))
        check(not os.path.exists(f"{work}/missing"), "a missing settings folder is not made")
        ok(host_local(work, "t-ok", node=settings(f"{work}/real", **keys)))
        check(lines(f"{work}/logs/cni.log"), "the same settings in root's own folder log")


@test
def rotated_by_size():
    """logging: past logMaxSize the file is rotated, logKeep files are kept"""
    with Work() as work:
        node = settings(work, logLevel="info", logFile=f"{work}/cni.log", logMaxSize=4096, logKeep=2)
        for i in range(40):
            host_local(work, f"r{i}", node=node, subnet="10.232.0.0/16")
        names = sorted(f for f in os.listdir(work) if f.startswith("cni.log"))
        eq(names, ["cni.log", "cni.log.1", "cni.log.2"])
        for n in names:
            check(os.path.getsize(f"{work}/{n}") <= 4096, n)
            lines(f"{work}/{n}")
            eq(stat.S_IMODE(os.stat(f"{work}/{n}").st_mode), 0o600, n)


@test
def concurrent_calls_leave_whole_lines():
    """logging: 24 calls at once into one small rotating log leave whole lines only"""
    with Work() as work:
        node = settings(work, logLevel="info", logFile=f"{work}/cni.log", logMaxSize=8192, logKeep=5)
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            results = list(pool.map(lambda i: host_local(work, f"p{i}", node=node, subnet="10.233.0.0/16"), range(24)))
        check(all(r.returncode == 0 for r in results), [r.stdout for r in results if r.returncode])
        total = sum(len(lines(f"{work}/{f}")) for f in os.listdir(work) if f.startswith("cni.log"))
        eq(total, 24)


@test
def unwritable_log_never_fails_a_call():
    """logging: a log file that cannot be written (a directory, /proc, a dangling link, a FIFO) leaves the call's result intact"""
    with Work() as work:
        os.mkdir(f"{work}/adir")
        os.symlink(f"{work}/nowhere/x", f"{work}/link")
        os.mkfifo(f"{work}/fifo")
        for i, target in enumerate((f"{work}/adir", "/proc/no-such-dir/cni.log", f"{work}/link", f"{work}/fifo", "relative.log",
                                    "syslog:/nonexistent.sock", f"{work}/")):
            node = settings(work, logLevel="debug", logFile=target)
            ok(host_local(work, f"u{i}", node=node), target)
        check(not os.path.exists(f"{work}/nowhere"), "the link was not followed")
        with open(f"{work}/log.json", "w") as f:
            f.write("{not json")
        ok(host_local(work, "u-bad", node=f"{work}/log.json"))


def dhcp_daemon(work, node):
    """Starts the dhcp daemon with the node settings `node`, waits for its socket, stops it;
    returns what it printed on stderr."""
    d = subprocess.Popen([CNI_ALL, "dhcp", "daemon", "-socketpath", f"{work}/dhcp.sock", "-leasedir", f"{work}/leases"],
                         env={"CNI_ALL_LOG_CONFIG": node, "PATH": os.environ.get("PATH", "")},
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(100):
            if os.path.exists(f"{work}/dhcp.sock"):
                break
            time.sleep(0.05)
    finally:
        d.send_signal(signal.SIGTERM)
        d.wait(10)
    return d.stderr.read()


@test
def dhcp_daemon_logs_with_levels():
    """logging: the dhcp daemon writes its lines to the node's log at their levels, and says on stderr why it cannot"""
    with Work() as work:
        stderr = dhcp_daemon(work, settings(work, logLevel="info", logFile=f"{work}/daemon.log"))
        got = lines(f"{work}/daemon.log")
        check(any(" info dhcp daemon: listening on " in line for line in got), got)
        check(any(" info dhcp daemon: shutting down" in line for line in got), got)
        check("listening on" in stderr, "stderr keeps its lines")
        folder(f"{work}/open", 0o777)
        stderr = dhcp_daemon(work, settings(work, logLevel="info", logFile=f"{work}/open/daemon.log"))
        check(f"dhcp daemon: not logging: open {work}/open: others may write it" in stderr, stderr)
        eq(os.listdir(f"{work}/open"), [])
        os.chmod(f"{work}/log.json", 0o666)
        stderr = dhcp_daemon(work, f"{work}/log.json")
        check(f"dhcp daemon: not logging: open {work}/log.json: others than root may write it" in stderr, stderr)


if __name__ == "__main__":
    run_all()
