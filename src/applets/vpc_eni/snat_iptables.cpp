// SPDX-License-Identifier: Apache-2.0
// The node's SNAT and outbound connmark with iptables, in the reference agent's chains (see
// snat.hpp): nat POSTROUTING jumps to AWS-SNAT-CHAIN-0, which returns for the VPC CIDRs and SNATs
// the rest unless it is local; mangle PREROUTING sends a pod veth's new connections to
// AWS-CONNMARK-CHAIN-0 (which returns for the VPC CIDRs and marks the rest), then restores the
// connection's mark onto the packet; with node-port support, a connection arriving on the primary
// interface for a local address (-m addrtype --dst-type LOCAL --limit-iface-in) gets connmark
// 0x80 first ("AWS, primary ENI", before any rule that may end the chain). Both tables, IPv4, in
// the node's variant; teardown sweeps both variants, and on an nft node removes the tables and
// built-in chains setup made once they hold nothing (SnatSpec::nft_made), so nf_tables is left
// as it was.
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/xt_addrtype.h>
#include <linux/netfilter/xt_conntrack.h>

#include <algorithm>
#include <array>
#include <map>
#include <string_view>
#include <utility>

#include "applets/vpc_eni/snat.hpp"
#include "core/fw/iptables.hpp"
#include "core/fw/xtables_nft.hpp"
#include "core/os/file_lock.hpp"

