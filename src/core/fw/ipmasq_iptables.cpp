// SPDX-License-Identifier: Apache-2.0
// ipMasq's iptables driver: its chains and rules through IptTable (see ipmasq.hpp).
#include "core/fw/ipmasq.hpp"

#include <algorithm>

#include "core/fw/iptables.hpp"
#include "core/fw/names.hpp"
#include "core/fw/nftables.hpp"
#include "core/fw/xtables_nft.hpp"
#include "core/os/file_lock.hpp"
#include "core/strings.hpp"

namespace cni::fw {
namespace {

const char* kPostrouting = "POSTROUTING";

net::IpNet multicast(Family f) { return *net::IpNet::parse(f == Family::v4 ? "224.0.0.0/4" : "ff00::/8"); }
Family family_of(const net::IpNet& n) { return n.ip.is_v4() ? Family::v4 : Family::v6; }
net::IpNet host(const net::IpAddr& ip) { return net::IpNet{ip, ip.bits(), ip.bits()}; }

// The three rules the reference writes for one address.
struct MasqRules {
    IptRule accept, masquerade, jump;
};
MasqRules rules_for(const net::IpNet& ip, const std::string& chain, const std::string& comment) {
    Family f = family_of(ip);
    MasqRules r;
    r.accept.dst = ip.masked();
    r.masquerade.dst = multicast(f);
    r.masquerade.dst_inverted = true;
    r.jump.src = host(ip.ip);
    r.accept.comment = r.masquerade.comment = r.jump.comment = comment;
    r.accept.target = "ACCEPT";
    r.masquerade.target = "MASQUERADE";
    r.jump.target = chain;
    return r;
}

template <class Fn>
Status per_family(const std::vector<net::IpNet>& ips, Fn&& fn) {
    for (Family f : {Family::v4, Family::v6}) {
        std::vector<net::IpNet> mine;
        for (auto& ip : ips)
            if (family_of(ip) == f) mine.push_back(ip);
        if (!mine.empty()) CNI_TRY(fn(f, mine));
    }
    return {};
}



Status iptables_setup(const std::vector<net::IpNet>& ips, std::string_view network, std::string_view container_id) {
    std::string chain = chain_name("CNI-", network, container_id);
    std::string comment = masq_comment(network, container_id);
    CNI_TRY_ASSIGN(auto lock, os::FileLock::acquire(kXtablesLock));
    return per_family(ips, [&](Family f, const std::vector<net::IpNet>& mine) -> Status {
        return IptTable::update(f, "nat", [&](IptTable& nat) -> Status {
            if (!nat.has_chain(chain)) CNI_TRY(nat.create_chain(chain));
            for (auto& ip : mine) {
                auto r = rules_for(ip, chain, comment);
                CNI_TRY(nat.append_unique(chain, r.accept));
                CNI_TRY(nat.append_unique(chain, r.masquerade));
                CNI_TRY(nat.append_unique(kPostrouting, r.jump));
            }
            return {};
        });
    });
}

// Removes an attachment's chain and the POSTROUTING rules that jump to it, in both families and
// both variants.
Status iptables_teardown_chain(const std::string& chain) {
    CNI_TRY_ASSIGN(auto lock, os::FileLock::acquire(kXtablesLock));
    return for_each_table("nat", [&](IptTable& nat, Family) -> Status {
        CNI_TRY(nat.delete_if(kPostrouting, chain));
        if (nat.has_chain(chain)) {
            CNI_TRY(nat.flush_chain(chain));
            CNI_TRY(nat.delete_chain(chain));
        }
        return {};
    });
}

Status iptables_teardown(std::string_view network, std::string_view container_id) {
    return iptables_teardown_chain(chain_name("CNI-", network, container_id));
}

// Whether a rule's comment marks `chain` as this network's masquerade chain of some attachment:
// the comment names the network and an ID whose chain it is. A comment cut at iptables' 255
// bytes no longer holds the whole ID; then the network's name at its start has to do.
bool masq_chain_of(std::string_view network, const std::string& chain, const std::string& comment) {
    std::string prefix = "name: " + go_quote(network) + " id: ";
    if (!comment.starts_with(prefix)) return false;
    if (comment.size() >= kMaxCommentLength) return true;
    std::string quoted = comment.substr(prefix.size());
    if (quoted.size() < 2) return false;
    std::string id = quoted.substr(1, quoted.size() - 2);
    return go_quote(id) == quoted && chain == chain_name("CNI-", network, id);
}

// Adds to `stale` the network's masquerade chains (CNI- and 24 hex digits) in `nat` that are
// not `kept`, found by their rules' comments and compared by chain name, so an ID too long for
// its comment is collected too.
Status find_stale_masq_chains(const IptTable& nat, std::string_view network, const std::vector<std::string>& kept,
                              std::vector<std::string>& stale) {
    for (auto& chain : nat.chains()) {
        if (!chain.starts_with("CNI-") || chain.size() != 28 || chain.starts_with("CNI-DN-")) continue;
        if (std::ranges::find(kept, chain) != kept.end() || std::ranges::find(stale, chain) != stale.end()) continue;
        CNI_TRY_ASSIGN(auto rules, nat.rules(chain));
        if (std::ranges::any_of(rules, [&](auto& l) { return masq_chain_of(network, chain, l.rule.comment); }))
            stale.push_back(chain);
    }
    return {};
}

// The network's masquerade chains whose attachment is not in `keep` go, from both variants.
Status iptables_gc(std::string_view network, const std::vector<std::string>& keep) {
    std::vector<std::string> kept, stale;
    for (auto& id : keep) kept.push_back(chain_name("CNI-", network, id));
    {
        CNI_TRY_ASSIGN(auto lock, os::FileLock::acquire(kXtablesLock));
        CNI_TRY(for_each_table("nat", [&](IptTable& nat, Family) { return find_stale_masq_chains(nat, network, kept, stale); }));
    }
    Failures failures;
    for (auto& chain : stale) failures.add(iptables_teardown_chain(chain));
    return failures.status("ipMasq GC: ");
}

// Checks the attachment's chain and rules in either variant (check_either_variant).
Status iptables_check(const std::vector<net::IpNet>& ips, std::string_view network, std::string_view container_id) {
    std::string chain = chain_name("CNI-", network, container_id);
    std::string comment = masq_comment(network, container_id);
    CNI_TRY_ASSIGN(auto lock, os::FileLock::acquire(kXtablesLock));
    return check_either_variant([&](Variant v) {
        return per_family(ips, [&](Family f, const std::vector<net::IpNet>& mine) -> Status {
            CNI_TRY_ASSIGN(auto nat, IptTable::open(f, "nat", v));
            if (!nat.has_chain(chain)) return fail("ipMasq chain " + chain + " is missing");
            for (auto& ip : mine) {
                auto r = rules_for(ip, chain, comment);
                CNI_TRY_ASSIGN(bool accept, nat.has_rule(chain, r.accept));
                CNI_TRY_ASSIGN(bool masquerade, nat.has_rule(chain, r.masquerade));
                CNI_TRY_ASSIGN(bool jump, nat.has_rule(kPostrouting, r.jump));
                if (!accept || !masquerade) return fail("ipMasq chain " + chain + " lacks the rules for " + ip.str());
                if (!jump) return fail("POSTROUTING lacks the jump to " + chain + " for " + ip.ip.str());
            }
            return {};
        });
    });
}

class IptablesMasquerade final : public Rules<Masquerade> {
public:
    Status setup(const Masquerade& m, Rollback& undo) const override {
        undo.push([this, m] { (void)teardown(m); });
        return iptables_setup(m.ips, m.network, m.container_id);
    }
    Status check(const Masquerade& m) const override { return iptables_check(m.ips, m.network, m.container_id); }
    Status teardown(const Masquerade& m) const override { return iptables_teardown(m.network, m.container_id); }
    Status gc(std::string_view network, const std::vector<net::Attachment>& keep) const override {
        std::vector<std::string> ids;
        for (auto& a : keep) ids.push_back(a.container_id);
        return iptables_gc(network, ids);
    }
};

}  // namespace

const Rules<Masquerade>& iptables_masquerade() {
    static const IptablesMasquerade rules;
    return rules;
}

}  // namespace cni::fw
