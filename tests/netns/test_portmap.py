#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Root tests of the portmap applet behind our bridge, with traffic: a TCP and a UDP server in
the container reached from a client namespace through the host's address (also by a UDP flow
conntrack saw before the mapping, which ADD makes it forget, and one to a deleted pod, which DEL makes it forget), from the host itself through 127.0.0.1:hostPort, and from
the container through its own mapped port (hairpin); after DEL the ports are closed and only the shared top-level chains remain. Also
CHECK, hostIP, conditions, refused keys, rollback, GC, and Debian's Go portmap removing our
rules and we removing its. Everything lives in throwaway namespaces (legacy iptables)."""
import contextlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import BIN, LEGACY, REF, Plugin, check, eq, iptables_save, netns, ns_path, run_all, sh, test  # noqa: E402
from conflist import run_add, run_check, run_del  # noqa: E402

ENV = {"PATH": f"{LEGACY}:/usr/sbin:/usr/bin:/sbin:/bin"}
HOST_IP = "10.91.0.1"

SERVER = r"""
import socket, sys, threading
def tcp():
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", 80)); s.listen(8)
    while True:
        c, a = s.accept(); c.sendall(("tcp-from " + a[0] + "\n").encode()); c.close()
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("0.0.0.0", 53))
    while True:
        d, a = s.recvfrom(100); s.sendto(("udp-from " + a[0]).encode(), a)
threading.Thread(target=udp, daemon=True).start()
print("ready", flush=True)
tcp()
"""

CLIENT = r"""
import socket, sys
proto, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
try:
    if proto == "tcp":
        c = socket.create_connection((host, port), timeout=3); print(c.recv(100).decode().strip())
    else:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(float(sys.argv[5]) if len(sys.argv) > 5 else 3)
        if len(sys.argv) > 4: s.bind(("", int(sys.argv[4])))  # a fixed source port: one conntrack flow
        s.sendto(b"x", (host, port)); print(s.recvfrom(100)[0].decode())
except Exception as e:
    print("error", type(e).__name__)
"""


def conflist(data, mappings, **portmap_keys):
    pm = {"type": "portmap", "capabilities": {"portMappings": True}, "runtimeConfig": {"portMappings": mappings}}
    pm.update(portmap_keys)
    return {"cniVersion": "1.0.0", "name": "pm-test", "plugins": [
        # hairpinMode: with br_netfilter the DNAT back to the sender is bridged out of the port it came in by.
        {"type": "bridge", "bridge": "cnipm0", "isGateway": True, "hairpinMode": True,
         "ipam": {"type": "host-local", "subnet": "10.90.0.0/24", "routes": [{"dst": "0.0.0.0/0"}], "dataDir": data}},
        pm]}


class Node:
    """A host namespace with an uplink to a client namespace, and a container namespace."""

    def __enter__(self):
        self.data = tempfile.mkdtemp()
        self._host, self._ctr, self._client = netns("ph"), netns("pc"), netns("pl")
        self.host, self.ctr, self.client = self._host.__enter__(), self._ctr.__enter__(), self._client.__enter__()
        sh("ip", "-n", self.host, "link", "add", "up0", "type", "veth", "peer", "name", "down0", "netns", self.client)
        sh("ip", "-n", self.host, "addr", "add", HOST_IP + "/24", "dev", "up0")
        sh("ip", "-n", self.host, "link", "set", "up0", "up")
        sh("ip", "-n", self.host, "link", "set", "lo", "up")
        sh("ip", "-n", self.ctr, "link", "set", "lo", "up")  # the loopback plugin's job in a real runtime
        sh("ip", "-n", self.client, "addr", "add", "10.91.0.2/24", "dev", "down0")
        sh("ip", "-n", self.client, "link", "set", "down0", "up")
        self.server = None
        return self

    def __exit__(self, *exc):
        if self.server:
            self.server.kill()
            self.server.wait()
        for ns in (self._client, self._ctr, self._host):
            ns.__exit__(None, None, None)
        shutil.rmtree(self.data, ignore_errors=True)

    def serve(self):
        self.server = subprocess.Popen(["ip", "netns", "exec", self.ctr, "python3", "-c", SERVER], stdout=subprocess.PIPE, text=True)
        eq(self.server.stdout.readline().strip(), "ready")

    def ask(self, ns, proto, host, port, *source_port_and_timeout):
        return sh("ip", "netns", "exec", ns, "python3", "-c", CLIENT, proto, host, str(port),
                  *source_port_and_timeout).stdout.strip()

    def udp_flows(self, port):
        table = sh("ip", "netns", "exec", self.host, "cat", "/proc/net/nf_conntrack").stdout
        return [line for line in table.splitlines() if " udp " in line and f"dport={port} " in line]

    def nat(self, v6=False):
        out = iptables_save(self.host, "nat", v6)
        return [re.sub(r" \[\d+:\d+\]", "", line) for line in out.splitlines() if line.startswith(("-A", ":"))]

    def filter(self):
        out = iptables_save(self.host, "filter")
        return [line for line in out.splitlines() if line.startswith("-A")]


def shared(line):
    """The reference's shared top-level chains and their jumps, which outlive every attachment."""
    return "CNI-HOSTPORT-" in line or line.startswith(":POSTROUTING") or line.startswith(":PREROUTING") or \
        line.startswith(":OUTPUT") or line.startswith(":INPUT")


