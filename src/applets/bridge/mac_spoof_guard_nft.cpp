// SPDX-License-Identifier: Apache-2.0
// The anti-spoofing chains of bridge's macspoofchk in nf_tables (see mac_spoof_guard.hpp).
#include "applets/bridge/mac_spoof_guard.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "core/fw/nftables.hpp"
#include "core/net/mac.hpp"

namespace cni::bridge {
namespace {

namespace nft = fw::nft;

constexpr auto kFamily = nft::Family::bridge;
constexpr std::string_view kTable = "nat";
constexpr std::string_view kPrerouting = "PREROUTING";
constexpr std::uint32_t kBrPreRouting = 0;  // NF_BR_PRE_ROUTING
constexpr std::int32_t kPriority = -300;

struct Names {
    std::string iface_chain, mac_chain, comment;
};

Names names_for(std::string_view container_id, std::string_view ifname) {
    std::string id = std::string(container_id) + "-" + std::string(ifname);
    return {"cni-br-iface-" + id, "cni-br-iface-" + id + "-mac", "macspoofchk-" + id};
}

Status teardown(std::string_view container_id, std::string_view ifname) {
    if (!nft::available()) return {};
    Names n = names_for(container_id, ifname);
    CNI_TRY_ASSIGN(auto rules, nft::list_rules(kFamily, kTable));
    CNI_TRY_ASSIGN(auto chains, nft::list_chains(kFamily, kTable));
    nft::Batch tx;
    for (auto& r : rules)
        if (r.chain == kPrerouting && r.comment == n.comment) tx.delete_rule(kFamily, kTable, r.chain, r.handle);
    std::vector<std::string> ours;  // flushed first, so that neither is still jumped to when deleted
    for (auto* chain : {&n.iface_chain, &n.mac_chain})
        if (std::find(chains.begin(), chains.end(), *chain) != chains.end()) ours.push_back(*chain);
    for (auto& chain : ours) tx.flush_chain(kFamily, kTable, chain);
    for (auto& chain : ours) tx.delete_chain(kFamily, kTable, chain);
    return tx.commit("macspoofchk: removing the anti-spoofing rules");
}

Status setup(std::string_view container_id, std::string_view ifname, std::string_view host_veth, std::string_view mac) {
    auto bytes = net::mac_bytes(mac);
    if (!bytes) return fail("macspoofchk: invalid container MAC " + std::string(mac));
    CNI_TRY(teardown(container_id, ifname));  // a retried ADD starts afresh
    Names n = names_for(container_id, ifname);
    nft::Batch tx;
    tx.add_table(kFamily, kTable, {});
    tx.add_chain(kFamily, kTable, kPrerouting, nft::Hook{kBrPreRouting, kPriority, "filter"});
    tx.add_chain(kFamily, kTable, n.iface_chain);
    tx.add_chain(kFamily, kTable, n.mac_chain);
    nft::Exprs own = nft::match_ether_source(*bytes);
    nft::append(own, nft::verdict_return());
    tx.add_rule(kFamily, kTable, n.mac_chain, own, n.comment);
    tx.add_rule(kFamily, kTable, n.mac_chain, nft::verdict_drop(), n.comment);
    tx.add_rule(kFamily, kTable, n.iface_chain, nft::verdict_jump(n.mac_chain), n.comment);
    nft::Exprs entry = nft::match_iface(true, host_veth);
    nft::append(entry, nft::verdict_jump(n.iface_chain));
    tx.add_rule(kFamily, kTable, kPrerouting, entry, n.comment);
    return tx.commit("macspoofchk: setting up the anti-spoofing rules");
}

Status check(std::string_view container_id, std::string_view ifname) {
    Names n = names_for(container_id, ifname);
    CNI_TRY_ASSIGN(auto rules, nft::list_rules(kFamily, kTable));
    for (auto chain : {std::string_view(kPrerouting), std::string_view(n.iface_chain), std::string_view(n.mac_chain)})
        if (std::none_of(rules.begin(), rules.end(), [&](auto& r) { return r.chain == chain && r.comment == n.comment; }))
            return fail("macspoofchk: the rules of chain " + std::string(chain) + " are missing");
    return {};
}

// The guard in nf_tables, the one driver the reference writes it with.
class NftablesSpoofGuard final : public fw::Rules<SpoofGuard> {
public:
    Status setup(const SpoofGuard& g, Rollback& undo) const override {
        undo.push([this, g] { (void)teardown(g); });
        return bridge::setup(g.container_id, g.ifname, g.host_veth, g.mac);
    }
    Status check(const SpoofGuard& g) const override { return bridge::check(g.container_id, g.ifname); }
    Status teardown(const SpoofGuard& g) const override { return bridge::teardown(g.container_id, g.ifname); }
};

}  // namespace

const fw::Rules<SpoofGuard>& nftables_mac_spoof_guard() {
    static const NftablesSpoofGuard rules;
    return rules;
}

}  // namespace cni::bridge
