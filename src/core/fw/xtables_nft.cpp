// SPDX-License-Identifier: Apache-2.0
// The Go plugins' iptables-nft rules: removal, and reading them for CHECK (see xtables_nft.hpp).
#include "core/fw/xtables_nft.hpp"

#include <algorithm>

namespace cni::fw {
namespace {

namespace nft = nl::nft;

nft::Family nft_family(Family f) { return f == Family::v4 ? nft::Family::ip : nft::Family::ip6; }

// Whether a dumped rule is `want` as far as the dump reads back (see XtNftTable::has_rule).
// iptables-nft leaves out an address match of prefix 0, as iptables does.
bool listed_as(const nft::ListedRule& r, const IptRule& want) {
    std::vector<nft::AddressMatch> addresses;
    if (want.src && want.src->prefix > 0) addresses.push_back({true, *want.src, want.src_inverted});
    if (want.dst && want.dst->prefix > 0) addresses.push_back({false, *want.dst, want.dst_inverted});
    std::uint16_t dport = 0;
    for (auto& m : want.matches)
        if (auto* p = std::get_if<DstPort>(&m)) dport = p->port;
    return r.target == want.target && r.comment == want.comment && r.l4proto == want.proto && r.dport == dport &&
           std::ranges::is_permutation(r.addresses, addresses);
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
        if (r.chain == chain && std::ranges::any_of(rules, [&](const IptRule& want) { return listed_as(r, want); }))
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

Result<bool> XtNftTable::has_rule(const std::string& chain, const IptRule& want) const {
    return std::ranges::any_of(rules_, [&](const nft::ListedRule& r) { return r.chain == chain && listed_as(r, want); });
}

}  // namespace cni::fw