MAPPINGS = [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"},
            {"hostPort": 5353, "containerPort": 53, "protocol": "udp"}]


@test
def portmap_traffic_from_outside_localhost_and_hairpin():
    """portmap: TCP and UDP through the host address, TCP via 127.0.0.1 and hairpin; DEL closes the ports"""
    with Node() as n:
        before = n.nat()
        # A UDP flow to the host port before the mapping exists. A node always tracks
        # connections; a fresh namespace only once a rule needs conntrack, hence this one.
        sh("ip", "netns", "exec", n.host, "iptables-legacy", "-A", "INPUT", "-m", "conntrack", "--ctstate", "INVALID", "-j", "DROP")
        eq(n.ask(n.client, "udp", HOST_IP, 5353, "40053", "0.5"), "error TimeoutError")
        eq(len(n.udp_flows(5353)), 1, "conntrack remembers the flow, bound to no DNAT")
        c = conflist(n.data, MAPPINGS)
        res = run_add(BIN, c, n.host, ns_path(n.ctr), "pm-1", env=ENV)
        eq(res["ips"][0]["address"], "10.90.0.2/24")
        eq(n.udp_flows(5353), [], "ADD forgot the UDP flows to the mapped port")
        run_check(BIN, c, n.host, ns_path(n.ctr), "pm-1", res, env=ENV)
        n.serve()
        eq(n.ask(n.client, "tcp", HOST_IP, 8080), "tcp-from 10.91.0.2")
        eq(n.ask(n.client, "udp", HOST_IP, 5353), "udp-from 10.91.0.2")
        eq(n.ask(n.client, "udp", HOST_IP, 5353, "40053"), "udp-from 10.91.0.2", "the flow from before ADD reaches the container")
        eq(n.ask(n.host, "tcp", "127.0.0.1", 8080), "tcp-from 10.90.0.1", "localhost, masqueraded to the bridge address")
        eq(n.ask(n.ctr, "tcp", HOST_IP, 8080), "tcp-from 10.90.0.1", "hairpin, masqueraded")
        eq(sh("ip", "netns", "exec", n.host, "cat", "/proc/sys/net/ipv4/conf/cnipm0/route_localnet").stdout.strip(), "1")
        check(any("block incoming localnet connections" in line for line in n.filter()), n.filter())
        chain = [line for line in n.nat() if line.startswith(":CNI-DN-")]
        eq(len(chain), 1, n.nat())

        run_del(BIN, c, n.host, ns_path(n.ctr), "pm-1", res, env=ENV)
        eq(n.ask(n.client, "tcp", HOST_IP, 8080), "error ConnectionRefusedError")
        eq([line for line in n.nat() if not shared(line)], [line for line in before if not shared(line)])
        run_del(BIN, c, n.host, ns_path(n.ctr), "pm-1", res, env=ENV)  # idempotent


TAGGED_UDP = r"""
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("0.0.0.0", 53))
print("ready", flush=True)
while True:
    d, a = s.recvfrom(100); s.sendto(sys.argv[1].encode(), a)
"""


