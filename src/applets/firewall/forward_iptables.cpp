// SPDX-License-Identifier: Apache-2.0
// The firewall plugin's FORWARD accepts with iptables (see forward.hpp), in the filter table:
// FORWARD jumps first to CNI-FORWARD, which jumps first to the admin chain (CNI-ADMIN unless
// named) and then accepts, per container address, replies to it (conntrack RELATED,ESTABLISHED)
// and everything from it. Rules, comments and positions are the reference's, so either
// implementation sees the other's rules as its own; one commit per table per call, under the
// xtables lock. On an iptables-nft node the per-address rules are appended without reading
// CNI-FORWARD (which holds every attachment's) and their handles are recorded
// (handle_record.hpp): an ADD run again, and the DEL, find them by the record. The
// record names the network and the addresses on either kind of node, which is how GC finds the
// rules of attachments that are gone.
#include "applets/firewall/forward.hpp"

#include <netinet/in.h>

#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/xt_conntrack.h>

#include <algorithm>

#include "applets/firewall/handle_record.hpp"
#include "applets/firewall/iptables_filter.hpp"
#include "core/fw/names.hpp"

namespace cni::firewall {
namespace {

constexpr const char* kPrivate = "CNI-FORWARD";

// The two rules of one container address.
std::pair<fw::IptRule, fw::IptRule> address_rules(const net::IpAddr& ip) {
    net::IpNet host{ip, ip.bits(), ip.bits()};
    fw::IptRule replies = to("ACCEPT");
    replies.dst = host;
    replies.matches = {fw::CtState{XT_CONNTRACK_STATE_BIT(IP_CT_RELATED) | XT_CONNTRACK_STATE_BIT(IP_CT_ESTABLISHED), false}};
    fw::IptRule from = to("ACCEPT");
    from.src = host;
    return {replies, from};
}

// The rules `ips` need in CNI-FORWARD, in the order ADD appends them.
std::vector<fw::IptRule> address_rules_of(const std::vector<net::IpAddr>& ips) {
    std::vector<fw::IptRule> out;
    for (auto& ip : ips) {
        auto [replies, from] = address_rules(ip);
        out.push_back(replies), out.push_back(from);
    }
    return out;
}

// Whether the rules still at the recorded handles are exactly `want`: as many, each one of them,
// and every one of them there (two handles holding the same rule do not stand for two rules).
Result<bool> recorded_rules_hold(const fw::IptTable& t, const std::vector<std::uint64_t>& handles, const std::vector<fw::IptRule>& want) {
    if (handles.size() != want.size() || !t.has_chain(kPrivate)) return false;
    CNI_TRY_ASSIGN(auto at, t.rules_at(kPrivate, handles));
    if (!at || at->size() != want.size()) return false;
    auto held = [&](const fw::IptRule& w) {
        return std::ranges::any_of(*at, [&](const fw::IptTable::AtHandle& r) { return !r.listed.foreign && r.listed.rule == w; });
    };
    auto wanted = [&](const fw::IptTable::AtHandle& r) { return !r.listed.foreign && std::ranges::find(want, r.listed.rule) != want.end(); };
    return std::ranges::all_of(*at, wanted) && std::ranges::all_of(want, held);
}

// Adds the jumps and the per-address rules, or finds the rules by the record.
Status setup_forward(const ForwardSpec& f) {
    ForwardRecord record(f.network, f.attachment, f.record_dir);
    auto known = record.load_or_note(f.network, f.ips);
    ForwardHandles made;
    CNI_TRY_ASSIGN(auto lock, os::FileLock::acquire(fw::kXtablesLock));
    for (fw::Family fam : {fw::Family::v4, fw::Family::v6}) {
        auto mine = of_family(f.ips, fam);
        if (mine.empty()) continue;
        auto wanted = address_rules_of(mine);
        CNI_TRY_ASSIGN(auto t, fw::IptTable::open(fam, "filter"));
        t.keep_added_handles();
        bool recorded = false;
        CNI_TRY(t.transact([&](fw::IptTable& x) -> Status {
            CNI_TRY(ensure_chain(x, kPrivate));
            CNI_TRY(ensure_chain(x, f.admin_chain));
            CNI_TRY(x.insert_unique(kForward, to(kPrivate, "CNI firewall plugin rules")));
            CNI_TRY(x.insert_unique(kPrivate, to(f.admin_chain, "CNI firewall plugin admin overrides")));
            CNI_TRY_ASSIGN(recorded, recorded_rules_hold(x, known.of(fam), wanted));
            if (recorded) return {};
            // An nf_tables chain is not read for them: the attachment's addresses are its own
            // (a copy another attachment leaked stays as it was); a legacy table looks.
            for (auto& r : wanted) CNI_TRY(x.append_new(kPrivate, r));
            return {};
        }));
        auto added = t.added_handles(kPrivate);  // the admin jump first when this ADD made it
        if (recorded) made.of(fam) = known.of(fam);
        else if (added.size() >= wanted.size()) made.of(fam).assign(added.end() - std::ptrdiff_t(wanted.size()), added.end());
    }
    made.network_tag = fw::nft_network_tag(f.network);
    made.ips = f.ips;
    record.save(made);
    return {};
}

// Removes the rules of `ips` (the chains stay, shared by every attachment) in both iptables
// variants: by the record's handles where they still hold exactly those rules, else by reading
// the chain for every rule of these addresses but the `spared` ones (other attachments' too).
Status remove_forward(const ForwardHandles& known, const std::vector<net::IpAddr>& ips, const std::vector<net::IpAddr>& spared = {}) {
    CNI_TRY_ASSIGN(auto lock, os::FileLock::acquire(fw::kXtablesLock));
    for (fw::Variant v : fw::kVariants) {
        for (fw::Family fam : {fw::Family::v4, fw::Family::v6}) {
            auto mine = of_family(ips, fam);
            if (mine.empty()) continue;
            // nothing of ours can be where there is no table, and opening a legacy one would make it;
            // recorded handles say the rules are in nf_tables, so the legacy chain is not read
            if (v == fw::Variant::legacy && (!known.of(fam).empty() || !fw::legacy_table_present(fam, "filter"))) continue;
            auto t = fw::IptTable::open(fam, "filter", v);
            if (!t || !t->has_chain(kPrivate)) continue;
            auto recorded_rules = address_rules_of(mine);
            std::erase_if(mine, [&](const net::IpAddr& ip) { return std::ranges::find(spared, ip) != spared.end(); });
            auto doomed = address_rules_of(mine);
            auto is_doomed = [&](const fw::IptRule& r) { return std::ranges::find(doomed, r) != doomed.end(); };
            CNI_TRY(t->transact([&](fw::IptTable& x) -> Status {
                if (!x.has_chain(kPrivate)) return {};
                CNI_TRY_ASSIGN(bool recorded, recorded_rules_hold(x, known.of(fam), recorded_rules));
                if (recorded) return x.delete_at(kPrivate, known.of(fam));
                CNI_TRY(x.delete_if(kPrivate, "ACCEPT", is_doomed));
                return {};
            }));
        }
    }
    return {};
}

Status teardown_forward(const ForwardSpec& f) {
    ForwardRecord record(f.network, f.attachment, f.record_dir);
    CNI_TRY(remove_forward(record.load().value_or(ForwardHandles{}), f.ips));
    record.forget();
    return {};
}

// The rules of the network's attachments not kept, as their records name them: by handle, or
// else by content, sparing an address another record holds (a gone attachment's address may be
// a live one's now). Rules no record names (the reference's, an older cni-all's) say nothing of
// their attachment, and stay.
Status gc_forward(std::string_view network, const std::vector<net::Attachment>& keep) {
    auto found = ForwardRecord::collectable(kForwardRecordDir, {}, std::string(network), keep);
    Status first;
    for (auto& [record, known] : found.gone) {
        auto st = remove_forward(known, known.ips, found.live_ips);
        if (st) record.forget();
        else if (first) first = std::move(st);
    }
    return first;
}

// Passes when either iptables variant holds the rules (check_either_variant).
Status check_forward(const std::vector<net::IpAddr>& ips, const std::string& admin_chain) {
    return check_per_family(ips, [&](fw::IptTable& t, const std::vector<net::IpAddr>& mine) -> Status {
        CNI_TRY_ASSIGN(bool jump, t.has_rule(kForward, to(kPrivate, "CNI firewall plugin rules")));
        CNI_TRY_ASSIGN(bool admin, t.has_rule(kPrivate, to(admin_chain, "CNI firewall plugin admin overrides")));
        if (!jump || !admin)
            return fail("firewall: the jumps FORWARD -> " + std::string(kPrivate) + " -> " + admin_chain + " are missing");
        for (auto& ip : mine) {
            auto [replies, from] = address_rules(ip);
            CNI_TRY_ASSIGN(bool r1, t.has_rule(kPrivate, replies));
            CNI_TRY_ASSIGN(bool r2, t.has_rule(kPrivate, from));
            if (!r1 || !r2) return fail("firewall: the rules accepting traffic of " + ip.str() + " are missing from " + kPrivate);
        }
        return {};
    });
}

class IptablesForward final : public fw::Rules<ForwardSpec> {
public:
    Status setup(const ForwardSpec& f, Rollback& undo) const override {
        undo.push([this, f] { (void)teardown(f); });
        return setup_forward(f);
    }
    Status check(const ForwardSpec& f) const override { return check_forward(f.ips, f.admin_chain); }
    Status teardown(const ForwardSpec& f) const override { return teardown_forward(f); }
    Status gc(std::string_view network, const std::vector<net::Attachment>& keep) const override { return gc_forward(network, keep); }
};

}  // namespace

const fw::Rules<ForwardSpec>& iptables_forward() {
    static const IptablesForward rules;
    return rules;
}

}  // namespace cni::firewall
