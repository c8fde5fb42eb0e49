// SPDX-License-Identifier: Apache-2.0
// ipMasq's nftables driver (see ipmasq.hpp).
#include "core/fw/ipmasq.hpp"

#include <netinet/in.h>  // before the kernel headers, which then defer to it
#include <linux/netfilter.h>

#include <algorithm>

#include "core/fw/names.hpp"
#include "core/fw/nftables.hpp"
#include "core/fw/sha512.hpp"

namespace cni::fw {
namespace {

namespace nft = fw::nft;

constexpr auto kFamily = nft::Family::inet;
constexpr std::string_view kTable = "cni_plugins_masquerade";
constexpr std::string_view kChain = "masq_checks";
constexpr std::string_view kPostrouting = "postrouting";
constexpr std::int32_t kSrcNatPriority = 100;

// The comment's leading hash pair: the attachment's rules, whatever its names' cut.
std::string instance_hash(const Masquerade& o) {
    return nft_attachment_comment(o.network, o.container_id, o.ifname).substr(0, kNftAttachmentTagLength);
}

// The rules of masq_checks whose comment starts with `prefix`.
Result<std::vector<nft::ListedRule>> rules_with(std::string_view prefix) {
    CNI_TRY_ASSIGN(auto all, nft::list_rules(kFamily, kTable));
    std::vector<nft::ListedRule> mine;
    for (auto& r : all)
        if (r.chain == kChain && r.comment.starts_with(prefix)) mine.push_back(std::move(r));
    return mine;
}

nft::Exprs masquerade_rule(const net::IpNet& ip) {
    nft::Exprs e = nft::match_address(kFamily, true, net::IpNet{ip.ip, ip.ip.bits(), ip.ip.bits()});
    nft::append(e, nft::match_address(kFamily, false, ip.masked(), true));
    nft::append(e, nft::masquerade());
    return e;
}

}  // namespace

std::string nft_masq_comment(const Masquerade& o) { return nft_attachment_comment(o.network, o.container_id, o.ifname); }

namespace {

Status nft_setup(const std::vector<net::IpNet>& ips, const Masquerade& owner) {
    return nft::transact("ipMasq (nftables)", [&](nft::Batch& tx) -> Status {
        CNI_TRY_ASSIGN(auto stale, rules_with(instance_hash(owner)));
        tx.add_table(kFamily, kTable, "Masquerading for plugins from github.com/containernetworking/plugins");
        tx.add_chain(kFamily, kTable, kChain, {}, "Masquerade traffic from certain IPs to any (non-multicast) IP outside their subnet");
        tx.add_chain(kFamily, kTable, kPostrouting, nft::Hook{NF_INET_POST_ROUTING, kSrcNatPriority});
        tx.flush_chain(kFamily, kTable, kPostrouting);
        for (const char* multicast : {"224.0.0.0/4", "ff00::/8"}) {
            nft::Exprs e = nft::match_address(kFamily, false, *net::IpNet::parse(multicast));
            nft::append(e, nft::verdict_return());
            tx.add_rule(kFamily, kTable, kPostrouting, e, {});
        }
        tx.add_rule(kFamily, kTable, kPostrouting, nft::verdict_goto(kChain), {});
        for (auto& r : stale) tx.delete_rule(kFamily, kTable, kChain, r.handle);
        std::string comment = nft_masq_comment(owner);
        for (auto& ip : ips) tx.add_rule(kFamily, kTable, kChain, masquerade_rule(ip), comment);
        return {};
    });
}

Status nft_teardown(const Masquerade& owner) {
    if (!nft::available()) return {};
    return nft::transact("ipMasq (nftables) teardown", [&](nft::Batch& tx) -> Status {
        CNI_TRY_ASSIGN(auto rules, rules_with(instance_hash(owner)));
        for (auto& r : rules) tx.delete_rule(kFamily, kTable, kChain, r.handle);
        return {};
    });
}

Status nft_check(const std::vector<net::IpNet>& ips, const Masquerade& owner) {
    CNI_TRY_ASSIGN(auto rules, rules_with(nft_masq_comment(owner)));
    std::size_t exact = std::count_if(rules.begin(), rules.end(), [&](auto& r) { return r.comment == nft_masq_comment(owner); });
    if (exact < ips.size())
        return fail("ipMasq (nftables): masq_checks has " + std::to_string(exact) + " rules for this attachment, expected " +
                    std::to_string(ips.size()));
    return {};
}

Status nft_gc(std::string_view network, const std::vector<net::Attachment>& keep) {
    if (!nft::available()) return {};
    std::vector<std::string> valid;
    for (auto& a : keep) valid.push_back(nft_masq_comment(Masquerade{std::string(network), a.container_id, a.ifname, {}}));
    return nft::transact("ipMasq (nftables) GC", [&](nft::Batch& tx) -> Status {
        CNI_TRY_ASSIGN(auto rules, rules_with(nft_network_tag(network)));
        for (auto& r : rules)
            if (std::find(valid.begin(), valid.end(), r.comment) == valid.end()) tx.delete_rule(kFamily, kTable, kChain, r.handle);
        return {};
    });
}

class NftablesMasquerade final : public Rules<Masquerade> {
public:
    Status setup(const Masquerade& m, Rollback& undo) const override {
        undo.push([this, m] { (void)teardown(m); });
        return nft_setup(m.ips, m);
    }
    Status check(const Masquerade& m) const override { return nft_check(m.ips, m); }
    Status teardown(const Masquerade& m) const override { return nft_teardown(m); }
    Status gc(std::string_view network, const std::vector<net::Attachment>& keep) const override { return nft_gc(network, keep); }
};

}  // namespace

const Rules<Masquerade>& nftables_masquerade() {
    static const NftablesMasquerade rules;
    return rules;
}

}  // namespace cni::fw