@contextlib.contextmanager
def tagged_udp_server(ns, tag):
    """A UDP server on port 53 in `ns` that answers every datagram with `tag`."""
    p = subprocess.Popen(["ip", "netns", "exec", ns, "python3", "-c", TAGGED_UDP, tag], stdout=subprocess.PIPE, text=True)
    try:
        eq(p.stdout.readline().strip(), "ready")
        yield
    finally:
        p.kill()
        p.wait()


UDP_ONLY = [{"hostPort": 5353, "containerPort": 53, "protocol": "udp"}]


@test
def del_forgets_the_udp_flows_so_the_next_pod_gets_them():
    """portmap DEL forgets the UDP flows to its host ports (beyond the reference): a flow to a deleted pod reaches the next pod on the port at once; iptables legacy and nft, and nftables"""
    nft_variant = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    for label, env, keys in (("legacy", ENV, {}), ("iptables-nft", nft_variant, {}), ("nftables", ENV, {"backend": "nftables"})):
        with Node() as n, netns("pd") as second:
            sh("ip", "-n", second, "link", "set", "lo", "up")
            c = conflist(n.data, UDP_ONLY, **keys)
            first = run_add(BIN, c, n.host, ns_path(n.ctr), "pm-a", env=env)
            with tagged_udp_server(n.ctr, "pod-a"):
                eq(n.ask(n.client, "udp", HOST_IP, 5353, "40053"), "pod-a", label)
            eq(len(n.udp_flows(5353)), 1, f"{label}: the flow is tracked, DNAT'ed to the first pod")
            run_del(BIN, c, n.host, ns_path(n.ctr), "pm-a", first, env=env)
            eq(n.udp_flows(5353), [], f"{label}: DEL forgot the flow to the deleted pod")
            run_add(BIN, c, n.host, ns_path(second), "pm-b", env=env)
            with tagged_udp_server(second, "pod-b"):
                eq(n.ask(n.client, "udp", HOST_IP, 5353, "40053"), "pod-b", f"{label}: the same flow reaches the next pod")


@test
def portmap_rules_are_the_references():
    """portmap: the chains and rules as v1.9 writes them (entry per protocol, hairpin on the subnet, localhost)"""
    with Node() as n:
        c = conflist(n.data, MAPPINGS + [{"hostPort": 9090, "containerPort": 90, "protocol": "tcp", "hostIP": HOST_IP}])
        run_add(BIN, c, n.host, ns_path(n.ctr), "pm-1", env=ENV)
        dn = "CNI-DN-" + [line for line in n.nat() if line.startswith(":CNI-DN-")][0][len(":CNI-DN-"):].split()[0]
        rules = n.nat()
        want = [
            "-A POSTROUTING -m comment --comment \"CNI portfwd requiring masquerade\" -j CNI-HOSTPORT-MASQ",
            "-A PREROUTING -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT",
            "-A OUTPUT -m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT",
            "-A CNI-HOSTPORT-SETMARK -m comment --comment \"CNI portfwd masquerade mark\" -j MARK --set-xmark 0x2000/0x2000",
            "-A CNI-HOSTPORT-MASQ -m mark --mark 0x2000/0x2000 -j MASQUERADE",
            f"-A CNI-HOSTPORT-DNAT -p tcp -m comment --comment \"dnat name: \\\"pm-test\\\" id: \\\"pm-1\\\"\" -m multiport --dports 8080,9090 -j {dn}",
            f"-A CNI-HOSTPORT-DNAT -p udp -m comment --comment \"dnat name: \\\"pm-test\\\" id: \\\"pm-1\\\"\" -m multiport --dports 5353 -j {dn}",
            f"-A {dn} -s 10.90.0.0/24 -p tcp -m tcp --dport 8080 -j CNI-HOSTPORT-SETMARK",
            f"-A {dn} -s 127.0.0.1/32 -p tcp -m tcp --dport 8080 -j CNI-HOSTPORT-SETMARK",
            f"-A {dn} -p tcp -m tcp --dport 8080 -j DNAT --to-destination 10.90.0.2:80",
            f"-A {dn} -s 10.90.0.0/24 -p udp -m udp --dport 5353 -j CNI-HOSTPORT-SETMARK",
            f"-A {dn} -s 127.0.0.1/32 -p udp -m udp --dport 5353 -j CNI-HOSTPORT-SETMARK",
            f"-A {dn} -p udp -m udp --dport 5353 -j DNAT --to-destination 10.90.0.2:53",
            f"-A {dn} -s 10.90.0.0/24 -d 10.91.0.1/32 -p tcp -m tcp --dport 9090 -j CNI-HOSTPORT-SETMARK",
            f"-A {dn} -s 127.0.0.1/32 -d 10.91.0.1/32 -p tcp -m tcp --dport 9090 -j CNI-HOSTPORT-SETMARK",
            f"-A {dn} -d 10.91.0.1/32 -p tcp -m tcp --dport 9090 -j DNAT --to-destination 10.90.0.2:90",
        ]
        for w in want:
            check(w in rules, f"{w}\n not in:\n" + "\n".join(rules))


