// SPDX-License-Identifier: Apache-2.0
// Reading back what a dumped nf_tables rule does, for ListedRule (nftables.hpp): its jump or goto
// chain, its verdict or xtables target, the address, protocol and destination-port comparisons
// iptables-nft and nft emit (a payload or meta load, an optional bitwise mask, a cmp; the port
// of an xtables tcp, udp or sctp match) and the comment iptables-nft keeps in its `comment`
// match. Only the shapes our CHECK, DEL and GC compare are decoded; anything else is skipped,
// never misread as one of them.
#pragma once

#include <netlink/attr.h>

#include "core/nl/nftables.hpp"

namespace cni::nl::nft::detail {

// Fills r's jumps_to, target, addresses, l4proto and dport (and comment, when a
// `comment` match holds it) from the rule's NFTA_RULE_EXPRESSIONS in a table of family `f`.
void decode_expressions(nlattr* expressions, Family f, ListedRule& r);

}  // namespace cni::nl::nft::detail
