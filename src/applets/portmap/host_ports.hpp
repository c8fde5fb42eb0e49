// SPDX-License-Identifier: Apache-2.0
// portmap's host ports (docs/compatibility.md: portmap), one kind of firewall rules in its two
// drivers through the one firewall interface (core/fw/driver.hpp): iptables
// (host_ports_iptables.cpp: the reference's CNI-HOSTPORT-* chains and one CNI-DN-<hash> chain per
// attachment, through libiptc in the node's variant) and nftables (host_ports_nft.cpp: the
// reference's `ip|ip6 cni_hostport` table, its rules commented with the container ID); offered
// together as host_ports(). Teardown reads only the network and container ID; the nftables
// driver has no GC (its rules carry only the container ID, not the network, so whose they are
// cannot be told; the reference has none either). Each driver reads conditionsV4/V6 in its own
// syntax.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/fw/driver.hpp"
#include "core/fw/iptables.hpp"
#include "core/fw/nftables.hpp"
#include "core/net/ip.hpp"
#include "core/result.hpp"

namespace cni::portmap {

struct PortMapping {
    int host_port = 0;
    int container_port = 0;
    int proto = 0;             // IPPROTO_TCP, IPPROTO_UDP, IPPROTO_SCTP
    std::string proto_name;    // "tcp", "udp", "sctp"
    std::optional<net::IpAddr> host_ip;  // nullopt: any local address
    int host_family = 0;            // 4 or 6 when hostIP was given (0.0.0.0 and :: too), else 0
};

// What conditionsV4/V6 may say: the selectors of an iptables rule ([!] -s/-d/-i/-o) and the
// matches -m addrtype ([!] --src-type/--dst-type), -m iprange ([!] --src-range/--dst-range) and
// -m mark ([!] --mark V[/M]), appended after the entry rule's multiport match as the reference
// appends the tokens.
struct Conditions {
    std::optional<net::IpNet> src, dst;
    bool src_inverted = false, dst_inverted = false;
    std::string in_iface, out_iface;
    bool in_inverted = false, out_inverted = false;
    std::vector<fw::IptMatch> matches;
};

// What portmap sets up for one address of the container, in either driver.
struct HostPortSpec {
    std::string network, container_id;
    net::IpNet container;                 // the container's address with its prefix
    std::vector<PortMapping> mappings;  // of this address's family
    bool snat = true;
    bool masq_all = false;
    int mark_bit = 13;
    std::optional<std::string> external_setmark_chain;
    Conditions conditions;       // the iptables driver's
    fw::nft::Exprs nft_conditions;  // the nftables driver's
    bool localnet_guard = false;  // also set up the guard that must accompany route_localnet=1
};

const fw::Rules<HostPortSpec>& iptables_host_ports();  // host_ports_iptables.cpp
const fw::Rules<HostPortSpec>& nftables_host_ports();  // host_ports_nft.cpp

// portmap's rules in both drivers, offered once: ADD and CHECK use host_ports().choose(the
// backend key); DEL and GC go through every driver (teardown_all, gc_all). The iptables
// driver's CHECK passes when either iptables variant holds the rules (check_either_variant), its
// teardown and GC clean both variants and both families.
inline const fw::Drivers<HostPortSpec>& host_ports() {
    static const fw::Drivers<HostPortSpec> drivers{{fw::Driver::iptables, &iptables_host_ports()},
                                                   {fw::Driver::nftables, &nftables_host_ports()}};
    return drivers;
}

// conditionsV4 or conditionsV6 (`key`: the family addresses must have) in the iptables
// driver's syntax: the tokens "-s", "10.0.0.0/8", "!", "-i", "eth0", "-m", "addrtype", ...;
// anything else is refused with the token named (code 2 for what iptables has but this does
// not).
Result<Conditions> iptables_conditions(const std::vector<std::string>& tokens, std::string_view key);
// The same in the nftables driver's syntax, into matches: what the subset lacks is refused with
// code 2 and the token named.
Result<fw::nft::Exprs> nftables_conditions(const std::vector<std::string>& tokens, std::string_view key);

// The iptables DNAT entry rules' comment; past iptables' 255 bytes, its first 252 and "...".
// (The reference keeps 253 and "...", 256 bytes, which iptables refuses: its ADD fails there.)
std::string dnat_comment(std::string_view network, std::string_view container_id);

// The nftables driver's guard that must accompany route_localnet=1, alone (the tests add it
// from many processes at once).
Status nftables_localnet_guard();

}  // namespace cni::portmap