@test
def portmap_options_errors_and_rollback():
    """portmap: no mappings passes through; bad ports, protocols, keys, backends; conditions; GC"""
    with Node() as n:
        plain = conflist(n.data, [])
        res = run_add(BIN, plain, n.host, ns_path(n.ctr), "pm-0", env=ENV)
        check(not [line for line in n.nat() if "CNI-HOSTPORT" in line], "no mappings, no iptables work")
        pm = Plugin(os.path.join(BIN, "portmap"))

        def add(**keys):
            conf = dict(conflist(n.data, MAPPINGS)["plugins"][1], name="pm-test", cniVersion="1.0.0", prevResult=res)
            conf.update(keys)
            return pm.run("ADD", conf, host_ns=n.host, netns=ns_path(n.ctr), container_id="pm-9", extra_env=ENV)

        for keys, code, msg in [
            ({"runtimeConfig": {"portMappings": [{"hostPort": 0, "containerPort": 80}]}}, 999, "Invalid host port number: 0"),
            ({"runtimeConfig": {"portMappings": [{"hostPort": 80, "containerPort": 70000}]}}, 999, "Invalid container port number: 70000"),
            ({"runtimeConfig": {"portMappings": [{"hostPort": 70000, "containerPort": 80}]}}, 999, "Invalid host port number: 70000"),
            ({"runtimeConfig": {"portMappings": [{"hostPort": 0, "containerPort": 70000}]}}, 999, "Invalid host port number: 0"),
            ({"runtimeConfig": {"portMappings": [{"hostPort": 2**31, "containerPort": 80}]}}, 999,  # a Go int, 64-bit
             "Invalid host port number: 2147483648"),
            ({"runtimeConfig": {"portMappings": [{"hostPort": 80, "containerPort": 80, "protocol": "icmp"}]}}, 999,
             'invalid protocol "icmp" in portMappings: only tcp, udp and sctp are forwarded'),
            ({"runtimeConfig": {"portMappings": [{"hostPort": 80, "containerPort": 80, "hostIP": "10.0.0.300"}]}}, 999,
             'invalid hostIP "10.0.0.300" in portMappings'),
            ({"markMasqBit": 32}, 999, "MasqMarkBit must be between 0 and 31"),
            ({"markMasqBit": 5, "externalSetMarkChain": "X"}, 999, "Cannot specify externalSetMarkChain and markMasqBit"),
            ({"backend": "pf"}, 999, 'unknown portmap backend "pf"'),
            ({"backend": "nftables", "externalSetMarkChain": "X"}, 999,
             "nftables backend was requested but configuration contains iptables-specific options [externalSetMarkChain]"),
            ({"backend": "nftables", "conditionsV6": ["-s", "fd00::/8"]}, 999,
             "nftables backend was requested but configuration contains iptables-specific options [conditionsV6]"),
            ({"backend": "nftables", "conditionsV4": ["tcp", "flags", "syn"]}, 2,
             'conditionsV4: the nftables expression "tcp" is not supported in conditions (ip/ip6 saddr/daddr and '
             "iifname/oifname are)"),
            ({"backend": "nftables", "conditionsV4": ["ip6", "saddr", "fd00::1"]}, 999,
             'conditionsV4: "ip6" addresses do not belong in conditionsV4'),
            ({"conditionsV4": ["-m", "set", "--match-set", "x", "src"]}, 2,
             "conditionsV4: the set match is not supported in iptables conditions (addrtype, iprange and mark are)"),
            ({"conditionsV4": ["-p", "tcp"]}, 2, "conditionsV4: -p is not supported in iptables conditions: [!] -s, -d, -i, "
                                                 "-o and -m addrtype, iprange or mark with their options are"),
            ({"conditionsV4": ["ip", "saddr", "10.0.0.1"]}, 999,
             "iptables backend was requested but configuration contains nftables-specific options [conditionsV4]"),
            ({"conditionsV4": ["-m", "addrtype", "--dst-type", "LOKAL"]}, 999,
             'conditionsV4: unknown address type "LOKAL" for --dst-type'),
            ({"conditionsV4": ["-m", "addrtype"]}, 999, "conditionsV4: a -m addrtype, iprange or mark without any of its options"),
            ({"conditionsV4": ["-m", "iprange", "--src-range", "fd00::1-fd00::2"]}, 999,
             'conditionsV4: invalid IPv4 range "fd00::1-fd00::2" for --src-range'),
            ({"conditionsV6": ["-s", "10.0.0.0/8"]}, 999, "conditionsV6: invalid IPv6 address 10.0.0.0/8"),
            ({"conditionsV4": ["-m", "mark", "--mark", "0x1/zz"]}, 999, 'conditionsV4: invalid mark "0x1/zz" for --mark'),
        ]:
            err = add(**keys).error()
            eq((err["code"], err["msg"]), (code, "failed to parse config: " + msg), str(keys))
        for keys in ({"runtimeConfig": {"portMappings": [{"hostPort": 80, "containerPort": 80, "protocol": "icmp"}]}},
                     {"runtimeConfig": {"portMappings": [{"hostPort": 80, "containerPort": 80, "hostIP": "10.0.0.300"}]}},
                     {"runtimeConfig": {"portMappings": [{"hostPort": 80, "containerPort": 70000}]}},
                     {"runtimeConfig": {"portMappings": [{"hostPort": 70000, "containerPort": 80}]}},
                     {"runtimeConfig": {"portMappings": [{"hostPort": 2**31, "containerPort": 2**40}]}},
                     {"conditionsV4": ["-p", "tcp"]}):
            # What only ADD uses does not fail the DEL sent after the refused ADD (nor does it in the Go plugin).
            conf = dict(conflist(n.data, MAPPINGS)["plugins"][1], name="pm-test", cniVersion="1.0.0")
            conf.update(keys)
            pm.run("DEL", conf, host_ns=n.host, netns=ns_path(n.ctr), container_id="pm-9", extra_env=ENV).ok()
        bad = dict(conflist(n.data, MAPPINGS)["plugins"][1], name="pm-test", cniVersion="1.0.0")
        eq(pm.run("ADD", bad, host_ns=n.host, netns=ns_path(n.ctr), container_id="pm-9", extra_env=ENV).error()["msg"],
           "must be called as chained plugin")
        check(not [line for line in n.nat() if line.startswith(":CNI-DN-")], "nothing left by failed ADDs")

        add(conditionsV4=["!", "-s", "10.99.0.0/16", "-i", "up0"]).ok()
        check(any("! -s 10.99.0.0/16 -i up0 -p tcp" in line and "--dports 8080" in line for line in n.nat()), n.nat())
        n.serve()
        eq(n.ask(n.client, "tcp", HOST_IP, 8080), "tcp-from 10.91.0.2", "the condition lets the client in")
        # A DEL whose ports are past int32 (Go reads them, as 64-bit ints) removes the live attachment.
        huge = dict(conflist(n.data, MAPPINGS)["plugins"][1], name="pm-test", cniVersion="1.0.0", prevResult=res,
                    runtimeConfig={"portMappings": [{"hostPort": 2**31, "containerPort": 2**31, "protocol": "tcp"}]})
        pm.run("DEL", huge, host_ns=n.host, netns=ns_path(n.ctr), container_id="pm-9", extra_env=ENV).ok()
        check(not [line for line in n.nat() if line.startswith(":CNI-DN-") or "--dports 8080" in line], n.nat())
        pm.run("DEL", dict(conflist(n.data, MAPPINGS)["plugins"][1], name="pm-test", cniVersion="1.0.0", prevResult=res),
               host_ns=n.host, netns=ns_path(n.ctr), container_id="pm-9", extra_env=ENV).ok()

        # Matches in the conditions: the client's address range is excluded, so its connection
        # reaches the host itself (nothing listens there) instead of the container.
        cond = ["-m", "iprange", "!", "--src-range", "10.91.0.2-10.91.0.9", "-m", "addrtype", "!", "--src-type", "LOCAL",
                "-m", "mark", "!", "--mark", "0x40/0xc0"]
        add(conditionsV4=cond).ok()
        entry = [line for line in n.nat() if line.startswith("-A CNI-HOSTPORT-DNAT") and "--dports 8080" in line]
        eq(len(entry), 1, n.nat())
        check(entry[0].endswith("-m iprange ! --src-range 10.91.0.2-10.91.0.9 -m addrtype ! --src-type LOCAL "
                                "-m mark ! --mark 0x40/0xc0 -j " + entry[0].split()[-1]), entry[0])
        # byte for byte what iptables builds for the same words, so the Go portmap and iptables -C find it
        sh("ip", "netns", "exec", n.host, "iptables-legacy", "-t", "nat", "-C", *shlex.split(entry[0])[1:])
        eq(n.ask(n.client, "tcp", HOST_IP, 8080), "error ConnectionRefusedError", "the condition keeps the client out")
        add(conditionsV4=cond).ok()  # ADD again: the entry rule is recognised, not duplicated
        eq(len([line for line in n.nat() if line.startswith("-A CNI-HOSTPORT-DNAT") and "--dports 8080" in line]), 1)
        # An ID too long for the entry rules' 255-byte comments, which then end in "...".
        long_conf = dict(conflist(n.data, MAPPINGS)["plugins"][1], name="pm-test", cniVersion="1.0.0", prevResult=res,
                         runtimeConfig={"portMappings": [{"hostPort": 8090, "containerPort": 80, "protocol": "tcp"}]})
        pm.run("ADD", long_conf, host_ns=n.host, netns=ns_path(n.ctr), container_id="pm-long-" + "x" * 240, extra_env=ENV).ok()
        check(any('xxx..."' in line for line in n.nat()), "the long ID's comment is cut")
        gc = {"cniVersion": "1.1.0", "name": "pm-test", "type": "portmap", "runtimeConfig": {"portMappings": MAPPINGS},
              "cni.dev/valid-attachments": [{"containerID": "pm-0", "ifname": "eth0"}]}
        pm.run("GC", gc, host_ns=n.host, extra_env=ENV).ok()
        eq([line for line in n.nat() if line.startswith(":CNI-DN-") or "pm-" in line], [],
           "GC removed the stale attachments' chains and entry rules, also the long ID's")


