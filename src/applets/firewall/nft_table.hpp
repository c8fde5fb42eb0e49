// SPDX-License-Identifier: Apache-2.0
// The firewall applet's own nf_tables table, which its nftables drivers (forward_nft.cpp,
// isolation_nft.cpp) share (docs/compatibility.md: firewall): `inet cni_plugins_firewall` with
// the base chain `forward` (filter, forward hook, priority 0). The base chain is made with no
// policy: a new one accepts, and one whose policy the operator set keeps it. Chain names
// starting with "cni-" and `forward` are the plugin's; an admin chain may not take one of them.
#pragma once

#include <netinet/in.h>  // before the kernel headers, which then defer to it
#include <linux/netfilter.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "core/fw/nftables.hpp"

namespace cni::firewall {

inline constexpr auto kNftFamily = fw::nft::Family::inet;
inline constexpr std::string_view kNftTable = "cni_plugins_firewall";
inline constexpr std::string_view kNftBase = "forward";

// Adds the table, its base chain and `chains`, each where it is missing. A chain added again is an
// update, whose release the kernel defers to an RCU grace period that the call's next close of a
// netfilter socket then waits for (about 10 ms): what is there is left alone.
inline Status declare_nft_chains(fw::nft::Batch& tx, std::initializer_list<std::string_view> chains) {
    CNI_TRY_ASSIGN(auto base, fw::nft::chain_info(kNftFamily, kNftTable, kNftBase));
    if (!base) {
        tx.add_table(kNftFamily, kNftTable, "CNI firewall plugin");
        tx.add_chain(kNftFamily, kNftTable, kNftBase, fw::nft::Hook{NF_INET_FORWARD, 0, "filter"});
    }
    for (auto chain : chains) {
        CNI_TRY_ASSIGN(auto info, fw::nft::chain_info(kNftFamily, kNftTable, chain));
        if (!info) tx.add_chain(kNftFamily, kNftTable, chain);
    }
    return {};
}

// Every rule of one chain of the table (none when it is missing): for the short chains only,
// never cni-forward, which holds every attachment's rules.
inline Result<std::vector<fw::nft::ListedRule>> nft_chain_rules(std::string_view chain) {
    std::vector<fw::nft::ListedRule> out;
    CNI_TRY(fw::nft::for_each_rule(
        kNftFamily, kNftTable, chain, [&](fw::nft::ListedRule&& r) { out.push_back(std::move(r)); }, [&] { out.clear(); }));
    return out;
}

inline bool nft_chain_is_the_plugins(std::string_view chain) { return chain == kNftBase || chain.starts_with("cni-"); }

}  // namespace cni::firewall
