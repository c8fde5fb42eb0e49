// SPDX-License-Identifier: Apache-2.0
// The bridge isolation's chains and rules in the filter table through IptTable (see
// isolation.hpp), one commit per table per call, under the xtables lock.
#include "applets/firewall/isolation.hpp"

#include "applets/firewall/iptables_filter.hpp"

namespace cni::firewall {
namespace {

constexpr const char* kStage1 = "CNI-ISOLATION-STAGE-1";
constexpr const char* kStage2 = "CNI-ISOLATION-STAGE-2";

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

}  // namespace

const fw::Rules<IsolationSpec>& iptables_isolation() {
    static const IptablesIsolation rules;
    return rules;
}

}  // namespace cni::firewall