def nft_table(ns, family="ip"):
    """`nft list table <family> cni_hostport` in `ns`, without the rules' handles; "" when absent."""
    return sh("ip", "netns", "exec", ns, "nft", "list", "table", family, "cni_hostport", check_rc=False).stdout


@test
def portmap_nftables_backend():
    """portmap backend nftables: the reference's cni_hostport tables, traffic from outside, localhost and hairpin, CHECK, DEL"""
    with Node() as n:
        maps = MAPPINGS + [{"hostPort": 9090, "containerPort": 80, "protocol": "tcp", "hostIP": HOST_IP}]
        c = conflist(n.data, maps, backend="nftables", conditionsV4=["ip", "saddr", "!=", "10.99.0.0/16"])
        res = run_add(BIN, c, n.host, ns_path(n.ctr), "pm-n", env=ENV)
        eq([line for line in n.nat() if line.startswith("-A")], [], "no iptables rules with the nftables backend")
        eq(nft_table(n.host),
           "table ip cni_hostport {\n"
           "\tcomment \"CNI portmap plugin\"\n"
           "\tchain hostports {\n"
           "\t\ttcp dport 8080 dnat to 10.90.0.2:80 comment \"pm-n\"\n"
           "\t\tudp dport 5353 dnat to 10.90.0.2:53 comment \"pm-n\"\n"
           "\t\tip daddr 10.91.0.1 tcp dport 9090 dnat to 10.90.0.2:80 comment \"pm-n\"\n"
           "\t}\n\n"
           "\tchain hostip_hostports {\n\t}\n\n"
           "\tchain hostports_all {\n"
           "\t\tjump hostip_hostports\n"
           "\t\tjump hostports\n"
           "\t}\n\n"
           "\tchain prerouting {\n"
           "\t\ttype nat hook prerouting priority dstnat; policy accept;\n"
           "\t\tip saddr != 10.99.0.0/16 fib daddr type local jump hostports_all\n"
           "\t}\n\n"
           "\tchain output {\n"
           "\t\ttype nat hook output priority -100; policy accept;\n"
           "\t\tip saddr != 10.99.0.0/16 fib daddr type local jump hostports_all\n"
           "\t}\n\n"
           "\tchain masquerading {\n"
           "\t\ttype nat hook postrouting priority srcnat; policy accept;\n"
           "\t\tip saddr 10.90.0.2 ip daddr 10.90.0.2 masquerade comment \"pm-n\"\n"
           "\t\tip saddr 127.0.0.1 ip daddr 10.90.0.2 masquerade comment \"pm-n\"\n"
           "\t}\n\n"
           "\tchain localnet_guard {\n"
           "\t\ttype filter hook input priority filter; policy accept;\n"
           "\t\tip saddr != 127.0.0.0/8 ip daddr 127.0.0.0/8 ct state ! established,related ct status ! dnat drop "
           "comment \"CNI portfwd: block incoming localnet connections\"\n"
           "\t}\n"
           "}\n")
        run_check(BIN, c, n.host, ns_path(n.ctr), "pm-n", res, env=ENV)
        n.serve()
        eq(n.ask(n.client, "tcp", HOST_IP, 8080), "tcp-from 10.91.0.2")
        eq(n.ask(n.client, "tcp", HOST_IP, 9090), "tcp-from 10.91.0.2", "the hostIP mapping")
        eq(n.ask(n.client, "udp", HOST_IP, 5353), "udp-from 10.91.0.2")
        eq(n.ask(n.host, "tcp", "127.0.0.1", 8080), "tcp-from 10.90.0.1", "localhost, masqueraded to the bridge address")
        eq(n.ask(n.ctr, "tcp", HOST_IP, 8080), "tcp-from 10.90.0.1", "hairpin, masqueraded")
        eq(sh("ip", "netns", "exec", n.host, "cat", "/proc/sys/net/ipv4/conf/cnipm0/route_localnet").stdout.strip(), "1")
        sh("ip", "netns", "exec", n.host, "nft", "flush", "chain", "ip", "cni_hostport", "masquerading")
        err = Plugin(os.path.join(BIN, "portmap")).run(
            "CHECK", dict(c["plugins"][1], name="pm-test", cniVersion="1.0.0", prevResult=res), host_ns=n.host,
            netns=ns_path(n.ctr), container_id="pm-n", extra_env=ENV).error()
        eq(err["msg"], 'missing hostport rules in "masquerading" chain')
        # Rules as the reference's nft transaction writes them: ours by container ID, and another's.
        for cid, port in (("pm-n", 7070), ("pm-other", 7071)):
            sh("ip", "netns", "exec", n.host, "nft", "add", "rule", "ip", "cni_hostport", "hostports", "tcp", "dport", str(port),
               "dnat", "to", "10.90.0.3:80", "comment", f'"{cid}"')
        run_del(BIN, c, n.host, ns_path(n.ctr), "pm-n", res, env=ENV)
        eq(n.ask(n.client, "tcp", HOST_IP, 8080), "error ConnectionRefusedError")
        check('comment "pm-n"' not in nft_table(n.host), nft_table(n.host))
        check('tcp dport 7071 dnat to 10.90.0.3:80 comment "pm-other"' in nft_table(n.host), "another attachment's rule stays")
        check("chain prerouting" in nft_table(n.host), "the shared chains stay, as the reference's")
        run_del(BIN, c, n.host, ns_path(n.ctr), "pm-n", res, env=ENV)  # idempotent


