// SPDX-License-Identifier: Apache-2.0
// The Go plugins' iptables-nft rules: removal, and reading them for CHECK (see xtables_nft.hpp).
#include "core/fw/xtables_nft.hpp"

#include <algorithm>

namespace cni::fw {
namespace {

namespace nft = nl::nft;

nft::Family nft_family(Family f) { return f == Family::v4 ? nft::Family::ip : nft::Family::ip6; }

// A dumped rule as iptables-nft would print it, as far as the dump decodes (see
// XtNftTable::rules).
IptRule as_iptables(const nft::ListedRule& r) {
    IptRule out;
    for (auto& a : r.addresses) {
        (a.source ? out.src : out.dst) = a.net;
        (a.source ? out.src_inverted : out.dst_inverted) = a.negated;
    }
    out.proto = r.l4proto;
    if (r.dport) out.matches.push_back(DstPort{r.dport});
    out.comment = r.comment;
    out.target = r.target;
    return out;
}

// Whether `want` and a rule read back from a dump agree in what the dump shows. iptables-nft
// leaves out an address match of prefix 0, as iptables does.
bool same_in_dump(const IptRule& dumped, const IptRule& want) {
    auto address = [](const std::optional<IpNet>& net, bool inverted) {
        return net && net->prefix > 0 ? std::optional{std::pair{*net, inverted}} : std::nullopt;
    };
    std::uint16_t dport = 0, want_dport = 0;
    for (auto& m : dumped.matches)
        if (auto* p = std::get_if<DstPort>(&m)) dport = p->port;
    for (auto& m : want.matches)
        if (auto* p = std::get_if<DstPort>(&m)) want_dport = p->port;
    return dumped.target == want.target && dumped.comment == want.comment && dumped.proto == want.proto && dport == want_dport &&
           address(dumped.src, dumped.src_inverted) == address(want.src, want.src_inverted) &&
           address(dumped.dst, dumped.dst_inverted) == address(want.dst, want.dst_inverted);
}

}  // namespace

Status remove_xtables_nft_chains(const std::vector<std::string>& chains) {
    if (!nft::available()) return {};
    constexpr std::string_view kTable = "nat";  // iptables-nft's name for the nat table
    for (nft::Family family : {nft::Family::ip, nft::Family::ip6}) {
        std::vector<std::string> present;
        for (const auto& chain : chains) {
            CNI_TRY_ASSIGN(bool has, nft::has_chain(family, kTable, chain));
            if (has) present.push_back(chain);
        }
        if (present.empty()) continue;
        auto doomed = [&](const std::string& chain) { return std::ranges::find(present, chain) != present.end(); };
        CNI_TRY_ASSIGN(auto rules, nft::list_rules(family, kTable));
        nft::Batch batch;
        for (const auto& r : rules)
            if (doomed(r.jumps_to) && !doomed(r.chain)) batch.delete_rule(family, kTable, r.chain, r.handle);
        for (const auto& chain : present) {
            batch.flush_chain(family, kTable, chain);
            batch.delete_chain(family, kTable, chain);
        }
        CNI_TRY(batch.commit("removing the iptables-nft chains of the Go plugins"));
    }
    return {};
}

Status remove_xtables_nft_rules(Family family, const std::string& table, const std::string& chain,
                                const std::vector<IptRule>& rules) {
    if (!nft::available()) return {};
    CNI_TRY_ASSIGN(auto listed, nft::list_rules(nft_family(family), table));
    nft::Batch batch;
    for (const auto& r : listed)
        if (r.chain == chain && std::ranges::any_of(rules, [&](const IptRule& want) { return same_in_dump(as_iptables(r), want); }))
            batch.delete_rule(nft_family(family), table, chain, r.handle);
    if (batch.empty()) return {};
    return batch.commit("removing the iptables-nft rules of the Go plugins");
}

Result<XtNftTable> XtNftTable::open(Family family, const std::string& table) {
    XtNftTable t;
    if (!nft::available()) return t;
    CNI_TRY_ASSIGN(t.chains_, nft::list_chains(nft_family(family), table));
    CNI_TRY_ASSIGN(t.rules_, nft::list_rules(nft_family(family), table));
    return t;
}

bool XtNftTable::has_chain(const std::string& chain) const { return std::ranges::find(chains_, chain) != chains_.end(); }

std::vector<std::string> XtNftTable::chains() const { return chains_; }

Result<std::vector<IptTable::Listed>> XtNftTable::rules(const std::string& chain) const {
    std::vector<IptTable::Listed> out;
    for (auto& r : rules_)
        if (r.chain == chain) out.push_back({as_iptables(r), true});
    return out;
}

Result<bool> XtNftTable::has_rule(const std::string& chain, const IptRule& want) const {
    return std::ranges::any_of(rules_, [&](const nft::ListedRule& r) { return r.chain == chain && same_in_dump(as_iptables(r), want); });
}

}  // namespace cni::fw
