// SPDX-License-Identifier: Apache-2.0
// Removal of the Go plugins' iptables-nft chains (see xtables_nft.hpp).
#include "core/fw/xtables_nft.hpp"

#include <algorithm>

#include "core/nl/nftables.hpp"

namespace cni::fw {

namespace nft = nl::nft;

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

}  // namespace cni::fw
