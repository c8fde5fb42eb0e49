// SPDX-License-Identifier: Apache-2.0
// What the Go plugins leave in nf_tables where the node's `iptables` is the nft variant
// (iptables-nft, Debian 12's default): their per-attachment chains (portmap's CNI-DN-/CNI-SN-,
// ipMasq's CNI-) in the `ip nat` and `ip6 nat` tables iptables-nft keeps, and the rules that
// jump to them. Our iptables backend writes the legacy tables through libiptc, so without this
// a cni-all DEL of an attachment the Go plugins made on such a node would leave their DNAT and
// masquerade rules behind. The chains are found by name (both implementations derive the same
// hashed names) and removed with the rules referring to them, one transaction per family.
// Nothing happens where nf_tables is missing or holds none of them.
#pragma once

#include <string>
#include <vector>

#include "core/result.hpp"

namespace cni::fw {

Status remove_xtables_nft_chains(const std::vector<std::string>& chains);

}  // namespace cni::fw
