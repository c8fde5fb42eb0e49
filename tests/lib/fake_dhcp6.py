#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A DHCPv6 server that moves a lease when it is renewed, for tests/netns/test_dhcp6.py (run in
the lab's throwaway server namespace with `ip netns exec`): the first SOLICIT gets a Rapid Commit
REPLY leasing OLD (T1 2 s, T2 3 s); a RENEW or REBIND of OLD gets OLD with lifetimes 0 and NEW
offered (RFC 8415 section 18.3.4 allows it); later SOLICITs get NEW, and a RENEW of NEW keeps it. Before its answer to SOLICIT and RENEW
it sends a decoy the client must discard (RFC 8415 section 18.2.10): a REPLY to SOLICIT without
Rapid Commit, a REPLY to RENEW from another server, each granting 2001:db8:213::dd.
Each message it hears is one line on stdout: its type number and the addresses of its IA_NA.

usage: fake_dhcp6.py IFNAME OLD NEW   (prints "ready" once it listens)"""
import socket
import struct
import sys

SERVER_DUID = bytes.fromhex("00030001020000000001")
OTHER_DUID = bytes.fromhex("00030001020000000002")
DECOY = socket.inet_pton(socket.AF_INET6, "2001:db8:213::dd")
SOLICIT, REPLY, RENEW, REBIND, RELEASE = 1, 7, 5, 6, 8


def option(code, data):
    return struct.pack("!HH", code, len(data)) + data


def options(data):
    out, i = {}, 0
    while i + 4 <= len(data):
        code, length = struct.unpack("!HH", data[i:i + 4])
        out.setdefault(code, []).append(data[i + 4:i + 4 + length])
        i += 4 + length
    return out


def ia_addresses(ia):
    return [socket.inet_ntop(socket.AF_INET6, a[:16]) for a in options(ia[12:]).get(5, [])]


def main():
    ifname, old, new = sys.argv[1], socket.inet_pton(socket.AF_INET6, sys.argv[2]), socket.inet_pton(socket.AF_INET6, sys.argv[3])
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.bind(("::", 547))
    group = socket.inet_pton(socket.AF_INET6, "ff02::1:2") + struct.pack("@I", socket.if_nametoindex(ifname))
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP, group)
    print("ready", flush=True)
    solicits = 0
    while True:
        data, peer = s.recvfrom(65536)
        kind, xid, opts = data[0], data[1:4], options(data[4:])
        ia = opts.get(3, [b"\0" * 12])[0]
        asked = ia_addresses(ia)
        print(kind, " ".join(asked), flush=True)

        def iaaddr(a, preferred, valid):
            return option(5, a + struct.pack("!II", preferred, valid))
        if kind == SOLICIT:
            solicits += 1
            addrs = iaaddr(old if solicits == 1 else new, 30, 60)
        elif kind in (RENEW, REBIND) and socket.inet_ntop(socket.AF_INET6, old) in asked:
            addrs = iaaddr(old, 0, 0) + iaaddr(new, 30, 60)
        elif kind in (RENEW, REBIND):
            addrs = iaaddr(new, 30, 60)
        else:
            continue
        head = bytes([REPLY]) + xid + option(1, opts[1][0])
        ia_of = lambda addrs: option(3, ia[:4] + struct.pack("!II", 2, 3) + addrs)  # noqa: E731
        # A decoy first, which the client must discard: to SOLICIT a REPLY without Rapid Commit,
        # to RENEW a REPLY from another server; both grant DECOY for long.
        if kind in (SOLICIT, RENEW):
            s.sendto(head + option(2, OTHER_DUID if kind == RENEW else SERVER_DUID) + ia_of(iaaddr(DECOY, 3000, 6000)), peer)
        reply = head + option(2, SERVER_DUID)
        reply += option(14, b"") if kind == SOLICIT else b""
        s.sendto(reply + ia_of(addrs), peer)


if __name__ == "__main__":
    main()