@test
def full_chain_the_way_a_runtime_runs_it():
    """bridge + portmap + tuning + bandwidth + firewall: ADD in order, CHECK, traffic through the port, DEL in reverse"""
    with Node() as n:
        c = conflist(n.data, MAPPINGS)
        c["plugins"] += [{"type": "tuning", "dataDir": n.data + "/tuning", "mtu": 1400, "sysctl": {"net.core.somaxconn": "512"}},
                         {"type": "bandwidth", "ingressRate": 80000000, "ingressBurst": 8000000,
                          "egressRate": 80000000, "egressBurst": 8000000},
                         {"type": "firewall"}]
        res = run_add(BIN, c, n.host, ns_path(n.ctr), "pm-1", env=ENV)
        eq([i["name"] for i in res["interfaces"]][2], "eth0")
        check(res["interfaces"][-1]["name"].startswith("bwp"), "bandwidth's IFB is in the final result")
        run_check(BIN, c, n.host, ns_path(n.ctr), "pm-1", res, env=ENV)
        eq(sh("ip", "-n", n.ctr, "-j", "link", "show", "eth0").stdout.count('"mtu":1400'), 1)
        n.serve()
        eq(n.ask(n.client, "tcp", HOST_IP, 8080), "tcp-from 10.91.0.2")
        eq(n.ask(n.client, "udp", HOST_IP, 5353), "udp-from 10.91.0.2")
        run_del(BIN, c, n.host, ns_path(n.ctr), "pm-1", res, env=ENV)
        check(not [line for line in n.nat() if line.startswith(":CNI-DN-")], "portmap chain gone")
        check("bwp" not in sh("ip", "-n", n.host, "-br", "link").stdout, "IFB gone")
        check(sh("ip", "-n", n.ctr, "link", "show", "eth0", check_rc=False).returncode != 0, "container interface gone")


