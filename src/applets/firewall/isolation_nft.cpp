// SPDX-License-Identifier: Apache-2.0
// The bridge isolation in native nftables (see isolation.hpp), in the applet's own table
// (nft_table.hpp), the iptables driver's chains in nft's form: `forward` jumps first to
// `cni-isolation-stage-1`, where `iifname BR oifname != BR` jumps to `cni-isolation-stage-2`
// (and, isolated, `iifname BR oifname BR` drops, ahead of it), and `cni-isolation-stage-2` drops
// `oifname BR`; a chain's end returns, as nft's regular chains do. Every rule is commented "CNI
// firewall plugin rules (ingressPolicy: P)". One transaction, which reads only these short chains.
#include <algorithm>

#include "applets/firewall/isolation.hpp"
#include "applets/firewall/nft_table.hpp"

namespace cni::firewall {
namespace {

namespace nft = fw::nft;

constexpr std::string_view kStage1 = "cni-isolation-stage-1";
constexpr std::string_view kStage2 = "cni-isolation-stage-2";

// One isolation rule: its chain, interface comparisons and verdict (a jump to `to`, else drop).
struct NftIsolationRule {
    std::string_view chain;
    std::string in, out;
    bool out_negated = false;
    std::string_view to;
};

// In the order setup inserts them, each at the top of its chain.
std::vector<NftIsolationRule> isolation_rules(const std::string& bridge, IngressPolicy policy) {
    std::vector<NftIsolationRule> out{{kNftBase, "", "", false, kStage1}, {kStage1, bridge, bridge, true, kStage2}};
    if (policy == IngressPolicy::isolated) out.push_back({kStage1, bridge, bridge, false, {}});
    out.push_back({kStage2, "", bridge, false, {}});
    return out;
}

std::string comment_of(IngressPolicy policy) {
    return std::string("CNI firewall plugin rules (ingressPolicy: ") + policy_name(policy) + ")";
}

nft::Exprs exprs_of(const NftIsolationRule& r) {
    nft::Exprs e;
    if (!r.in.empty()) nft::append(e, nft::match_iface(true, r.in));
    if (!r.out.empty()) nft::append(e, nft::match_iface(false, r.out, r.out_negated));
    nft::append(e, r.to.empty() ? nft::verdict_drop() : nft::verdict_jump(r.to));
    return e;
}

bool is(const nft::ListedRule& l, const NftIsolationRule& r, const std::string& comment) {
    return !l.unknown && l.comment == comment && l.in_iface == r.in && l.out_iface == r.out && l.out_negated == r.out_negated &&
           l.target == (r.to.empty() ? std::string("DROP") : std::string(r.to));
}

// An isolation rule as `nft list` shows it, for CHECK's error.
std::string shown(const NftIsolationRule& r) {
    std::string s(r.chain);
    if (!r.in.empty()) s += " iifname \"" + r.in + "\"";
    if (!r.out.empty()) s += std::string(" oifname ") + (r.out_negated ? "!= " : "") + "\"" + r.out + "\"";
    return s + (r.to.empty() ? " drop" : " jump " + std::string(r.to));
}

// The rules of the chains the isolation rules are in, by chain.
Result<std::vector<std::vector<nft::ListedRule>>> chains_now() {
    std::vector<std::vector<nft::ListedRule>> out;
    for (auto chain : {kNftBase, kStage1, kStage2}) {
        CNI_TRY_ASSIGN(auto rules, nft_chain_rules(chain));
        out.push_back(std::move(rules));
    }
    return out;
}

// Whether `chains` (chains_now's) hold `r`.
bool held(const std::vector<std::vector<nft::ListedRule>>& chains, const NftIsolationRule& r, const std::string& comment) {
    auto& in = chains[r.chain == kNftBase ? 0 : r.chain == kStage1 ? 1 : 2];
    return std::ranges::any_of(in, [&](const nft::ListedRule& l) { return is(l, r, comment); });
}

Status setup_isolation(const std::string& bridge, IngressPolicy policy) {
    if (policy == IngressPolicy::open) return {};
    auto rules = isolation_rules(bridge, policy);
    auto comment = comment_of(policy);
    return nft::transact("firewall (nftables): ingressPolicy", [&](nft::Batch& tx) -> Status {
        CNI_TRY_ASSIGN(auto chains, chains_now());
        CNI_TRY(declare_nft_chains(tx, {kStage1, kStage2}));
        for (auto& r : rules)
            if (!held(chains, r, comment)) tx.add_rule(kNftFamily, kNftTable, r.chain, exprs_of(r), comment, {.at_top = true, .compat_proto = {}});
        return {};
    });
}

Status check_isolation(const std::string& bridge, IngressPolicy policy) {
    if (policy == IngressPolicy::open) return {};
    auto comment = comment_of(policy);
    CNI_TRY_ASSIGN(auto chains, chains_now());
    for (auto& r : isolation_rules(bridge, policy))
        if (!held(chains, r, comment))
            return fail(std::string("firewall: ingressPolicy \"") + policy_name(policy) + "\" needs the rule " + shown(r) +
                        " in table inet " + std::string(kNftTable) + ", which is missing");
    return {};
}

class NftablesIsolation final : public fw::Rules<IsolationSpec> {
public:
    Status setup(const IsolationSpec& i, Rollback&) const override { return setup_isolation(i.bridge, i.policy); }
    Status check(const IsolationSpec& i) const override { return check_isolation(i.bridge, i.policy); }
    Status teardown(const IsolationSpec&) const override { return {}; }  // the bridge's, not the attachment's
};

}  // namespace

const fw::Rules<IsolationSpec>& nftables_isolation() {
    static const NftablesIsolation rules;
    return rules;
}

}  // namespace cni::firewall
