// SPDX-License-Identifier: Apache-2.0
// ipMasq for bridge and ptp (reference-behaviour 2.0b), iptables backend: a nat chain
// CNI-<hash(network+containerID)> holding "-d <net> -j ACCEPT" and "! -d <multicast> -j
// MASQUERADE", and a POSTROUTING jump "-s <ip> -j CNI-..."; every rule commented
// `name: "<net>" id: "<id>"`. One lock, one commit per family per call. Teardown works from the
// chain name alone (both families, also the legacy "-s ip/prefix" jump), so a DEL whose link
// or addresses are already gone still removes the rules (the reference leaks them then).
#pragma once

#include <string_view>
#include <vector>

#include "core/cni/ip.hpp"
#include "core/result.hpp"

namespace cni::fw {

// "" or "iptables" are served; "nftables" is refused with code 2 until that backend exists.
Status validate_ipmasq_backend(std::string_view backend);

Status setup_ipmasq(const std::vector<IpNet>& ips, std::string_view network, std::string_view container_id);
Status teardown_ipmasq(std::string_view network, std::string_view container_id);
Status check_ipmasq(const std::vector<IpNet>& ips, std::string_view network, std::string_view container_id);

// GC: tears down the ipMasq rules of `network` whose container is not in `keep` (found through
// the chains' comments, so chains written by the reference count too).
Status gc_ipmasq(std::string_view network, const std::vector<std::string>& keep);

}  // namespace cni::fw
