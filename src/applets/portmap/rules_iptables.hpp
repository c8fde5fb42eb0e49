// SPDX-License-Identifier: Apache-2.0
// Host port forwarding for portmap (docs/compatibility.md: portmap), iptables backend, with the
// reference's chains and rules bit for bit: the shared nat chains CNI-HOSTPORT-SETMARK
// (marks what must be masqueraded), CNI-HOSTPORT-MASQ (masquerades it; jumped to first in
// POSTROUTING) and CNI-HOSTPORT-DNAT (jumped to from PREROUTING and OUTPUT only for traffic
// addressed to a local address), and one CNI-DN-<hash(network+containerID)> chain per
// attachment with the hairpin/localhost mark rules and the DNATs, entered from
// CNI-HOSTPORT-DNAT by multiport rules commented `dnat name: "<net>" id: "<cid>"`. Everything
// of one call goes into one commit per table under the xtables lock. Beyond the reference: when
// route_localnet is turned on for localhost access, a guard rule (as kube-proxy's) drops
// traffic to 127/8 that arrives from elsewhere and was not DNAT'ed; GC removes the chains of
// attachments that are gone.
#pragma once

#include <optional>
#include <string>
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

// portmap's rules in its two drivers (rules_iptables.cpp, rules_nft.cpp), through the one
// firewall interface (core/fw/driver.hpp). Teardown reads only the network and container ID;
// the nftables driver has no GC (its rules carry only the container ID, not the network, so
// whose they are cannot be told; the reference has none either).
const fw::Drivers<HostPortSpec>& host_ports();

// The iptables driver's chains and rules.
namespace iptables_rules {

// Parses iptables tokens ("-s", "10.0.0.0/8", "!", "-i", "eth0", "-m", "addrtype", ...) for
// `key` (conditionsV4 or conditionsV6: the family addresses must have); anything else is
// refused with the token named (code 2 for what iptables has but this does not). nft-syntax
// conditions go to the nftables backend (rules_nft.hpp).
Result<Conditions> parse_conditions(const std::vector<std::string>& tokens, std::string_view key);

Status setup(const HostPortSpec& spec);
// The guard that must accompany route_localnet=1 (inserted once at the top of filter INPUT).
Status ensure_localnet_guard();
// Removes the attachment's chain and its entry rules (and the legacy CNI-SN chain) in both
// families and both iptables variants; fine when nothing is there.
Status teardown(std::string_view network, std::string_view container_id);
// Passes when either iptables variant holds the rules (check_either_variant).
Status check(const HostPortSpec& spec);
// Removes this network's chains of attachments whose container IDs are not in `keep`, in both
// iptables variants.
Status gc(std::string_view network, const std::vector<std::string>& keep);

// The DNAT entry rules' comment; past iptables' 255 bytes, its first 252 and "...". (The
// reference keeps 253 and "...", 256 bytes, which iptables refuses: its ADD fails there.)
std::string dnat_comment(std::string_view network, std::string_view container_id);

const fw::Rules<HostPortSpec>& rules();

}  // namespace iptables_rules
}  // namespace cni::portmap
