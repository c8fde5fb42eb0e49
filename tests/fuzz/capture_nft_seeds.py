#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the nft_rule target's seeds (corpus/nft_rule/): in a throwaway namespace, iptables-nft
and nft write the rule shapes the plugins use (portmap's DNAT and marks, ipMasq, firewall,
vpc-eni's SNAT and CONNMARK, the nftables backends' native expressions), and a raw nfnetlink
dump of every rule keeps each rule's NFTA_RULE_EXPRESSIONS payload as the kernel sends it.
usage: tests/fuzz/capture_nft_seeds.py   (root; the namespace is removed again)"""
import socket
import struct

from seed_capture import capture

NETLINK_NETFILTER, NFNL_SUBSYS_NFTABLES, NFT_MSG_GETRULE, NFT_MSG_NEWRULE = 12, 10, 7, 6
NLM_F_REQUEST, NLM_F_DUMP, NLMSG_DONE, NFTA_RULE_EXPRESSIONS = 1, 0x300, 3, 4
RULES = [
    "iptables-nft -t nat -N CNI-DN-x",
    "iptables-nft -t nat -N CNI-HOSTPORT-SETMARK",
    "iptables-nft -t nat -A CNI-DN-x -s 10.1.0.0/24 -p tcp --dport 8080 -j CNI-HOSTPORT-SETMARK",
    "iptables-nft -t nat -A CNI-HOSTPORT-SETMARK -m comment --comment 'CNI portfwd masquerade mark' -j MARK --set-xmark 0x2000/0x2000",
    "iptables-nft -t nat -A CNI-DN-x -p tcp --dport 8080 -j DNAT --to-destination 10.1.0.5:80",
    "iptables-nft -t nat -A PREROUTING -s 10.1.0.5/32 -m comment --comment 'name: \"n\" id: \"c\"' -j CNI-DN-x",
    "iptables-nft -t nat -A POSTROUTING -s 10.1.0.0/24 ! -d 224.0.0.0/4 -j MASQUERADE",
    "iptables-nft -t nat -A CNI-DN-x -p tcp -m multiport --dports 80,443 -m addrtype --dst-type LOCAL -j ACCEPT",
    "iptables-nft -t nat -A CNI-DN-x -m iprange --src-range 10.0.0.1-10.0.0.9 -m mark --mark 0x80/0x80 -j RETURN",
    "iptables-nft -A FORWARD -d 10.1.0.5/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
    "iptables-nft -A FORWARD -i cni0 ! -o cni0 -j DROP",
    "iptables-nft -t nat -A POSTROUTING ! -d 10.0.0.0/8 -o eth0 -j SNAT --to-source 10.0.0.9 --random-fully",
    "iptables-nft -t mangle -A PREROUTING -i eth0 -j CONNMARK --restore-mark --nfmask 0x80 --ctmask 0x80",
    "ip6tables-nft -t nat -A POSTROUTING -s fd00::/64 ! -d fd00::/64 -j MASQUERADE",
    "nft add table inet cni_plugins_masquerade",
    "nft add chain inet cni_plugins_masquerade postrouting '{ type nat hook postrouting priority 100; }'",
    "nft add rule inet cni_plugins_masquerade postrouting ip saddr 10.1.0.5 ip daddr != 224.0.0.0/4 masquerade comment x",
    "nft add rule inet cni_plugins_masquerade postrouting fib daddr type local ether saddr 0a:58:0a:01:00:05 ct state new meta mark set meta mark or 0x2000 counter",
]


def dump(family):
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    body = struct.pack("BBH", family, 0, 0)
    s.send(struct.pack("=IHHII", 16 + len(body), (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETRULE, NLM_F_REQUEST | NLM_F_DUMP, 1, 0) + body)
    out = []
    while True:
        data = s.recv(1 << 20)
        off = 0
        while off < len(data):
            length, kind = struct.unpack_from("=IH", data, off)
            if kind == NLMSG_DONE:
                return out
            if kind == (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWRULE:
                a = off + 16 + 4
                while a < off + length:
                    alen, atype = struct.unpack_from("=HH", data, a)
                    if atype & 0x3fff == NFTA_RULE_EXPRESSIONS:
                        out.append(data[a + 4:a + alen])
                    a += (alen + 3) & ~3
            off += (length + 3) & ~3



def seeds():
    for family in (2, 10, 1):
        yield from dump(family)


capture(RULES, "nft_rule", seeds)
