// SPDX-License-Identifier: Apache-2.0
// The firewall plugin's filter rules through IptTable (see forward.hpp).
#include "applets/firewall/forward.hpp"

#include "applets/firewall/forward_record.hpp"

#include <netinet/in.h>

#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/xt_conntrack.h>

#include <algorithm>

#include "core/fw/iptables.hpp"
#include "core/fw/xtables_nft.hpp"
#include "core/os/file_lock.hpp"

namespace cni::firewall {
namespace {

constexpr const char* kForward = "FORWARD";
constexpr const char* kPrivate = "CNI-FORWARD";
constexpr const char* kStage1 = "CNI-ISOLATION-STAGE-1";
constexpr const char* kStage2 = "CNI-ISOLATION-STAGE-2";

fw::IptRule to(std::string target, std::string comment = "") {
    fw::IptRule r;
    r.target = std::move(target);
    r.comment = std::move(comment);
    return r;
}

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

std::vector<net::IpAddr> of_family(const std::vector<net::IpAddr>& ips, fw::Family f) {
    std::vector<net::IpAddr> mine;
    for (auto& ip : ips)
        if (ip.is_v4() == (f == fw::Family::v4)) mine.push_back(ip);
    return mine;
}

// Runs `fn(table, addresses)` on the filter table of the node's variant of each family that has
// addresses, and commits it (IptTable::update).
template <class Fn>
Status per_family(const std::vector<net::IpAddr>& ips, Fn&& fn) {
    CNI_TRY_ASSIGN(auto lock, os::FileLock::acquire(fw::kXtablesLock));
    for (fw::Family f : {fw::Family::v4, fw::Family::v6}) {
        auto mine = of_family(ips, f);
        if (mine.empty()) continue;
        CNI_TRY(fw::IptTable::update(f, "filter", [&](fw::IptTable& filter) { return fn(filter, mine); }));
    }
    return {};
}

// Runs `check(table, addresses)` on the filter table of each family that has addresses, in each
// variant; passes when one variant passes for every family (check_either_variant).
template <class Fn>
Status check_per_family(const std::vector<net::IpAddr>& ips, Fn&& check) {
    CNI_TRY_ASSIGN(auto lock, os::FileLock::acquire(fw::kXtablesLock));
    return fw::check_either_variant([&](fw::Variant v) -> Status {
        for (fw::Family f : {fw::Family::v4, fw::Family::v6}) {
            auto mine = of_family(ips, f);
            if (mine.empty()) continue;
            CNI_TRY_ASSIGN(auto t, fw::IptTable::open(f, "filter", v));
            CNI_TRY(check(t, mine));
        }
        return {};
    });
}

Status ensure_chain(fw::IptTable& t, const std::string& chain) {
    return t.has_chain(chain) ? Status{} : t.create_chain(chain);
}

}  // namespace

namespace {

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

}  // namespace

Status setup_forward(const ForwardSpec& f) {
    ForwardRecord record(f.network, f.attachment, f.record_dir);
    auto known = record.load().value_or(ForwardHandles{});
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
    record.save(made);
    return {};
}

// The per-address rules go from both variants.
Status teardown_forward(const ForwardSpec& f) {
    ForwardRecord record(f.network, f.attachment, f.record_dir);
    auto known = record.load().value_or(ForwardHandles{});
    CNI_TRY_ASSIGN(auto lock, os::FileLock::acquire(fw::kXtablesLock));
    for (fw::Variant v : fw::kVariants) {
        for (fw::Family fam : {fw::Family::v4, fw::Family::v6}) {
            auto mine = of_family(f.ips, fam);
            if (mine.empty()) continue;
            auto t = fw::IptTable::open(fam, "filter", v);
            if (!t || !t->has_chain(kPrivate)) continue;  // nothing of ours can be there
            auto doomed = address_rules_of(mine);
            auto is_doomed = [&](const fw::IptRule& r) { return std::ranges::find(doomed, r) != doomed.end(); };
            CNI_TRY(t->transact([&](fw::IptTable& x) -> Status {
                if (!x.has_chain(kPrivate)) return {};
                CNI_TRY_ASSIGN(bool recorded, recorded_rules_hold(x, known.of(fam), doomed));
                if (recorded) return x.delete_at(kPrivate, known.of(fam));
                CNI_TRY(x.delete_if(kPrivate, "ACCEPT", is_doomed));
                return {};
            }));
        }
    }
    record.forget();
    return {};
}

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

namespace {

// One isolation rule: its chain, and whether it goes first (inserted) or last (appended).
struct IsolationRule {
    const char* chain;
    fw::IptRule rule;
    bool first;
};

// The isolation rules for `bridge` in the order setup_isolation places them (so the last
// inserted is first in its chain, as the reference leaves them).
std::vector<IsolationRule> isolation_rules(const std::string& bridge, IngressPolicy policy) {
    const std::string comment = std::string("CNI firewall plugin rules (ingressPolicy: ") + policy_name(policy) + ")";
    std::vector<IsolationRule> out{{kForward, to(kStage1, comment), true}};
    fw::IptRule leave = to(kStage2, comment);  // -i BR ! -o BR: leaving the bridge for another
    leave.in_iface = leave.out_iface = bridge;
    leave.out_inverted = true;
    out.push_back({kStage1, leave, true});
    if (policy == IngressPolicy::isolated) {
        fw::IptRule within = to("DROP", comment);  // -i BR -o BR: between containers of the bridge
        within.in_iface = within.out_iface = bridge;
        out.push_back({kStage1, within, true});
    }
    out.push_back({kStage1, to("RETURN", comment), false});
    fw::IptRule enter = to("DROP", comment);  // -o BR: arriving from another bridge
    enter.out_iface = bridge;
    out.push_back({kStage2, enter, true});
    out.push_back({kStage2, to("RETURN", comment), false});
    return out;
}

// An isolation rule as iptables -S shows its interfaces and target.
std::string shown(const fw::IptRule& r) {
    std::string s;
    if (!r.in_iface.empty()) s += "-i " + r.in_iface + " ";
    if (!r.out_iface.empty()) s += std::string(r.out_inverted ? "! " : "") + "-o " + r.out_iface + " ";
    return s + "-j " + r.target;
}

}  // namespace

const char* policy_name(IngressPolicy policy) {
    switch (policy) {
        case IngressPolicy::open: return "open";
        case IngressPolicy::same_bridge: return "same-bridge";
        case IngressPolicy::isolated: return "isolated";
    }
    return "open";
}

namespace {

Status setup_isolation(const std::string& bridge, IngressPolicy policy, const std::vector<net::IpAddr>& ips) {
    if (policy == IngressPolicy::open) return {};
    auto rules = isolation_rules(bridge, policy);
    return per_family(ips, [&](fw::IptTable& t, const std::vector<net::IpAddr>&) -> Status {
        CNI_TRY(ensure_chain(t, kStage1));
        CNI_TRY(ensure_chain(t, kStage2));
        for (auto& r : rules) CNI_TRY(r.first ? t.insert_unique(r.chain, r.rule) : t.append_unique(r.chain, r.rule));
        return {};
    });
}

Status check_isolation(const std::string& bridge, IngressPolicy policy, const std::vector<net::IpAddr>& ips) {
    if (policy == IngressPolicy::open) return {};
    auto rules = isolation_rules(bridge, policy);
    return check_per_family(ips, [&](fw::IptTable& t, const std::vector<net::IpAddr>&) -> Status {
        for (auto& r : rules) {
            CNI_TRY_ASSIGN(bool found, t.has_rule(r.chain, r.rule));
            if (!found)
                return fail(std::string("firewall: ingressPolicy \"") + policy_name(policy) + "\" needs the rule " +
                            r.chain + " " + shown(r.rule) + ", which is missing");
        }
        return {};
    });
}

class IptablesIsolation final : public fw::Rules<IsolationSpec> {
public:
    Status setup(const IsolationSpec& i, Rollback&) const override { return setup_isolation(i.bridge, i.policy, i.ips); }
    Status check(const IsolationSpec& i) const override { return check_isolation(i.bridge, i.policy, i.ips); }
    Status teardown(const IsolationSpec&) const override { return {}; }  // the bridge's, not the attachment's
};

class IptablesForward final : public fw::Rules<ForwardSpec> {
public:
    Status setup(const ForwardSpec& f, Rollback& undo) const override {
        undo.push([this, f] { (void)teardown(f); });
        return setup_forward(f);
    }
    Status check(const ForwardSpec& f) const override { return check_forward(f.ips, f.admin_chain); }
    Status teardown(const ForwardSpec& f) const override { return teardown_forward(f); }
};

}  // namespace

const fw::Rules<ForwardSpec>& iptables_forward() {
    static const IptablesForward rules;
    return rules;
}

const fw::Drivers<IsolationSpec>& isolation() {
    static const IptablesIsolation iptables;
    static const fw::Drivers<IsolationSpec> drivers{{fw::Driver::iptables, &iptables}};
    return drivers;
}

}  // namespace cni::firewall
