// SPDX-License-Identifier: Apache-2.0
// ipMasq for bridge and ptp (docs/compatibility.md: ipMasq), iptables backend: a nat chain
// CNI-<hash(network+containerID)> holding "-d <net> -j ACCEPT" and "! -d <multicast> -j
// MASQUERADE", and a POSTROUTING jump "-s <ip> -j CNI-..."; every rule commented
// `name: "<net>" id: "<id>"`. One lock, one commit per family per call. Teardown works from the
// chain name alone (both families, also the legacy "-s ip/prefix" jump), so a DEL whose link
// or addresses are already gone still removes the rules (the reference leaks them then). The
// nftables backend is in ipmasq_nft.
#pragma once

#include <string_view>
#include <vector>

#include "core/fw/driver.hpp"
#include "core/fw/ipmasq_nft.hpp"
#include "core/net/ip.hpp"
#include "core/result.hpp"

namespace cni::fw {

// "", "iptables" or "nftables"; anything else is the reference's "unknown ipmasq backend".
Status validate_ipmasq_backend(std::string_view backend);
// The driver an ADD or CHECK uses (choose_driver, with iptables and nftables).
Driver ipmasq_driver(std::string_view configured);

Status setup_ipmasq(Driver driver, const std::vector<IpNet>& ips, const MasqOwner& owner);
// iptables: the rules in either iptables variant (check_either_variant).
Status check_ipmasq(Driver driver, const std::vector<IpNet>& ips, const MasqOwner& owner);
// Both backends, as the reference's DEL: what either one holds for the attachment goes.
Status teardown_ipmasq(const MasqOwner& owner);

// GC, both backends: tears down the ipMasq rules of `network` whose attachment is not in `keep`
// (found through the iptables chains' comments in both variants, and the nft rules'
// hashes, so rules written by the reference count too).
Status gc_ipmasq(std::string_view network, const std::vector<Attachment>& keep);

}  // namespace cni::fw