@test
def portmap_and_the_go_portmap_remove_each_others_rules():
    """portmap: Debian's Go portmap DELs our chains, we DEL its chains; both forward the same traffic"""
    if not REF:
        raise AssertionError("Debian's containernetworking-plugins is not installed")
    for add_dir, del_dir in [(BIN, REF), (REF, BIN)]:
        with Node() as n:
            before = n.nat()
            c = conflist(n.data, MAPPINGS)
            res = run_add(add_dir, c, n.host, ns_path(n.ctr), "pm-1", env=ENV)
            n.serve()
            eq(n.ask(n.client, "tcp", HOST_IP, 8080), "tcp-from 10.91.0.2", f"ADD by {add_dir}")
            eq(n.ask(n.client, "udp", HOST_IP, 5353), "udp-from 10.91.0.2", f"ADD by {add_dir}")
            run_del(del_dir, c, n.host, ns_path(n.ctr), "pm-1", res, env=ENV)
            eq([line for line in n.nat() if not shared(line)], [line for line in before if not shared(line)],
               f"ADD by {add_dir}, DEL by {del_dir}")


@test
def del_removes_what_the_go_portmap_wrote_through_iptables_nft():
    """portmap: after the Go portmap's ADD with iptables-nft (Debian 12's default iptables), our DEL removes its DNAT chain and the jump to it from nf_tables"""
    if not REF:
        raise AssertionError("Debian's containernetworking-plugins is not installed")
    nft_env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    check(os.path.realpath(shutil.which("iptables", path=nft_env["PATH"])).endswith("xtables-nft-multi"),
          "iptables must be the nft variant for this test")
    with Node() as n:
        c = conflist(n.data, MAPPINGS)
        res = run_add(REF, c, n.host, ns_path(n.ctr), "pm-nft", env=nft_env)

        def written():
            out = sh("ip", "netns", "exec", n.host, "iptables-nft-save", "-t", "nat").stdout
            return [line for line in out.splitlines() if "CNI-DN-" in line]
        check(any(line.startswith(":CNI-DN-") for line in written()), written())
        check(any(line.startswith("-A CNI-HOSTPORT-DNAT") and "-j CNI-DN-" in line for line in written()), written())
        legacy = sh("ip", "netns", "exec", n.host, "iptables-legacy-save", "-t", "nat").stdout
        check("CNI-DN-" not in legacy, "the Go portmap wrote nothing into the legacy tables")
        run_del(BIN, c, n.host, ns_path(n.ctr), "pm-nft", res, env=ENV)
        eq(written(), [])


if __name__ == "__main__":
    run_all(cleanup=[BIN, LEGACY])
