# SPDX-License-Identifier: Apache-2.0
"""The dhcp tests' lab (tests/netns/test_dhcp.py, test_dhcp6.py): Debian's dnsmasq in a
throwaway "server" namespace on one end of a veth, whose other end, in a throwaway "host"
namespace, is the macvlan parent the containers attach to; our daemon with its socket and lease
directory in a temporary directory. The server's end has 10.213.0.1/24 and 2001:db8:213::1/64;
dnsmasq serves DHCPv4 always and DHCPv6 (with router advertisements) when asked."""
import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time

from cnitest import BIN, CNI_ALL, Plugin, check, eq, netns, ns_path, sh

SERVER_IP = "10.213.0.1"
SERVER_IP6 = "2001:db8:213::1"
T1, T2 = 3, 6  # seconds; dnsmasq's lease itself is at least 2 minutes


def macvlan():
    return Plugin(os.path.join(BIN, "macvlan"))


def dhcp():
    return Plugin(os.path.join(BIN, "dhcp"))


class Lab:
    """Server and host namespaces, dnsmasq, and our daemon."""

    def __init__(self, host, server, work, dnsmasq_args=(), times=(T1, T2), dnsmasq=True):
        self.host, self.server, self.work = host, server, work
        self.sock = f"{work}/dhcp.sock"
        self.leasedir = f"{work}/leases"
        self.daemon = self.dnsmasq = None
        sh("ip", "-n", host, "link", "add", "dhp0", "type", "veth", "peer", "name", "dhs0", "netns", server)
        sh("ip", "-n", host, "link", "set", "dhp0", "up")
        sh("ip", "-n", server, "addr", "add", f"{SERVER_IP}/24", "dev", "dhs0")
        sh("ip", "-n", server, "addr", "add", f"{SERVER_IP6}/64", "dev", "dhs0", "nodad")
        sh("ip", "-n", server, "link", "set", "dhs0", "up")
        sh("ip", "-n", server, "link", "set", "lo", "up")
        if dnsmasq:
            self.start_dnsmasq(dnsmasq_args, times)

    def start_dnsmasq(self, dnsmasq_args, times):
        work, server = self.work, self.server
        self.dnsmasq = subprocess.Popen(
            ["ip", "netns", "exec", server, "dnsmasq", "--keep-in-foreground", "--no-resolv", "--port=0",
             "--conf-file=/dev/null", "--interface=dhs0", "--bind-interfaces", "--no-ping", "--log-dhcp",
             f"--log-facility={work}/dnsmasq.log", f"--dhcp-leasefile={work}/dnsmasq.leases",
             f"--pid-file={work}/dnsmasq.pid", "--dhcp-range=10.213.0.50,10.213.0.99,255.255.255.0,2m",
             f"--dhcp-option=option:T1,{times[0]}", f"--dhcp-option=option:T2,{times[1]}", *dnsmasq_args])
        for _ in range(50):
            if os.path.exists(f"{work}/dnsmasq.pid"):
                break
            time.sleep(0.1)

    def start_daemon(self, *flags):
        log = open(f"{self.work}/daemon.log", "a")
        self.daemon = subprocess.Popen([CNI_ALL, "dhcp", "daemon", "-socketpath", self.sock, "-leasedir", self.leasedir,
                                        "-resendtimeout", "4s", *flags], stdout=log, stderr=log)
        for _ in range(50):
            if os.path.exists(self.sock):
                return
            time.sleep(0.1)
        raise AssertionError("the daemon did not create its socket: " + self.log())

    def stop_daemon(self):
        if self.daemon:
            self.daemon.send_signal(signal.SIGTERM)
            eq(self.daemon.wait(timeout=10), 0, "the daemon exits 0 on SIGTERM")
            self.daemon = None

    def log(self):
        with open(f"{self.work}/daemon.log") as f:
            return f.read()

    def leases(self):
        """dnsmasq's leases: {ip: (expiry, mac or IAID, hostname, client id or DUID)}, read until
        two reads 50 ms apart agree: dnsmasq rewrites the file in place, so one read may land in
        the moment it is empty or half written."""
        before = None
        for _ in range(40):
            now = self._leases_once()
            if now == before:
                break
            before = now
            time.sleep(0.05)
        return now

    def _leases_once(self):
        out = {}
        with contextlib.suppress(FileNotFoundError), open(f"{self.work}/dnsmasq.leases") as f:
            for line in f:
                if line.startswith("duid "):  # the server's DUID, before its DHCPv6 leases
                    continue
                expiry, mac, ip, host, cid = line.split()  # DHCPv6: mac is the IAID, cid the DUID
                out[ip] = (int(expiry), mac, host, cid)
        return out

    def lease(self, ip):
        """One lease, waiting out dnsmasq's in-place rewrite of its file (briefly empty)."""
        end = time.time() + 2
        while (got := self.leases().get(ip)) is None and time.time() < end:
            time.sleep(0.05)
        check(got is not None, f"dnsmasq has no lease for {ip}")
        return got

    def conf(self, **ipam):
        return {"cniVersion": "1.0.0", "name": "dhnet", "type": "macvlan", "master": "dhp0",
                "ipam": dict({"type": "dhcp", "daemonSocketPath": self.sock}, **ipam)}

    def add(self, ctr, cid="c1", conf=None, **kw):
        return macvlan().run("ADD", conf or self.conf(), host_ns=self.host, netns=ns_path(ctr), container_id=cid, **kw)

    def delete(self, ctr, cid="c1", conf=None):
        return macvlan().run("DEL", conf or self.conf(), host_ns=self.host, netns=ns_path(ctr), container_id=cid)

    def cpu(self):
        """The daemon's CPU time so far (user and system, all its threads), in seconds."""
        with open(f"/proc/{self.daemon.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()  # from field 3 (state) on
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self):
        with contextlib.suppress(Exception):
            if self.daemon:
                self.daemon.kill()
                self.daemon.wait()
        if self.dnsmasq:
            self.dnsmasq.terminate()
            self.dnsmasq.wait()


@contextlib.contextmanager
def lab(dnsmasq_args=(), daemon_flags=(), start=True, times=(T1, T2), dnsmasq=True):
    work = tempfile.mkdtemp(prefix="cni-dhcp.")
    with netns("dhh") as host, netns("dhs") as server:
        lb = Lab(host, server, work, dnsmasq_args, times, dnsmasq)
        try:
            if start:
                lb.start_daemon(*daemon_flags)
            yield lb
        finally:
            lb.close()
            shutil.rmtree(work, ignore_errors=True)


def client_id_hex(key):
    return ":".join(f"{b:02x}" for b in b"\0" + key.encode())


def wait_for(cond, timeout, what):
    """Polls cond; a lease missing from the file counts as "not yet": dnsmasq rewrites its lease
    file in place, so a read can land on the truncated file. `what` (or what it returns) is the
    failure's message."""
    end = time.time() + timeout
    while time.time() < end:
        try:
            if cond():
                return
        except KeyError:
            pass
        time.sleep(0.2)
    raise AssertionError(what() if callable(what) else what)


def lease_files(lb):
    return sorted(os.listdir(lb.leasedir)) if os.path.isdir(lb.leasedir) else []


