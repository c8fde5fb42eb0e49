// SPDX-License-Identifier: Apache-2.0
// The node's SNAT and outbound connmark in native nftables (see snat.hpp), for a node whose chosen
// driver is nftables: the table `ip cni_vpc_eni`, the same decisions as the iptables chains.
// postrouting (nat, srcnat): return for each VPC CIDR, then `fib daddr type != local snat to
// <primary> fully-random`. prerouting (filter, mangle priority): a pod veth's new connection
// jumps to outbound (return for each VPC CIDR, then `ct mark set ct mark | 0x80`), then a packet
// of a marked connection gets `meta mark set meta mark | 0x80`; with node-port support, before
// them, a connection arriving on the primary interface for one of its local addresses gets
// `ct mark set ct mark | 0x80` (`fib daddr . iif type local`, iptables' --limit-iface-in). Every rule carries a comment that
// CHECK looks for; setup rewrites the chains in one transaction, teardown deletes the table.
#include <netinet/in.h>  // before the kernel headers, which then defer to it
#include <linux/netfilter.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_tables.h>

#include <algorithm>

#include "applets/vpc_eni/snat.hpp"
#include "core/fw/nftables.hpp"

namespace cni::vpc_eni {
namespace {

namespace nft = fw::nft;

constexpr auto kFamily = nft::Family::ip;
constexpr std::string_view kTable = "cni_vpc_eni";

struct NftRule {
    std::string_view chain;
    nft::Exprs exprs;
    std::string comment;
};

std::vector<NftRule> vpc_returns(const SnatSpec& s, std::string_view chain, std::string_view what) {
    std::vector<NftRule> out;
    for (auto& cidr : s.vpc_cidrs)
        out.push_back({chain, [&] {
                           auto e = nft::match_address(kFamily, false, cidr.masked());
                           nft::append(e, nft::verdict_return());
                           return e;
                       }(),
                       std::string(what) + ": to the VPC CIDR " + cidr.masked().str()});
    return out;
}

std::vector<NftRule> rules(const SnatSpec& s) {
    std::vector<NftRule> out = vpc_returns(s, "postrouting", "SNAT");
    nft::Exprs snat = nft::match_local_destination(true);
    nft::append(snat, nft::snat_to(s.primary_ip, true));
    out.push_back({"postrouting", std::move(snat), "SNAT: beyond the VPC, to " + s.primary_ip.str()});
    for (auto& r : vpc_returns(s, "outbound", "CONNMARK")) out.push_back(std::move(r));
    out.push_back({"outbound", nft::set_ct_mark_bits(kOutboundMark), "CONNMARK: beyond the VPC"});
    if (s.node_port) {
        nft::Exprs primary = nft::match_iface(true, s.primary_interface);
        nft::append(primary, nft::match_local_destination(false, true));
        nft::append(primary, nft::set_ct_mark_bits(kOutboundMark));
        out.push_back({"prerouting", std::move(primary), "CONNMARK: to a local address through the primary ENI"});
    }
    const std::string pods = s.veth_prefix + "*";
    nft::Exprs jump = nft::match_iface(true, pods);
    nft::append(jump, nft::match_ct_any_of(NFT_CT_STATE, NF_CT_STATE_BIT(IP_CT_NEW)));
    nft::append(jump, nft::verdict_jump("outbound"));
    out.push_back({"prerouting", std::move(jump), "CONNMARK: a pod's new connection"});
    nft::Exprs restore = nft::match_iface(true, pods);
    nft::append(restore, nft::match_ct_mark_has(kOutboundMark));
    nft::append(restore, nft::set_meta_mark_bits(kOutboundMark));
    out.push_back({"prerouting", std::move(restore), "CONNMARK: restored onto a pod's packet"});
    return out;
}

class NftablesSnat final : public fw::Rules<SnatSpec> {
public:
    Status setup(const SnatSpec& s, Rollback& undo) const override {
        undo.push([this, s] { (void)teardown(s); });
        return nft::transact("nftables: setting up vpc-eni's SNAT", [&](nft::Batch& tx) -> Status {
            tx.add_table(kFamily, kTable, "cni-all vpc-eni: SNAT and outbound connmark");
            tx.add_chain(kFamily, kTable, "postrouting", nft::Hook{NF_INET_POST_ROUTING, 100, "nat"});
            tx.add_chain(kFamily, kTable, "prerouting", nft::Hook{NF_INET_PRE_ROUTING, -150, "filter"});
            tx.add_chain(kFamily, kTable, "outbound");
            for (auto chain : {"postrouting", "prerouting", "outbound"}) tx.flush_chain(kFamily, kTable, chain);
            for (auto& r : rules(s)) tx.add_rule(kFamily, kTable, r.chain, r.exprs, r.comment);
            return {};
        });
    }
    Status check(const SnatSpec& s) const override {
        CNI_TRY_ASSIGN(auto listed, nft::list_rules(kFamily, kTable));
        for (auto& want : rules(s))
            if (std::ranges::none_of(listed, [&](const nft::ListedRule& r) { return r.chain == want.chain && r.comment == want.comment; }))
                return fail("vpc-eni: the nftables rule \"" + want.comment + "\" is missing from " + std::string(kTable) + "/" +
                            std::string(want.chain));
        return {};
    }
    Status teardown(const SnatSpec&) const override {
        CNI_TRY_ASSIGN(bool there, nft::has_table(kFamily, kTable));
        if (!there) return {};
        return nft::transact("nftables: removing vpc-eni's SNAT", [&](nft::Batch& tx) -> Status {
            tx.delete_table(kFamily, kTable);
            return {};
        });
    }
};

}  // namespace

const fw::Rules<SnatSpec>& nftables_snat() {
    static const NftablesSnat rules;
    return rules;
}

}  // namespace cni::vpc_eni
