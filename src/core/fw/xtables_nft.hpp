// SPDX-License-Identifier: Apache-2.0
// The nft variant of IptTable: iptables rules in nf_tables exactly as iptables-nft 1.8.9 writes
// them, for nodes whose `iptables` is iptables-nft (Debian 12's default), so the Go plugins and
// iptables-nft itself find, check and delete our rules, and we theirs. Its tables are `ip`/`ip6`
// `nat`, `filter` and `mangle`; a table and the built-in chains a rule goes into are made on demand, at
// iptables-nft's hooks and priorities. A rule's expressions go in iptables-nft's order:
// interface names (the name and its NUL, or the prefix of a "name+"), `meta l4proto`, source and
// destination (a payload load as long as the prefix's whole bytes, a mask only for a partial
// byte), the comment and other xtables matches (tcp/udp ports and marks as native comparisons,
// the rest as nft_compat matches with iptables' own payloads), a counter, then the verdict, jump
// or nft_compat target. Rules read back through the same layout (nftables_decode), and a rule
// holding anything else is `foreign`. The table is read lazily: a chain is looked up when first
// named and its rules dumped (that chain only) when first needed, so a call's cost does not grow
// with the node's other chains and rules; and a jump to a chain the table did not have is added
// without reading the chain it goes into (no rule can jump to an absent chain); the jumps to an
// attachment's chain are deleted without reading the chain holding them when its use count and
// the handles after it tell them apart (docs/compatibility.md). Changes go in one
// nf_tables transaction at commit, bound to the generation read before anything else, as
// iptables-nft binds its own.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/fw/iptables.hpp"
#include "core/result.hpp"

namespace cni::fw::detail {

// The table of `family` as iptables-nft keeps it; fails only where nf_tables does not answer.
Result<std::unique_ptr<IptTable::Impl>> open_xtables_nft(Family family, const std::string& table);

}  // namespace cni::fw::detail

namespace cni::fw {

// For a node set-up that must leave nf_tables as it found it (docs/vpc-eni.md): which of
// iptables-nft's table `table` (nat, filter or mangle) of `family` and of its built-in `chains`
// are not there now, named "nat" and "nat/POSTROUTING".
Result<std::vector<std::string>> absent_nft_parts(Family family, const std::string& table, std::span<const char* const> chains);
// Removes those of `parts` (named as absent_nft_parts names them; anything else is passed over)
// that hold nothing now: a built-in chain without a rule whose policy is accept (one set to drop
// since is another program's), then a table left with nothing in it.
// One transaction bound to what it read, so a rule or chain another program adds meanwhile keeps
// its chain and table.
Status remove_empty_nft_parts(Family family, std::span<const std::string> parts);

// Runs `check(variant)` against the node's variant and, when it fails there, against the other
// one (rules made before the node's `iptables` changed, or by the Go plugins under another
// PATH). It passes when either holds the rules; otherwise the node variant's failure is the
// answer.
template <class Check>
Status check_either_variant(Check&& check) {
    Variant first = node_variant();
    auto status = check(first);
    if (status || check(other(first))) return {};
    return status;
}

}  // namespace cni::fw
