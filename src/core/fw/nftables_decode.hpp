// SPDX-License-Identifier: Apache-2.0
// Reading back what a dumped nf_tables rule does, for ListedRule (nftables.hpp): its jump or goto
// chain, its verdict or xtables target, and the comparisons iptables-nft emits (a payload or
// meta load, an optional bitwise mask, a cmp) for addresses, protocol, interfaces, destination
// port and mark, its xtables matches in order, and the comment it keeps in a `comment` match.
// Anything else marks the rule `unknown`, never misread as one of them.
#pragma once

#include <netlink/attr.h>

#include "core/fw/nftables.hpp"

namespace cni::fw::nft::detail {

// Fills r's decoded fields (and comment, when a `comment` match holds it) from the rule's
// NFTA_RULE_EXPRESSIONS in a table of family `f`.
void decode_expressions(nlattr* expressions, Family f, ListedRule& r);

}  // namespace cni::fw::nft::detail
