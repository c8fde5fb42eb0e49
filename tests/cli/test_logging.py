#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tests of the opt-in call log (docs/logging.md), with host-local calls in a temporary data
directory and the dhcp daemon on a temporary socket (no network namespace needed): off by
default; the node-wide file (CNI_ALL_LOG_CONFIG) and the network's logLevel/logFile over it; one
line per call with the applet, verb, network, container, ifname, netns, duration and the result or
the error's code and message; the steps at debug level; rotation by size; syslog through a
datagram socket; concurrent calls leaving whole lines; a log that cannot be written never
failing a call; the dhcp daemon's lines with levels."""
import concurrent.futures
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import check, eq, run_all, test  # noqa: E402

CNI_ALL = os.environ["CNI_ALL"]
LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (error|info|debug) ")


def host_local(work, cid, *, node=None, extra=None, command="ADD", subnet="10.231.0.0/24"):
    conf = {"cniVersion": "1.0.0", "name": "lognet", "ipam": {"type": "host-local", "subnet": subnet, "dataDir": f"{work}/data"}}
    conf.update(extra or {})
    env = {"CNI_COMMAND": command, "CNI_CONTAINERID": cid, "CNI_NETNS": "/run/netns/none", "CNI_IFNAME": "eth0",
           "CNI_PATH": os.path.dirname(CNI_ALL), "CNI_ALL_LOG_CONFIG": node or f"{work}/no-such-settings.json"}
    return subprocess.run([CNI_ALL, "host-local"], input=json.dumps(conf), env=env, capture_output=True, text=True)


def settings(work, **keys):
    path = f"{work}/log.json"
    with open(path, "w") as f:
        json.dump(keys, f)
    return path


def lines(path):
    with open(path) as f:
        out = f.read().splitlines()
    for line in out:
        check(LINE.match(line), f"a whole, timestamped line: {line!r}")
    return out


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


@test
def network_keys_win_and_debug_shows_steps():
    """logging: a network's logLevel and logFile win over the node's; at debug the steps are logged"""
    with Work() as work:
        node = settings(work, logLevel="info", logFile=f"{work}/node.log")
        r = host_local(work, "c2", node=node, extra={"logLevel": "debug", "logFile": f"{work}/net.log"})
        eq(r.returncode, 0, r.stdout)
        check(not os.path.exists(f"{work}/node.log"), "the network's file is used instead")
        got = lines(f"{work}/net.log")
        check(any(" debug host-local ADD config: " in line for line in got), got)
        check(any(" info host-local ADD " in line and " ok " in line for line in got), got)
        # error only: a successful call writes nothing
        r = host_local(work, "c3", node=node, extra={"logLevel": "error"})
        eq(r.returncode, 0)
        check(not os.path.exists(f"{work}/node.log"), "nothing at error level for a call that succeeded")


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
    """logging: a log file that cannot be written (a directory, /proc, a dangling link) leaves the call's result intact"""
    with Work() as work:
        os.mkdir(f"{work}/adir")
        os.symlink(f"{work}/nowhere/x", f"{work}/link")
        for target in (f"{work}/adir", "/proc/no-such-dir/cni.log", f"{work}/link", "relative.log", "syslog:/nonexistent.sock"):
            node = settings(work, logLevel="debug", logFile=target)
            r = host_local(work, f"u{abs(hash(target)) % 1000}", node=node)
            eq(r.returncode, 0, f"{target}: {r.stdout}")
            check(json.loads(r.stdout)["ips"], r.stdout)
        check(not os.path.exists(f"{work}/nowhere"), "the link was not followed")
        with open(f"{work}/log.json", "w") as f:
            f.write("{not json")
        eq(host_local(work, "u-bad", node=f"{work}/log.json").returncode, 0)


@test
def syslog_datagrams():
    """logging: logFile syslog:<socket> sends one datagram per line, priority daemon.info"""
    with Work() as work:
        sock_path = f"{work}/log.sock"
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.bind(sock_path)
        s.settimeout(5)
        try:
            node = settings(work, logLevel="info", logFile=f"syslog:{sock_path}")
            eq(host_local(work, "s1", node=node).returncode, 0)
            msg = s.recv(65536).decode()
            check(re.match(r"^<30>cni-all\[\d+\]: \S+ info host-local ADD net=\"lognet\" id=\"s1\"", msg), msg)
        finally:
            s.close()


@test
def dhcp_daemon_logs_with_levels():
    """logging: the dhcp daemon writes its lines to the node's log at their levels"""
    with Work() as work:
        node = settings(work, logLevel="info", logFile=f"{work}/daemon.log")
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
        got = lines(f"{work}/daemon.log")
        check(any(" info dhcp daemon: listening on " in line for line in got), got)
        check(any(" info dhcp daemon: shutting down" in line for line in got), got)
        check("listening on" in d.stderr.read(), "stderr keeps its lines")


if __name__ == "__main__":
    run_all()
