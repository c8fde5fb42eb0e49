// SPDX-License-Identifier: Apache-2.0
// The firewall plugin's FORWARD accepts in native nftables (see forward.hpp), in the applet's own
// table (nft_table.hpp): `forward` jumps to `cni-forward`, which jumps first to the admin chain
// (iptablesAdminChainName, CNI-ADMIN unless named: the operator's, made when missing, never
// flushed) and then accepts, per container address, replies to it (`ct state
// established,related`) and everything from it, each rule commented with the attachment's
// identity (core/fw/names.hpp: nft_attachment_comment). One nfnetlink transaction per call of
// this driver (an ingressPolicy commits its isolation in one of its own, isolation_nft.cpp). The
// rules are appended without reading cni-forward and their handles recorded
// (handle_record.hpp, the "nft" record): an ADD run again, CHECK and DEL find them by
// the record, checked against the comment; without one they read the chain. GC removes the
// rules whose comment names the network but none of the attachments kept, and their records.
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_tables.h>

#include <algorithm>
#include <array>
#include <functional>

#include "applets/firewall/forward.hpp"
#include "applets/firewall/handle_record.hpp"
#include "applets/firewall/nft_table.hpp"
#include "core/fw/names.hpp"

namespace cni::firewall {
namespace {

namespace nft = fw::nft;

constexpr std::string_view kPrivate = "cni-forward";
constexpr std::string_view kJumpComment = "CNI firewall plugin rules";
constexpr std::string_view kAdminComment = "CNI firewall plugin admin overrides";

std::string comment_of(std::string_view network, const net::Attachment& a) {
    return fw::nft_attachment_comment(network, a.container_id, a.ifname);
}

// The addresses, IPv4 first: the order the accepts are added in, and the record's.
std::vector<net::IpAddr> in_record_order(const std::vector<net::IpAddr>& ips) {
    std::vector<net::IpAddr> out = ips;
    std::stable_partition(out.begin(), out.end(), [](const net::IpAddr& ip) { return ip.is_v4(); });
    return out;
}

// The two rules of one container address: replies to it, everything from it.
std::array<nft::Exprs, 2> address_rules(const net::IpAddr& ip) {
    net::IpNet host{ip, ip.bits(), ip.bits()};
    nft::Exprs replies = nft::match_address(kNftFamily, false, host);
    nft::append(replies, nft::match_ct_any_of(NFT_CT_STATE, NF_CT_STATE_BIT(IP_CT_ESTABLISHED) | NF_CT_STATE_BIT(IP_CT_RELATED)));
    nft::append(replies, nft::verdict_accept());
    nft::Exprs from = nft::match_address(kNftFamily, true, host);
    nft::append(from, nft::verdict_accept());
    return {replies, from};
}

bool jumps_to(const std::vector<nft::ListedRule>& rules, std::string_view chain) {
    return std::ranges::any_of(rules, [&](const nft::ListedRule& r) { return r.jumps_to == chain; });
}

// Whether a rule of the table jumps to `chain`: the chain's use count is its rules and the jumps
// to it, so only the chain itself (the operator's, short) is read.
Result<bool> jumped_to(std::string_view chain) {
    CNI_TRY_ASSIGN(auto info, nft::chain_info(kNftFamily, kNftTable, chain));
    if (!info) return false;
    CNI_TRY_ASSIGN(auto own, nft_chain_rules(chain));
    return info->use > own.size();
}

// The table, cni-forward and the jumps forward -> cni-forward -> admin, each added where missing.
Status ensure_frame(nft::Batch& tx, const std::string& admin) {
    CNI_TRY_ASSIGN(auto base, nft_chain_rules(kNftBase));
    CNI_TRY_ASSIGN(bool admin_jumped, jumped_to(admin));
    CNI_TRY(declare_nft_chains(tx, {kPrivate, admin}));
    if (!jumps_to(base, kPrivate)) tx.add_rule(kNftFamily, kNftTable, kNftBase, nft::verdict_jump(kPrivate), kJumpComment);
    if (admin_jumped) return {};
    tx.add_rule(kNftFamily, kNftTable, kPrivate, nft::verdict_jump(admin), kAdminComment, {.at_top = true, .compat_proto = {}});
    return {};
}

std::vector<std::uint64_t> all_of(const ForwardHandles& h) {
    std::vector<std::uint64_t> out = h.v4;
    out.insert(out.end(), h.v6.begin(), h.v6.end());
    return out;
}

// The recorded handles that still hold a rule with the attachment's comment.
Result<std::vector<std::uint64_t>> still_recorded(const ForwardHandles& known, const std::string& comment) {
    std::vector<std::uint64_t> out;
    auto handles = all_of(known);
    CNI_TRY_ASSIGN(auto at, nft::rules_by_handle(kNftFamily, kNftTable, kPrivate, handles));
    for (auto& r : at)
        if (r.comment == comment) out.push_back(r.handle);
    return out;
}

// Whether every recorded handle still holds a rule with the attachment's comment.
Result<bool> held_by_record(const ForwardHandles& known, const std::string& comment) {
    CNI_TRY_ASSIGN(auto held, still_recorded(known, comment));
    return !held.empty() && held.size() == all_of(known).size();
}

// The handles of the rules of cni-forward that `pick` takes, the chain read.
Result<std::vector<std::uint64_t>> rules_where(const std::function<bool(const nft::ListedRule&)>& pick) {
    std::vector<std::uint64_t> found;
    CNI_TRY(nft::for_each_rule(
        kNftFamily, kNftTable, kPrivate, [&](nft::ListedRule&& r) { if (pick(r)) found.push_back(r.handle); },
        [&] { found.clear(); }));
    return found;
}

// The handles of the attachment's rules in cni-forward: the recorded ones when they hold, else
// those of every rule with its comment.
Result<std::vector<std::uint64_t>> rules_of(const ForwardHandles& known, const std::string& comment) {
    CNI_TRY_ASSIGN(bool held, held_by_record(known, comment));
    if (held) return all_of(known);
    return rules_where([&](const nft::ListedRule& r) { return r.comment == comment; });
}

// The handles the commit gave the accepts, split by family as `ips` (IPv4 first) were added.
ForwardHandles handles_added(const nft::Batch& tx, const std::vector<net::IpAddr>& ips) {
    ForwardHandles made;
    std::size_t i = 0;
    for (auto& a : tx.added())
        if (a.chain == kPrivate && i < 2 * ips.size()) (ips[i++ / 2].is_v4() ? made.v4 : made.v6).push_back(a.handle);
    return made;
}

Status setup_forward(const ForwardSpec& f) {
    if (nft_chain_is_the_plugins(f.admin_chain))
        return fail("firewall (nftables): iptablesAdminChainName \"" + f.admin_chain + "\" names one of the plugin's own chains");
    ForwardRecord record(f.network, f.attachment, f.record_dir, kNftRecord);
    auto ips = in_record_order(f.ips);
    auto known = record.load_or_note(f.network, ips);
    auto comment = comment_of(f.network, f.attachment);
    ForwardHandles made;
    bool recorded = false;
    auto build = [&](nft::Batch& tx) -> Status {
        CNI_TRY(ensure_frame(tx, f.admin_chain));
        CNI_TRY_ASSIGN(auto held, still_recorded(known, comment));
        if ((recorded = !held.empty() && held.size() == all_of(known).size() && held.size() == 2 * ips.size())) return {};
        for (auto handle : held) tx.delete_rule(kNftFamily, kNftTable, kPrivate, handle);  // what is left of them
        tx.echo_added_rules();
        for (auto& ip : ips)
            for (auto& rule : address_rules(ip)) tx.add_rule(kNftFamily, kNftTable, kPrivate, rule, comment);
        return {};
    };
    CNI_TRY(nft::transact("firewall (nftables)", build, [&](const nft::Batch& tx) { made = recorded ? known : handles_added(tx, ips); }));
    made.network_tag = fw::nft_network_tag(f.network);
    made.ips = ips;
    record.save(made);
    return {};
}

// Removes the attachment's accepts (the chains stay, shared by every attachment).
Status teardown_forward(const ForwardSpec& f) {
    if (!nft::available()) return {};
    ForwardRecord record(f.network, f.attachment, f.record_dir, kNftRecord);
    auto known = record.load().value_or(ForwardHandles{});
    auto comment = comment_of(f.network, f.attachment);
    CNI_TRY(nft::transact("firewall (nftables): removing the rules", [&](nft::Batch& tx) -> Status {
        CNI_TRY_ASSIGN(auto chain, nft::chain_info(kNftFamily, kNftTable, kPrivate));
        if (!chain) return {};
        CNI_TRY_ASSIGN(auto doomed, rules_of(known, comment));
        for (auto handle : doomed) tx.delete_rule(kNftFamily, kNftTable, kPrivate, handle);
        return {};
    }));
    record.forget();
    return {};
}

Status check_forward(const ForwardSpec& f) {
    const std::string where = " in table inet " + std::string(kNftTable);
    CNI_TRY_ASSIGN(auto base, nft_chain_rules(kNftBase));
    CNI_TRY_ASSIGN(bool admin, jumped_to(f.admin_chain));
    if (!jumps_to(base, kPrivate) || !admin)
        return fail("firewall (nftables): the jumps forward -> " + std::string(kPrivate) + " -> " + f.admin_chain + " are missing" + where);
    auto known = ForwardRecord(f.network, f.attachment, f.record_dir, kNftRecord).load().value_or(ForwardHandles{});
    CNI_TRY_ASSIGN(auto mine, rules_of(known, comment_of(f.network, f.attachment)));
    if (mine.size() < 2 * f.ips.size())
        return fail("firewall (nftables): the rules accepting the attachment's traffic are missing from " + std::string(kPrivate) + where);
    return {};
}

Status gc_forward(std::string_view network, const std::vector<net::Attachment>& keep) {
    if (!nft::available()) return {};
    std::vector<std::string> kept;
    for (auto& a : keep) kept.push_back(comment_of(network, a));
    const std::string tag = fw::nft_network_tag(network);
    CNI_TRY(nft::transact("firewall (nftables): collecting rules", [&](nft::Batch& tx) -> Status {
        CNI_TRY_ASSIGN(auto gone, rules_where([&](const nft::ListedRule& r) {
            return r.comment.starts_with(tag) && std::ranges::find(kept, r.comment) == kept.end();
        }));
        for (auto handle : gone) tx.delete_rule(kNftFamily, kNftTable, kPrivate, handle);
        return {};
    }));
    for (auto& [record, known] : ForwardRecord::collectable(kForwardRecordDir, kNftRecord, std::string(network), keep).gone) record.forget();
    return {};
}

class NftablesForward final : public fw::Rules<ForwardSpec> {
public:
    Status setup(const ForwardSpec& f, Rollback& undo) const override {
        undo.push([this, f] { (void)teardown(f); });
        return setup_forward(f);
    }
    Status check(const ForwardSpec& f) const override { return check_forward(f); }
    Status teardown(const ForwardSpec& f) const override { return teardown_forward(f); }
    Status gc(std::string_view network, const std::vector<net::Attachment>& keep) const override { return gc_forward(network, keep); }
};

}  // namespace

const fw::Rules<ForwardSpec>& nftables_forward() {
    static const NftablesForward rules;
    return rules;
}

}  // namespace cni::firewall
