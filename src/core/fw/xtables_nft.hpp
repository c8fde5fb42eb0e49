// SPDX-License-Identifier: Apache-2.0
// What the Go plugins leave in nf_tables where the node's `iptables` is the nft variant
// (iptables-nft, Debian 12's default): their ipMasq, portmap and firewall rules in the `ip` and
// `ip6` tables `nat` and `filter` that iptables-nft keeps. Our iptables backend writes the legacy
// tables through libiptc, so a node switched from the Go plugins with pods running holds their
// rules here. A DEL removes them: the per-attachment chains (portmap's CNI-DN-/CNI-SN-, ipMasq's
// CNI-) by name, with the rules jumping to them, one transaction per family; rules in a shared
// chain by what they match. A CHECK finds them: XtNftTable answers what IptTable answers for a
// check, and check_legacy_or_xtables_nft runs a check against both. GC reads their comments.
// Nothing happens where nf_tables is missing or holds none of them.
#pragma once

#include <string>
#include <vector>

#include "core/fw/iptables.hpp"
#include "core/nl/nftables.hpp"
#include "core/result.hpp"

namespace cni::fw {

Status remove_xtables_nft_chains(const std::vector<std::string>& chains);

// Deletes the rules of `chain` in iptables-nft's `table` of `family` that are one of `rules`
// (compared as XtNftTable::has_rule compares).
Status remove_xtables_nft_rules(Family family, const std::string& table, const std::string& chain,
                                const std::vector<IptRule>& rules);

// One iptables-nft table of one family as a dump shows it; empty when nf_tables or the table
// is missing.
class XtNftTable {
public:
    static Result<XtNftTable> open(Family family, const std::string& table);
    bool has_chain(const std::string& chain) const;
    std::vector<std::string> chains() const;  // the base chains too
    // The chain's rules as far as a dump reads them back: addresses, protocol, destination port,
    // comment and target; all `foreign`, as the rest is not read.
    Result<std::vector<IptTable::Listed>> rules(const std::string& chain) const;
    // Whether the chain holds a rule that is `want` as far as a dump reads back: target, comment,
    // addresses, protocol and destination port (interfaces, other matches and target options are
    // not compared).
    Result<bool> has_rule(const std::string& chain, const IptRule& want) const;

private:
    std::vector<std::string> chains_;
    std::vector<nl::nft::ListedRule> rules_;
};

// Runs a CHECK of what the iptables backend writes, `check(open)` where `open(family, table)`
// gives a table answering has_chain and has_rule: against the legacy tables, and when it fails
// there, against iptables-nft's. It passes when either holds the rules; otherwise the legacy
// failure is the answer.
template <class Check>
Status check_legacy_or_xtables_nft(Check&& check) {
    auto legacy = check([](Family f, const std::string& table) { return IptTable::open(f, table); });
    if (legacy || !nl::nft::available()) return legacy;
    if (check([](Family f, const std::string& table) { return XtNftTable::open(f, table); })) return {};
    return legacy;
}

}  // namespace cni::fw
