#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the iptables_rule target's seeds (corpus/iptables_rule/): in a throwaway namespace,
iptables-legacy writes the rule shapes the plugins use (portmap's DNAT and marks, ipMasq,
firewall, vpc-eni's SNAT and CONNMARK), and the kernel's copy of each table (IPT_SO_GET_ENTRIES,
what libiptc reads) is cut into its entries. A seed is one byte (the family, and the target's
name as tests/fuzz/iptables_rule.cpp numbers them) followed by the entry as the kernel sent it.
usage: tests/fuzz/capture_iptables_seeds.py   (root; the namespace is removed again)"""
import ctypes
import socket
import struct

from seed_capture import capture, libc

RULES = [
    "iptables-legacy -t nat -N CNI-DN-x",
    "iptables-legacy -t nat -N CNI-HOSTPORT-SETMARK",
    "iptables-legacy -t nat -A CNI-DN-x -s 10.1.0.0/24 -p tcp --dport 8080 -j CNI-HOSTPORT-SETMARK",
    "iptables-legacy -t nat -A CNI-HOSTPORT-SETMARK -m comment --comment 'CNI portfwd masquerade mark' -j MARK --set-xmark 0x2000/0x2000",
    "iptables-legacy -t nat -A CNI-DN-x -p tcp --dport 8080 -j DNAT --to-destination 10.1.0.5:80",
    "iptables-legacy -t nat -A CNI-DN-x -p udp --dport 53 -j DNAT --to-destination 10.1.0.5",
    "iptables-legacy -t nat -A PREROUTING -s 10.1.0.5/32 -m comment --comment 'name: \"n\" id: \"c\"' -j CNI-DN-x",
    "iptables-legacy -t nat -A POSTROUTING -s 10.1.0.0/24 ! -d 224.0.0.0/4 -j MASQUERADE",
    "iptables-legacy -t nat -A CNI-DN-x -p tcp -m multiport --dports 80,443 -m addrtype --dst-type LOCAL -j ACCEPT",
    "iptables-legacy -t nat -A CNI-DN-x -m iprange --src-range 10.0.0.1-10.0.0.9 -m mark --mark 0x80/0x80 -j RETURN",
    "iptables-legacy -A FORWARD -d 10.1.0.5/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
    "iptables-legacy -A FORWARD -i cni0 ! -o cni0 -j DROP",
    "iptables-legacy -A FORWARD -i veth+ -p sctp --dport 9 -j ACCEPT",
    "iptables-legacy -t nat -A POSTROUTING ! -d 10.0.0.0/8 -o eth0 -j SNAT --to-source 10.0.0.9 --random-fully",
    "iptables-legacy -t mangle -A PREROUTING -i eth0 -j CONNMARK --restore-mark --nfmask 0x80 --ctmask 0x80",
    "iptables-legacy -t mangle -A PREROUTING -i eth1 -j CONNMARK --set-xmark 0x80/0x80",
    "ip6tables-legacy -t nat -A POSTROUTING -s fd00::/64 ! -d fd00::/64 -j MASQUERADE",
    "ip6tables-legacy -t nat -A PREROUTING -p tcp --dport 8080 -j DNAT --to-destination [fd00::5]:80",
    "ip6tables-legacy -A FORWARD -o cni0 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
]
TARGETS = ["", "ACCEPT", "RETURN", "MASQUERADE", "DNAT", "SNAT", "MARK", "CONNMARK", "CNI-HOSTPORT-DNAT", "DROP"]
# (family, level, entry size, offset of target_offset in the entry), for ipt_entry and ip6t_entry
FAMILIES = [(socket.AF_INET, 0, 112, 88), (socket.AF_INET6, 41, 168, 140)]
SO_GET_INFO, SO_GET_ENTRIES = 64, 65


def table_entries(family, level, table):
    s = socket.socket(family, socket.SOCK_RAW, socket.IPPROTO_RAW)
    info = ctypes.create_string_buffer(table.encode(), 84)
    size = ctypes.c_uint(84)
    if libc.getsockopt(s.fileno(), level, SO_GET_INFO, info, ctypes.byref(size)) != 0:
        return b""
    total = struct.unpack_from("=I", info.raw, 80)[0]
    buf = ctypes.create_string_buffer(table.encode(), 40 + total)
    struct.pack_into("=I", buf, 32, total)
    size = ctypes.c_uint(40 + total)
    if libc.getsockopt(s.fileno(), level, SO_GET_ENTRIES, buf, ctypes.byref(size)) != 0:
        raise OSError(ctypes.get_errno(), "IPT_SO_GET_ENTRIES " + table)
    return buf.raw[40:40 + total]


def seeds():
    for v6, (family, level, _, at) in enumerate(FAMILIES):
        for table in ("nat", "filter", "mangle"):
            blob = table_entries(family, level, table)
            off = 0
            while off < len(blob):
                target_offset, next_offset = struct.unpack_from("=HH", blob, off + at)
                entry = blob[off:off + next_offset]
                name = entry[target_offset + 2:target_offset + 31].split(b"\0")[0].decode()
                if name != "ERROR":  # a chain's head, never a rule libiptc lists
                    index = TARGETS.index(name) if name in TARGETS else TARGETS.index("CNI-HOSTPORT-DNAT")
                    yield bytes([v6 | (index << 1)]) + entry
                off += next_offset


capture(RULES, "iptables_rule", seeds)
