#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A DHCPv6 server with a few scripted misbehaviours, for tests/netns/test_dhcp6.py (run in a
throwaway namespace with `ip netns exec`). Leases last 60 s with T1 2 s and T2 3 s. MODE:
- move (the default): the first SOLICIT gets a Rapid Commit REPLY leasing OLD; a RENEW or REBIND
  of OLD gets OLD with lifetimes 0 and NEW offered (RFC 8415 section 18.3.4 allows it); later
  SOLICITs get NEW, and a RENEW of NEW keeps it.
- info: leases OLD, and its REPLYs carry no DNS options; it answers an INFORMATION-REQUEST with
  them (RFC 8415 section 18.2.6), after a decoy REPLY from another server with other DNS options
  (2001:db8:213::dd, decoy.test), which the client must not prefer to the lease's server's.
- advertise: no Rapid Commit: a SOLICIT gets an ADVERTISE of OLD, and the REQUEST a REPLY.
- no-ia: leases OLD with T2 6 s (an unanswered RENEW is retried 2 s later, still a RENEW); its first REPLY to RENEW holds no IA_NA (RFC 8415 section
  18.2.10.1: the client keeps the lease), later ones renew OLD.
- listen: answers nothing (a process of the pod listening for the daemon's multicast).
- refuse: leases OLD to the first SOLICIT; a RENEW or REBIND gets its IA_NA with status NoBinding
  ("gone"), and later SOLICITs an ADVERTISE whose IA_NA has status NoAddrsAvail ("full").
- full: leases OLD as the default mode does, but each SOLICIT is first answered by another server
  whose pool is full: an ADVERTISE with IA_NA status NoAddrsAvail, which the client must pass over
  (RFC 8415 section 18.2.9).
Every lease REPLY but in mode info carries DNS server 2001:db8:213::53 and search list pods.test.
Before its answer to SOLICIT, REQUEST and RENEW it sends a decoy the client must discard (RFC 8415
section 18.2.10): a REPLY to SOLICIT without Rapid Commit, a REPLY to REQUEST or RENEW from
another server, each granting 2001:db8:213::dd. Each message it hears is one line on stdout: its
type number and the addresses of its IA_NA.

usage: fake_dhcp6.py IFNAME OLD NEW [MODE]   (prints "ready" once it listens)"""
import socket
import struct
import sys

SERVER_DUID = bytes.fromhex("00030001020000000001")
OTHER_DUID = bytes.fromhex("00030001020000000002")
DECOY = socket.inet_pton(socket.AF_INET6, "2001:db8:213::dd")
SOLICIT, ADVERTISE, REQUEST, RENEW, REBIND, REPLY, RELEASE, INFORMATION_REQUEST = 1, 2, 3, 5, 6, 7, 8, 11


def option(code, data):
    return struct.pack("!HH", code, len(data)) + data


def status(code, text):
    return option(13, struct.pack("!H", code) + text)


DNS = option(23, socket.inet_pton(socket.AF_INET6, "2001:db8:213::53")) + option(24, b"\x04pods\x04test\x00")


def options(data):
    out, i = {}, 0
    while i + 4 <= len(data):
        code, length = struct.unpack("!HH", data[i:i + 4])
        out.setdefault(code, []).append(data[i + 4:i + 4 + length])
        i += 4 + length
    return out


def ia_addresses(ia):
    return [socket.inet_ntop(socket.AF_INET6, a[:16]) for a in options(ia[12:]).get(5, [])]


def iaaddr(a, preferred, valid):
    return option(5, a + struct.pack("!II", preferred, valid))


def main():
    ifname, old, new = sys.argv[1], socket.inet_pton(socket.AF_INET6, sys.argv[2]), socket.inet_pton(socket.AF_INET6, sys.argv[3])
    mode = sys.argv[4] if len(sys.argv) > 4 else "move"
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.bind(("::", 547))
    group = socket.inet_pton(socket.AF_INET6, "ff02::1:2") + struct.pack("@I", socket.if_nametoindex(ifname))
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP, group)
    print("ready", flush=True)
    solicits = renews = 0
    t2 = 6 if mode == "no-ia" else 3
    dns = b"" if mode == "info" else DNS
    while True:
        data, peer = s.recvfrom(65536)
        kind, xid, opts = data[0], data[1:4], options(data[4:])
        ia = opts.get(3, [b"\0" * 12])[0]
        asked = ia_addresses(ia)
        print(kind, " ".join(asked), flush=True)
        if mode == "listen" or 1 not in opts:
            continue
        head = xid + option(1, opts[1][0])
        ia_of = lambda addrs: option(3, ia[:4] + struct.pack("!II", 2, t2) + addrs)  # noqa: E731
        reply_type, extra = REPLY, b""
        if kind == INFORMATION_REQUEST and mode == "info":
            s.sendto(bytes([REPLY]) + head + option(2, OTHER_DUID) + option(23, DECOY) + option(24, b"\x05decoy\x04test\x00"), peer)
            s.sendto(bytes([REPLY]) + head + option(2, SERVER_DUID) + DNS, peer)
            continue
        if kind == SOLICIT and mode == "full":
            s.sendto(bytes([ADVERTISE]) + head + option(2, OTHER_DUID) + ia_of(status(2, b"full")), peer)
        if kind == SOLICIT:
            solicits += 1
            addrs = iaaddr(new if mode == "move" and solicits > 1 else old, 30, 60)
            if mode == "refuse" and solicits > 1:
                reply_type, addrs = ADVERTISE, status(2, b"full")
            elif mode == "advertise":
                reply_type = ADVERTISE
            else:
                extra = option(14, b"")
        elif kind == REQUEST:
            addrs = iaaddr(old, 30, 60)
        elif kind in (RENEW, REBIND) and mode == "refuse":
            addrs = status(3, b"gone")
        elif kind in (RENEW, REBIND) and mode == "move":
            addrs = iaaddr(old, 0, 0) + iaaddr(new, 30, 60) if socket.inet_ntop(socket.AF_INET6, old) in asked \
                else iaaddr(new, 30, 60)
        elif kind in (RENEW, REBIND):
            renews += 1
            addrs = None if mode == "no-ia" and renews == 1 else iaaddr(old, 30, 60)
        else:
            continue
        # A decoy first, which the client must discard: to SOLICIT a REPLY without Rapid Commit,
        # to REQUEST and RENEW a REPLY from another server; each grants DECOY for long.
        if kind in (SOLICIT, REQUEST, RENEW):
            decoy_server = SERVER_DUID if kind == SOLICIT else OTHER_DUID
            s.sendto(bytes([REPLY]) + head + option(2, decoy_server) + ia_of(iaaddr(DECOY, 3000, 6000)), peer)
        answer = bytes([reply_type]) + head + option(2, SERVER_DUID) + extra + dns
        s.sendto(answer + (ia_of(addrs) if addrs is not None else b""), peer)


if __name__ == "__main__":
    main()
