#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The DHCPv6 bench row (issue 55; docs/dhcp.md, DHCPv6): macvlan with the dhcp IPAM's
`"protocol": "ipv6"` against dnsmasq's DHCPv6 server (with router advertisements) in the lab of
tests/lib/dhcplab.py, ADD and DEL p50/p99, and the DHCPv6 messages of each call counted on the
wire: an nftables table in the server's namespace counts UDP packets to and from port 547 by
message type (the first byte of the UDP payload), read before and after every call once the
counters settle (DEL's RELEASE leaves the daemon after the call returns). dnsmasq's own log
(--log-dhcp) is tallied beside it as a cross-check. DHCPv4 (no protocol key) is timed in the
same run, alternating, for scale, with its packets to and from port 67; so is DHCPv6 in a pod
namespace whose new links do no DAD (dad_transmits and accept_dad 0): a control that separates
the kernel's DAD of the link-local address (the client waits for it before it may send) and of
the leased address (the plugin waits for it to settle) from the rest of the call. The Go plugins have no
DHCPv6, so the figures are absolute. Every call is the macvlan launcher of a `cni-all install`
folder started from this script (fork, exec, wait) with the script in the host namespace (no
`ip netns exec` in the time); the first call of each kind is left out. Run as root:

    python3 tests/lib/private_state.py bench/dhcp6.py --cni-all build-test/cni-all [--iterations 30]
"""
import argparse
import collections
import ctypes
import json
import os
import re
import subprocess
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--cni-all", required=True)
p.add_argument("--iterations", type=int, default=30, help="ADD+DEL pairs per protocol")
p.add_argument("--dnsmasq-log", help="a copy of dnsmasq's log (--log-dhcp) goes here")
opts = p.parse_args()
os.environ["CNI_ALL"] = os.path.abspath(opts.cni_all)  # read by cnitest when dhcplab imports BIN

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "lib"))
from cnitest import BIN, netns, ns_path, sh  # noqa: E402
from dhcplab import lab  # noqa: E402

V6 = ["--dhcp-range=2001:db8:213::1000,2001:db8:213::ffff,64,2m", "--enable-ra",
      "--dhcp-option=option6:dns-server,[2001:db8:213::53]", "--dhcp-option=option6:domain-search,pods.test"]
TYPES6 = {1: "SOLICIT", 2: "ADVERTISE", 3: "REQUEST", 4: "CONFIRM", 5: "RENEW", 6: "REBIND", 7: "REPLY",
          8: "RELEASE", 9: "DECLINE", 11: "INFORMATION-REQUEST"}
CLONE_NEWNET = 0x40000000
libc = ctypes.CDLL(None, use_errno=True)


def counting_table(server):
    """nftables counters in the server's namespace: DHCPv6 by message type and direction,
    DHCPv4 packets by direction. Each rule's comment names what it counts."""
    rules = ["add table inet dhcpcount",
             "add chain inet dhcpcount pre { type filter hook prerouting priority -300 ; }",
             "add chain inet dhcpcount post { type filter hook postrouting priority 300 ; }",
             'add rule inet dhcpcount pre udp dport 67 counter comment "v4 to server"',
             'add rule inet dhcpcount post udp sport 67 counter comment "v4 from server"']
    for t, name in TYPES6.items():
        rules.append(f'add rule inet dhcpcount pre udp dport 547 @th,64,8 {t} counter comment "{name}"')
        rules.append(f'add rule inet dhcpcount post udp sport 547 @th,64,8 {t} counter comment "{name}"')
    rules.append('add rule inet dhcpcount pre udp dport 547 counter comment "v6 to server, any type"')
    rules.append('add rule inet dhcpcount post udp sport 547 counter comment "v6 from server, any type"')
    sh("ip", "netns", "exec", server, "nft", "-f", "-", input="\n".join(rules) + "\n")


def counters(server):
    out = json.loads(sh("ip", "netns", "exec", server, "nft", "-j", "list", "table", "inet", "dhcpcount").stdout)
    got = collections.Counter()
    for item in out["nftables"]:
        rule = item.get("rule")
        if rule:
            got[rule["comment"]] += next(e["counter"]["packets"] for e in rule["expr"] if "counter" in e)
    return got


def settled(server):
    """The counters once no packet has come for 150 ms (at most 2 s)."""
    last, end = counters(server), time.time() + 2
    while time.time() < end:
        time.sleep(0.15)
        now = counters(server)
        if now == last:
            return now
        last = now
    return last


def call(command, conf, ctr, cid):
    env = {"CNI_COMMAND": command, "CNI_CONTAINERID": cid, "CNI_NETNS": ns_path(ctr), "CNI_IFNAME": "eth0",
           "CNI_PATH": BIN, "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    start = time.perf_counter()
    r = subprocess.run([os.path.join(BIN, "macvlan")], input=json.dumps(conf), env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    if r.returncode != 0:
        raise RuntimeError(f"macvlan {command}: {r.stdout} {r.stderr}")
    return took


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def per_call(samples, key):
    """A count per call: "n" when every call had n, else "min-max (median m)"."""
    xs = sorted(s[key] for s in samples)
    return str(xs[0]) if xs[0] == xs[-1] else f"{xs[0]}-{xs[-1]} (median {xs[len(xs) // 2]})"


def breakdown(samples):
    """The message types of one kind of call, as "SOLICIT 1, REPLY 1" when every call had the same."""
    names = sorted({k for s in samples for k, v in s.items() if v and k in TYPES6.values()},
                   key=lambda n: list(TYPES6.values()).index(n))
    return ", ".join(f"{n} {per_call(samples, n)}" for n in names) or "-"


def main():
    load_before = open("/proc/loadavg").read().split()[:3]
    date = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    with lab(dnsmasq_args=V6) as lb, netns("dhb") as ctr, netns("dhn") as nodad:
        counting_table(lb.server)
        sh("ip", "netns", "exec", nodad, "sysctl", "-qw", "net.ipv6.conf.default.dad_transmits=0",
           "net.ipv6.conf.all.dad_transmits=0", "net.ipv6.conf.default.accept_dad=0", "net.ipv6.conf.all.accept_dad=0")
        host_fd = os.open(ns_path(lb.host), os.O_RDONLY)
        if libc.setns(host_fd, CLONE_NEWNET) != 0:  # the plugin's host namespace is this script's own from here
            sys.exit(f"setns: {os.strerror(ctypes.get_errno())}")
        os.close(host_fd)
        kinds = {"v6": (lb.conf(protocol="ipv6"), ctr), "v6 no DAD": (lb.conf(protocol="ipv6"), nodad), "v4": (lb.conf(), ctr)}
        for conf, _ in kinds.values():
            conf["cniVersion"] = "1.1.0"
        times = {(k, c): [] for k in kinds for c in ("ADD", "DEL")}
        packets = {(k, c): [] for k in kinds for c in ("ADD", "DEL")}
        done = 0
        try:  # an interrupt (SIGINT) ends the run early, with the iterations completed so far
            for i in range(opts.iterations + 1):
                for kind, (conf, pod) in kinds.items():
                    for command in ("ADD", "DEL"):
                        before = settled(lb.server)
                        took = call(command, conf, pod, f"b{i}")
                        delta = settled(lb.server) - before
                        if i:  # the first pair warms caches and is left out
                            times[kind, command].append(took)
                            packets[kind, command].append(delta)
                done = i
                print(f"# iteration {i} of {opts.iterations} done", file=sys.stderr, flush=True)
        except KeyboardInterrupt:
            for key in times:  # whole iterations only
                del times[key][done:], packets[key][done:]
            if not done:
                raise
        total = counters(lb.server)
        with open(f"{lb.work}/dnsmasq.log") as f:
            text = f.read()
        # DHCPv6 lines name the client's DUID-LL (00:03:00:01:MAC), DHCPv4 ones its MAC; the
        # REPLY to a RELEASE is not logged
        logged = collections.Counter(re.findall(r" DHCP([A-Z-]+)\(\S+\) (?:\S+ )?00:03:00:01:", text))
        if opts.dnsmasq_log:
            with open(opts.dnsmasq_log, "w") as f:
                f.write(text)
    load_after = open("/proc/loadavg").read().split()[:3]

    print(f"{date}, {os.cpu_count()} CPUs, load average {' '.join(load_before)} before, {' '.join(load_after)} after; "
          f"{done} iterations of each call\n")
    print("| call | p50 ms | p99 ms | packets per call (to server + from server) | message types per call |")
    print("|---|---|---|---|---|")
    for (kind, command), t in times.items():
        s = packets[kind, command]
        label = {"v6": "macvlan + dhcp (v6)", "v6 no DAD": "macvlan + dhcp (v6), control: no DAD in the pod",
                 "v4": "macvlan + dhcp (v4, for scale)"}[kind]
        if kind.startswith("v6"):
            count = f"{per_call(s, 'v6 to server, any type')} + {per_call(s, 'v6 from server, any type')}"
            types = breakdown(s)
        else:
            count, types = f"{per_call(s, 'v4 to server')} + {per_call(s, 'v4 from server')}", "-"
        print(f"| {label} {command} | {pct(t, .5) * 1000:.1f} | {pct(t, .99) * 1000:.1f} | {count} | {types} |")
    wire = {n: total[n] for n in TYPES6.values() if total[n]}
    print(f"\nDHCPv6 messages on the wire in the whole run (warm-up included): {wire}")
    print(f"dnsmasq's log (--log-dhcp), DHCPv6 lines by message name, the same run: {dict(logged)}")


if __name__ == "__main__":
    main()