namespace cni::vpc_eni {
namespace {

using fw::IptRule;
using fw::IptTable;

constexpr const char* kSnatChain = "AWS-SNAT-CHAIN-0";
constexpr const char* kConnmarkChain = "AWS-CONNMARK-CHAIN-0";

IptRule snat_jump() {
    IptRule r;
    r.comment = "AWS SNAT CHAIN";
    r.target = kSnatChain;
    return r;
}

// A chain's rules: RETURN for each VPC CIDR (commented `comment`), then `last`.
std::vector<IptRule> vpc_returns_then(const SnatSpec& s, const char* comment, IptRule last) {
    std::vector<IptRule> out;
    for (auto& cidr : s.vpc_cidrs) {
        IptRule r;
        r.dst = cidr.masked();
        r.comment = comment;
        r.target = "RETURN";
        out.push_back(r);
    }
    out.push_back(std::move(last));
    return out;
}

std::vector<IptRule> snat_rules(const SnatSpec& s) {
    IptRule snat;
    snat.comment = "AWS, SNAT";
    snat.matches = {fw::AddrType{.dst = XT_ADDRTYPE_LOCAL, .dst_inverted = true}};
    snat.target = "SNAT";
    snat.target_args = fw::SnatTo{s.primary_ip, true};
    return vpc_returns_then(s, "AWS SNAT CHAIN", snat);
}

IptRule connmark_jump(const SnatSpec& s) {
    IptRule r;
    r.in_iface = s.veth_prefix + "+";
    r.comment = "AWS, outbound connections";
    r.matches = {fw::CtState{XT_CONNTRACK_STATE_BIT(IP_CT_NEW), false}};
    r.target = kConnmarkChain;
    return r;
}

IptRule restore_mark(const SnatSpec& s) {
    IptRule r;
    r.in_iface = s.veth_prefix + "+";
    r.comment = "AWS, CONNMARK";
    r.target = "CONNMARK";
    r.target_args = fw::ConnMark{true, 0, kOutboundMark, kOutboundMark};
    return r;
}

// The reference agent's "connmark for primary ENI": a connection to one of the node's own
// addresses, arriving on the primary interface (a NodePort's, DNATed to a pod after this).
IptRule primary_eni_mark(const SnatSpec& s) {
    IptRule r;
    r.in_iface = s.primary_interface;
    r.comment = "AWS, primary ENI";
    r.matches = {fw::AddrType{.dst = XT_ADDRTYPE_LOCAL, .limit_iface_in = true}};
    r.target = "CONNMARK";
    r.target_args = fw::ConnMark{false, kOutboundMark, kOutboundMark, 0xffffffff};
    return r;
}

std::vector<IptRule> connmark_rules(const SnatSpec& s) {
    IptRule mark;
    mark.comment = "AWS, CONNMARK";
    mark.target = "CONNMARK";
    mark.target_args = fw::ConnMark{false, kOutboundMark, kOutboundMark, 0xffffffff};  // nfmask as iptables leaves it
    return vpc_returns_then(s, "AWS CONNMARK CHAIN, VPC CIDR", mark);
}

// The chain holding exactly `rules`, in order (rewritten when it holds anything else).
Status ensure_chain(IptTable& t, const std::string& chain, const std::vector<IptRule>& rules) {
    if (t.has_chain(chain)) {
        CNI_TRY_ASSIGN(auto listed, t.rules(chain));
        bool same = listed.size() == rules.size();
        for (std::size_t i = 0; same && i < rules.size(); ++i) same = !listed[i].foreign && listed[i].rule == rules[i];
        if (same) return {};
        CNI_TRY(t.flush_chain(chain));
    } else {
        CNI_TRY(t.create_chain(chain));
    }
    for (auto& r : rules) CNI_TRY(t.append_unique(chain, r));
    return {};
}

// Targets after which a packet goes on to the chain's next rule: they only set or log something
// (or there is no -j at all).
constexpr std::array<std::string_view, 15> kGoingOn{"", "MARK", "CONNMARK", "LOG", "NFLOG", "TOS", "DSCP", "TTL",
                                                    "HL", "CLASSIFY", "CHECKSUM", "TCPMSS", "SECMARK", "CONNSECMARK", "TEE"};

// Whether `rule` of a chain of `t` may end a packet's way through the built-in chain it was
// reached from (`top`: it is in that chain), so that a rule after it is not met: any target
// but those of kGoingOn (ACCEPT, DROP, REJECT, QUEUE, ... and RETURN in the built-in chain), a
// goto in the built-in chain (-g: where the chain gone to ends, so does the built-in chain), or
// a jump (or a goto further down, which comes back to the built-in chain as that jump would) to
// a chain one of whose rules may (RETURN there goes back), looked into 8 chains deep. A rule
// that is more than IptRule can say and names no target (nftables' own statements) may. What a
// chain looked into at a depth gave is kept in `seen` for the call, so that chains many rules jump
// to are looked into once a depth, not once a path (the table's lock is held meanwhile).
using SeenChains = std::map<std::pair<std::string, int>, bool>;
Result<bool> may_end(const IptTable& t, const IptTable::Listed& rule, bool top, SeenChains& seen, int depth = 0) {
    const std::string& target = rule.rule.target;
    if (target.empty() && rule.foreign) return true;
    if (rule.go_to && top) return true;
    if (std::ranges::find(kGoingOn, target) != kGoingOn.end()) return false;
    if (target == "RETURN") return top;
    if (!t.has_chain(target) || depth == 8) return true;  // a verdict, or a chain too deep to look into
    if (auto known = seen.find({target, depth}); known != seen.end()) return known->second;
    CNI_TRY_ASSIGN(auto listed, t.rules(target));
    bool ends = false;
    for (auto& r : listed) {
        CNI_TRY_ASSIGN(ends, may_end(t, r, false, seen, depth + 1));
        if (ends) break;
    }
    seen[{target, depth}] = ends;
    return ends;
}

// The primary ENI's connmark in mangle PREROUTING before any rule that may end a packet's way
// through it (may_end; docs/vpc-eni.md), so that no other program's ACCEPT skips it. Where it
// is before them all it stays, so another program that keeps its own rule first (MARK, say)
// and this one do not move theirs in turn; else it is inserted at the top, moved there in the
// same commit when it is further down (as an earlier version appended it), so no packet meets
// the chain without it.
Status primary_eni_mark_early(IptTable& mangle, const IptRule& mark) {
    if (mangle.has_chain("PREROUTING")) {
        CNI_TRY_ASSIGN(auto listed, mangle.rules("PREROUTING"));
        SeenChains seen;
        for (auto& r : listed) {
            if (!r.foreign && r.rule == mark) return {};
            CNI_TRY_ASSIGN(bool ends, may_end(mangle, r, true, seen));
            if (ends) break;
        }
        CNI_TRY(mangle.delete_if("PREROUTING", "CONNMARK", [&](const IptRule& r) { return r == mark; }));
    }
    return mangle.insert_unique("PREROUTING", mark);
}

Status require_rule(const IptTable& t, const std::string& chain, const IptRule& r, const std::string& what) {
    CNI_TRY_ASSIGN(bool there, t.has_rule(chain, r));
    if (!there) return fail("vpc-eni: " + what + " is missing from " + chain);
    return {};
}

Status remove_chain(IptTable& t, const std::string& from, const std::string& chain) {
    if (t.has_chain(from)) CNI_TRY(t.delete_if(from, chain));
    if (!t.has_chain(chain)) return {};
    CNI_TRY(t.flush_chain(chain));
    return t.delete_chain(chain);
}

class IptablesSnat final : public fw::Rules<SnatSpec> {
public:
    Status setup(const SnatSpec& s, Rollback& undo) const override {
        undo.push([this, s] { (void)teardown(s); });
        CNI_TRY_ASSIGN(auto lock, os::FileLock::acquire(fw::kXtablesLock));
        CNI_TRY(IptTable::update(fw::Family::v4, "nat", [&](IptTable& nat) -> Status {
            CNI_TRY(ensure_chain(nat, kSnatChain, snat_rules(s)));
            return nat.append_unique("POSTROUTING", snat_jump());
        }));
        return IptTable::update(fw::Family::v4, "mangle", [&](IptTable& mangle) -> Status {
            CNI_TRY(ensure_chain(mangle, kConnmarkChain, connmark_rules(s)));
            if (s.node_port) CNI_TRY(primary_eni_mark_early(mangle, primary_eni_mark(s)));
            else if (mangle.has_chain("PREROUTING"))
                CNI_TRY(mangle.delete_if("PREROUTING", "CONNMARK", [&](const IptRule& r) { return r == primary_eni_mark(s); }));
            CNI_TRY(mangle.append_unique("PREROUTING", connmark_jump(s)));
            return mangle.append_unique("PREROUTING", restore_mark(s));
        });
    }
    Status check(const SnatSpec& s) const override {
        return fw::check_either_variant([&](fw::Variant v) -> Status {
            CNI_TRY_ASSIGN(auto nat, IptTable::open(fw::Family::v4, "nat", v));
            CNI_TRY(require_rule(nat, "POSTROUTING", snat_jump(), "the jump to " + std::string(kSnatChain)));
            for (auto& r : snat_rules(s)) CNI_TRY(require_rule(nat, kSnatChain, r, "a rule"));
            CNI_TRY_ASSIGN(auto mangle, IptTable::open(fw::Family::v4, "mangle", v));
            CNI_TRY(require_rule(mangle, "PREROUTING", connmark_jump(s), "the jump to " + std::string(kConnmarkChain)));
            CNI_TRY(require_rule(mangle, "PREROUTING", restore_mark(s), "the connmark restore"));
            if (s.node_port) CNI_TRY(require_rule(mangle, "PREROUTING", primary_eni_mark(s), "the primary ENI's connmark"));
            for (auto& r : connmark_rules(s)) CNI_TRY(require_rule(mangle, kConnmarkChain, r, "a rule"));
            return {};
        });
    }
    Status teardown(const SnatSpec& s) const override {
        CNI_TRY_ASSIGN(auto lock, os::FileLock::acquire(fw::kXtablesLock));
        CNI_TRY(fw::for_each_table("nat", [&](IptTable& nat, fw::Family) { return remove_chain(nat, "POSTROUTING", kSnatChain); }));
        CNI_TRY(fw::for_each_table("mangle", [&](IptTable& mangle, fw::Family) -> Status {
            if (mangle.has_chain("PREROUTING"))
                CNI_TRY(mangle.delete_if("PREROUTING", "CONNMARK", [&](const IptRule& r) {
                    return r == restore_mark(s) || r == primary_eni_mark(s);
                }));
            return remove_chain(mangle, "PREROUTING", kConnmarkChain);
        }));
        if (s.nft_made.empty()) return {};
        return fw::remove_empty_nft_parts(fw::Family::v4, s.nft_made);
    }
};

}  // namespace

Result<std::vector<std::string>> iptables_nft_absent() {
    if (fw::node_variant() != fw::Variant::nft) return std::vector<std::string>{};
    static constexpr const char* kNat[] = {"POSTROUTING"};
    static constexpr const char* kMangle[] = {"PREROUTING"};
    CNI_TRY_ASSIGN(auto absent, fw::absent_nft_parts(fw::Family::v4, "nat", kNat));
    CNI_TRY_ASSIGN(auto mangle, fw::absent_nft_parts(fw::Family::v4, "mangle", kMangle));
    absent.insert(absent.end(), mangle.begin(), mangle.end());
    return absent;
}

const fw::Rules<SnatSpec>& iptables_snat() {
    static const IptablesSnat rules;
    return rules;
}

}  // namespace cni::vpc_eni
