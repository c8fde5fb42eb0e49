// SPDX-License-Identifier: Apache-2.0
// portmap's nftables backend (docs/compatibility.md: portmap), object for object as the reference's
// v1.9: table `ip|ip6 cni_hostport` ("CNI portmap plugin") with the regular chains `hostports`,
// `hostip_hostports` (kept empty, for upgrades) and `hostports_all` (jumps to both), the base
// chains `prerouting` and `output` (nat, dstnat) each holding `[conditions] fib daddr type
// local jump hostports_all`, and with snat `masquerading` (nat, srcnat). Per mapping in
// `hostports`: `[ip daddr HOSTIP] tcp dport H dnat to IP:P`; with snat, `ip saddr IP|0.0.0.0/0
// ip daddr IP masquerade` (and from 127.0.0.1 for IPv4 unless masqAll). Every rule of an
// attachment is commented with its container ID, which is how CHECK counts them and DEL (both
// families) removes them, the reference's as well as ours. Beyond the reference: an ADD first
// removes the attachment's earlier rules (a retried ADD does not duplicate them), and where
// route_localnet is turned on, the guard drops what reaches 127/8 from elsewhere undnat'ed
// (kube-proxy's rule, in this table's `localnet_guard` input chain). Conditions are the nft
// syntax subset `ip|ip6 saddr|daddr [!=] ADDR[/LEN]` and `iifname|oifname [!=] NAME[*]`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "applets/portmap/rules_iptables.hpp"
#include "core/fw/nftables.hpp"

namespace cni::portmap::nft_rules {

// Parses nft-syntax condition tokens of `key` (conditionsV4 or conditionsV6) into matches;
// what the subset lacks is refused with code 2 and the token named.
Result<fw::nft::Exprs> parse_conditions(const std::vector<std::string>& tokens, std::string_view key);

Status setup(const HostPortSpec& spec, const fw::nft::Exprs& conditions);
Status check(const HostPortSpec& spec);
Status teardown(std::string_view container_id);  // both families; nothing there is fine
Status ensure_localnet_guard();

const fw::Rules<HostPortSpec>& rules();

}  // namespace cni::portmap::nft_rules
