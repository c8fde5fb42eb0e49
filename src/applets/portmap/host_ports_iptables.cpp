// SPDX-License-Identifier: Apache-2.0
// portmap's host ports with iptables (see host_ports.hpp), through libiptc, with the reference's
// chains and rules bit for bit: the shared nat chains CNI-HOSTPORT-SETMARK (marks what must be
// masqueraded), CNI-HOSTPORT-MASQ (masquerades it; jumped to first in POSTROUTING) and
// CNI-HOSTPORT-DNAT (jumped to from PREROUTING and OUTPUT only for traffic addressed to a local
// address), and one CNI-DN-<hash(network+containerID)> chain per attachment with the
// hairpin/localhost mark rules and the DNATs, entered from CNI-HOSTPORT-DNAT by multiport rules
// commented `dnat name: "<net>" id: "<cid>"`. Everything of one call goes into one commit per
// table under the xtables lock. Beyond the reference: when route_localnet is turned on for
// localhost access, a guard rule (as kube-proxy's) drops traffic to 127/8 that arrives from
// elsewhere and was not DNAT'ed; GC removes the chains of attachments that are gone.
#include "applets/portmap/host_ports.hpp"

#include <netinet/in.h>

#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/xt_addrtype.h>
#include <linux/netfilter/xt_conntrack.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>

#include "core/fw/names.hpp"
#include "core/fw/xtables_nft.hpp"
#include "core/os/file_lock.hpp"

namespace cni::portmap {

using namespace fw;  // this file is portmap's iptables driver: IptTable, IptRule, chain names

namespace {

constexpr const char* kDnatChain = "CNI-HOSTPORT-DNAT";
constexpr const char* kSetMarkChain = "CNI-HOSTPORT-SETMARK";
constexpr const char* kMasqChain = "CNI-HOSTPORT-MASQ";
constexpr const char* kOldSnatChain = "CNI-HOSTPORT-SNAT";
constexpr std::size_t kMultiportMax = 15;

Family family_of(const net::IpAddr& ip) { return ip.is_v4() ? Family::v4 : Family::v6; }
net::IpNet host(const net::IpAddr& ip) { return net::IpNet{ip, ip.bits(), ip.bits()}; }

IptRule rule_to(std::string target) {
    IptRule r;
    r.target = std::move(target);
    return r;
}

IptRule setmark_rule(int bit) {
    IptRule r = rule_to("MARK");
    r.comment = "CNI portfwd masquerade mark";
    r.target_args = SetXMark{1u << bit, 1u << bit};
    return r;
}

IptRule masq_rule(int bit) {
    IptRule r = rule_to("MASQUERADE");
    r.matches = {MarkMatch{1u << bit, 1u << bit}};
    return r;
}

IptRule masq_entry() {
    IptRule r = rule_to(kMasqChain);
    r.comment = "CNI portfwd requiring masquerade";
    return r;
}

IptRule dnat_entry() {
    IptRule r = rule_to(kDnatChain);
    r.matches = {AddrType{.dst = XT_ADDRTYPE_LOCAL}};
    return r;
}

void apply(const Conditions& c, IptRule& r) {
    r.src = c.src, r.src_inverted = c.src_inverted;
    r.dst = c.dst, r.dst_inverted = c.dst_inverted;
    r.in_iface = c.in_iface, r.in_inverted = c.in_inverted;
    r.out_iface = c.out_iface, r.out_inverted = c.out_inverted;
    r.matches.insert(r.matches.end(), c.matches.begin(), c.matches.end());
}

// The entry rules into the attachment's chain: per protocol (sorted by name), per 15 ports.
std::vector<IptRule> entry_rules(const HostPortSpec& s, const std::string& chain) {
    std::map<std::string, std::pair<int, std::vector<std::uint16_t>>> by_proto;
    for (auto& m : s.mappings) {
        auto& slot = by_proto[m.proto_name];
        slot.first = m.proto;
        slot.second.push_back(static_cast<std::uint16_t>(m.host_port));
    }
    std::vector<IptRule> out;
    for (auto& [name, pp] : by_proto) {
        for (std::size_t i = 0; i < pp.second.size(); i += kMultiportMax) {
            IptRule r = rule_to(chain);
            r.comment = dnat_comment(s.network, s.container_id);
            r.proto = pp.first;
            auto end = pp.second.begin() + std::ptrdiff_t(std::min(pp.second.size(), i + kMultiportMax));
            r.matches = {MultiportDst{std::vector<std::uint16_t>(pp.second.begin() + std::ptrdiff_t(i), end)}};
            apply(s.conditions, r);
            out.push_back(std::move(r));
        }
    }
    return out;
}

// The attachment's chain: per mapping the hairpin and localhost mark rules, then the DNAT.
std::vector<IptRule> dn_rules(const HostPortSpec& s) {
    const std::string setmark = s.external_setmark_chain.value_or(kSetMarkChain);
    const bool v4 = s.container.ip.is_v4();
    std::vector<IptRule> out;
    for (auto& m : s.mappings) {
        IptRule base;
        base.proto = m.proto;
        base.matches = {DstPort{static_cast<std::uint16_t>(m.host_port)}};
        if (m.host_ip) base.dst = host(*m.host_ip);
        if (s.snat) {
            IptRule hairpin = base;
            if (!s.masq_all) hairpin.src = s.container.masked();  // masqAll: -s 0.0.0.0/0, i.e. no -s
            hairpin.target = setmark;
            out.push_back(hairpin);
            if (v4 && !s.masq_all) {
                IptRule local = base;
                local.src = host(*net::IpAddr::parse("127.0.0.1"));
                local.target = setmark;
                out.push_back(local);
            }
        }
        IptRule dnat = base;
        dnat.target = "DNAT";
        dnat.target_args = DnatTo{s.container.ip, static_cast<std::uint16_t>(m.container_port)};
        out.push_back(dnat);
    }
    return out;
}

Status ensure_chain(IptTable& t, const std::string& chain) {
    if (t.has_chain(chain)) return {};
    return t.create_chain(chain);
}

// Deletes the chain and every rule of `from` jumping to it; fine when neither is there.
Status remove_chain(IptTable& t, const std::string& from, const std::string& chain) {
    if (t.has_chain(from)) CNI_TRY(t.delete_if(from, chain));
    if (!t.has_chain(chain)) return {};
    CNI_TRY(t.flush_chain(chain));
    return t.delete_chain(chain);
}

}  // namespace

std::string dnat_comment(std::string_view network, std::string_view container_id) {
    std::string c = "dnat name: \"" + std::string(network) + "\" id: \"" + std::string(container_id) + "\"";
    if (c.size() > kMaxCommentLength) c = c.substr(0, kMaxCommentLength - 3) + "...";
    return c;
}

namespace {

// XT_ADDRTYPE_* of one iptables type name (as libxt_addrtype spells them), 0 if unknown.
unsigned addrtype_bit(std::string_view name) {
    static constexpr std::pair<std::string_view, unsigned> kTypes[] = {
        {"UNSPEC", XT_ADDRTYPE_UNSPEC}, {"UNICAST", XT_ADDRTYPE_UNICAST}, {"LOCAL", XT_ADDRTYPE_LOCAL},
        {"BROADCAST", XT_ADDRTYPE_BROADCAST}, {"ANYCAST", XT_ADDRTYPE_ANYCAST}, {"MULTICAST", XT_ADDRTYPE_MULTICAST},
        {"BLACKHOLE", XT_ADDRTYPE_BLACKHOLE}, {"UNREACHABLE", XT_ADDRTYPE_UNREACHABLE}, {"PROHIBIT", XT_ADDRTYPE_PROHIBIT},
        {"THROW", XT_ADDRTYPE_THROW}, {"NAT", XT_ADDRTYPE_NAT}, {"XRESOLVE", XT_ADDRTYPE_XRESOLVE}};
    for (auto& [n, bit] : kTypes)
        if (n == name) return bit;
    return 0;
}

// One condition option after "-m addrtype|iprange|mark"; false if `opt` is not that match's.
Result<bool> parse_match_option(IptMatch& m, const std::string& opt, const std::string& value, bool negated, bool v4,
                                const std::string& where) {
    auto bad = [&](std::string what) { return fail(where + ": " + what + " \"" + value + "\" for " + opt); };
    if (auto* at = std::get_if<AddrType>(&m)) {
        if (opt != "--src-type" && opt != "--dst-type") return false;
        unsigned bits = 0;
        for (std::size_t pos = 0; pos <= value.size();) {
            auto comma = std::min(value.find(',', pos), value.size());
            unsigned bit = addrtype_bit(std::string_view(value).substr(pos, comma - pos));
            if (!bit) return bad("unknown address type");
            bits |= bit;
            pos = comma + 1;
        }
        (opt == "--src-type" ? at->src : at->dst) = bits;
        (opt == "--src-type" ? at->src_inverted : at->dst_inverted) = negated;
        return true;
    }
    if (auto* ir = std::get_if<IpRange>(&m)) {
        if (opt != "--src-range" && opt != "--dst-range") return false;
        auto dash = value.find('-');
        auto lo = net::IpAddr::parse(value.substr(0, dash));
        auto hi = dash == std::string::npos ? lo : net::IpAddr::parse(value.substr(dash + 1));
        if (!lo || !hi || lo->is_v4() != v4 || hi->is_v4() != v4) return bad(v4 ? "invalid IPv4 range" : "invalid IPv6 range");
        (opt == "--src-range" ? ir->src : ir->dst) = std::pair{*lo, *hi};
        (opt == "--src-range" ? ir->src_inverted : ir->dst_inverted) = negated;
        return true;
    }
    auto& mk = std::get<MarkMatch>(m);
    if (opt != "--mark") return false;
    auto slash = value.find('/');
    auto number = [](const std::string& s) -> std::optional<std::uint32_t> {
        char* end = nullptr;
        errno = 0;
        unsigned long long v = std::strtoull(s.c_str(), &end, 0);
        if (s.empty() || *end || errno || v > 0xffffffffULL || s[0] == '-') return std::nullopt;
        return std::uint32_t(v);
    };
    auto mark = number(value.substr(0, slash));
    auto mask = slash == std::string::npos ? std::optional<std::uint32_t>(0xffffffffu) : number(value.substr(slash + 1));
    if (!mark || !mask) return bad("invalid mark");
    mk = MarkMatch{*mark, *mask, negated};
    return true;
}

bool match_is_empty(const IptMatch& m) {
    if (auto* at = std::get_if<AddrType>(&m)) return !at->src && !at->dst;
    if (auto* ir = std::get_if<IpRange>(&m)) return !ir->src && !ir->dst;
    return std::get<MarkMatch>(m).mask == 0 && std::get<MarkMatch>(m).mark == 0 && !std::get<MarkMatch>(m).inverted;
}

}  // namespace

Result<Conditions> iptables_conditions(const std::vector<std::string>& tokens, std::string_view key) {
    const std::string where(key);
    const bool v4 = !key.ends_with("V6");
    Conditions c;
    std::string module;  // the last -m, whose options may follow
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        bool negated = tokens[i] == "!";
        if (negated && ++i == tokens.size()) return fail(where + ": \"!\" at the end, with nothing to negate");
        const std::string& opt = tokens[i];
        if (i + 1 == tokens.size()) return fail(where + ": " + opt + " needs a value");
        const std::string& value = tokens[++i];
        if (opt == "-m" || opt == "--match") {
            if (negated) return fail(where + ": \"!\" cannot negate " + opt);
            if (value == "addrtype") c.matches.emplace_back(AddrType{});
            else if (value == "iprange") c.matches.emplace_back(IpRange{});
            else if (value == "mark") c.matches.emplace_back(MarkMatch{});
            else
                return fail(code::unsupported_field, where + ": the " + value + " match is not supported in iptables conditions "
                                                             "(addrtype, iprange and mark are)");
            module = value;
        } else if (opt == "-s" || opt == "--source" || opt == "-d" || opt == "--destination") {
            auto net = net::IpNet::parse(value.find('/') == std::string::npos ? value + (value.find(':') == std::string::npos ? "/32" : "/128") : value);
            if (!net || net->ip.is_v4() != v4) return fail(where + ": invalid " + (v4 ? "IPv4" : "IPv6") + " address " + value);
            bool src = opt == "-s" || opt == "--source";
            (src ? c.src : c.dst) = net->masked();
            (src ? c.src_inverted : c.dst_inverted) = negated;
        } else if (opt == "-i" || opt == "--in-interface" || opt == "-o" || opt == "--out-interface") {
            bool in = opt == "-i" || opt == "--in-interface";
            (in ? c.in_iface : c.out_iface) = value;
            (in ? c.in_inverted : c.out_inverted) = negated;
        } else {
            bool taken = false;
            if (!c.matches.empty()) CNI_TRY_ASSIGN(taken, parse_match_option(c.matches.back(), opt, value, negated, v4, where));
            if (!taken)
                return fail(code::unsupported_field, where + ": " + opt + (module.empty() ? "" : " (after -m " + module + ")") +
                                                         " is not supported in iptables conditions: [!] -s, -d, -i, -o and "
                                                         "-m addrtype, iprange or mark with their options are");
        }
    }
    for (auto& m : c.matches)
        if (match_is_empty(m)) return fail(where + ": a -m addrtype, iprange or mark without any of its options");
    return c;
}

namespace {

Status add_rules(const HostPortSpec& s) {
    const std::string chain = chain_name("CNI-DN-", s.network, s.container_id);
    CNI_TRY_ASSIGN(auto lock, os::FileLock::acquire(kXtablesLock));
    return IptTable::update(family_of(s.container.ip), "nat", [&](IptTable& nat) -> Status {
        if (s.snat && !s.external_setmark_chain) {
            CNI_TRY(ensure_chain(nat, kSetMarkChain));
            CNI_TRY(nat.append_unique(kSetMarkChain, setmark_rule(s.mark_bit)));
            CNI_TRY(ensure_chain(nat, kMasqChain));
            CNI_TRY(nat.append_unique(kMasqChain, masq_rule(s.mark_bit)));
            CNI_TRY(nat.insert_unique("POSTROUTING", masq_entry()));
        }
        CNI_TRY(ensure_chain(nat, kDnatChain));
        CNI_TRY(nat.append_unique("PREROUTING", dnat_entry()));
        CNI_TRY(nat.append_unique("OUTPUT", dnat_entry()));
        // Start the attachment's chain afresh, in case something of an earlier attempt is left.
        CNI_TRY(remove_chain(nat, kDnatChain, chain));
        CNI_TRY(nat.create_chain(chain));
        for (auto& r : dn_rules(s)) CNI_TRY(nat.append_unique(chain, r));
        for (auto& r : entry_rules(s, chain)) CNI_TRY(nat.append_unique(kDnatChain, r));
        return {};
    });
}

Status add_localnet_guard() {
    IptRule guard = rule_to("DROP");
    guard.src = guard.dst = net::IpNet::parse("127.0.0.0/8");
    guard.src_inverted = true;
    guard.comment = "CNI portfwd: block incoming localnet connections";
    guard.matches = {CtState{XT_CONNTRACK_STATE_BIT(IP_CT_RELATED) | XT_CONNTRACK_STATE_BIT(IP_CT_ESTABLISHED) |
                                 XT_CONNTRACK_STATE_DNAT, true}};
    CNI_TRY_ASSIGN(auto lock, os::FileLock::acquire(kXtablesLock));
    return IptTable::update(Family::v4, "filter", [&](IptTable& filter) { return filter.insert_unique("INPUT", guard); });
}

// Removes an attachment's DNAT chain and, when its name is known, the SNAT chain of older
// reference versions, with the rules jumping to them, in both families and both variants.
Status teardown_chains(const std::string& chain, const std::string& old_snat) {
    CNI_TRY_ASSIGN(auto lock, os::FileLock::acquire(kXtablesLock));
    return for_each_table("nat", [&](IptTable& nat, Family) -> Status {
        CNI_TRY(remove_chain(nat, kDnatChain, chain));
        if (!old_snat.empty()) CNI_TRY(remove_chain(nat, kOldSnatChain, old_snat));
        return {};
    });
}

Status remove_rules(std::string_view network, std::string_view container_id) {
    return teardown_chains(chain_name("CNI-DN-", network, container_id), chain_name("CNI-SN-", network, container_id));
}

Status check_rules(const HostPortSpec& s) {
    const std::string chain = chain_name("CNI-DN-", s.network, s.container_id);
    CNI_TRY_ASSIGN(auto lock, os::FileLock::acquire(kXtablesLock));
    return check_either_variant([&](Variant v) -> Status {
        CNI_TRY_ASSIGN(auto nat, IptTable::open(family_of(s.container.ip), "nat", v));
        auto require = [&](const std::string& in, const IptRule& want, std::string_view what) -> Status {
            if (!nat.has_chain(in)) return fail("portmap: chain " + in + " is missing");
            CNI_TRY_ASSIGN(bool found, nat.has_rule(in, want));
            if (!found) return fail("portmap: " + std::string(what) + " is missing from " + in);
            return {};
        };
        if (s.snat && !s.external_setmark_chain) {
            CNI_TRY(require(kSetMarkChain, setmark_rule(s.mark_bit), "the masquerade mark rule"));
            CNI_TRY(require(kMasqChain, masq_rule(s.mark_bit), "the masquerade rule"));
            CNI_TRY(require("POSTROUTING", masq_entry(), "the jump to " + std::string(kMasqChain)));
        }
        CNI_TRY(require("PREROUTING", dnat_entry(), "the jump to " + std::string(kDnatChain)));
        CNI_TRY(require("OUTPUT", dnat_entry(), "the jump to " + std::string(kDnatChain)));
        for (auto& r : dn_rules(s)) CNI_TRY(require(chain, r, "a rule of " + s.container.ip.str()));
        for (auto& r : entry_rules(s, chain)) CNI_TRY(require(kDnatChain, r, "the jump to " + chain));
        return {};
    });
}

// Adds to `stale` the attachments of `network` in `nat` whose DNAT chain is not `kept`. They are
// found by the comments of their entry rules in CNI-HOSTPORT-DNAT; one cut at 255 bytes
// (dnat_comment) no longer holds the whole ID, so its chain (the rule's target) goes without the
// old SNAT chain, whose name needs the ID (and which no version writing such comments made).
Status find_stale_dnat_chains(const IptTable& nat, std::string_view network, const std::vector<std::string>& kept,
                              std::vector<std::pair<std::string, std::string>>& stale) {
    if (!nat.has_chain(kDnatChain)) return {};
    const std::string prefix = "dnat name: \"" + std::string(network) + "\" id: \"";
    CNI_TRY_ASSIGN(auto rules, nat.rules(kDnatChain));
    for (auto& l : rules) {
        const std::string& c = l.rule.comment;
        const std::string& chain = l.rule.target;
        if (!c.starts_with(prefix) || !chain.starts_with("CNI-DN-") || std::ranges::find(kept, chain) != kept.end() ||
            std::ranges::any_of(stale, [&](auto& s) { return s.first == chain; }))
            continue;
        if (c.size() == kMaxCommentLength && c.ends_with("...")) {
            stale.emplace_back(chain, "");
            continue;
        }
        if (!c.ends_with("\"") || c.size() <= prefix.size()) continue;
        std::string id = c.substr(prefix.size(), c.size() - prefix.size() - 1);
        if (chain == chain_name("CNI-DN-", network, id)) stale.emplace_back(chain, chain_name("CNI-SN-", network, id));
    }
    return {};
}

// The attachments of `network` whose DNAT chain is not a valid attachment's go, from both
// variants (find_stale_dnat_chains).
Status collect(std::string_view network, const std::vector<net::Attachment>& keep) {
    std::vector<std::string> kept;
    for (auto& a : keep) kept.push_back(chain_name("CNI-DN-", network, a.container_id));
    std::vector<std::pair<std::string, std::string>> stale;  // DNAT chain, old SNAT chain
    {
        CNI_TRY_ASSIGN(auto lock, os::FileLock::acquire(kXtablesLock));
        CNI_TRY(for_each_table("nat", [&](IptTable& nat, Family) { return find_stale_dnat_chains(nat, network, kept, stale); }));
    }
    Failures failures;
    for (auto& [chain, old_snat] : stale) failures.add(teardown_chains(chain, old_snat));
    return failures.status("portmap GC: ");
}

class IptablesHostPorts final : public fw::Rules<HostPortSpec> {
public:
    Status setup(const HostPortSpec& s, Rollback& undo) const override {
        undo.push([this, s] { (void)teardown(s); });
        CNI_TRY(add_rules(s));
        return s.localnet_guard ? add_localnet_guard() : Status{};
    }
    Status check(const HostPortSpec& s) const override { return check_rules(s); }
    Status teardown(const HostPortSpec& s) const override { return remove_rules(s.network, s.container_id); }
    Status gc(std::string_view network, const std::vector<net::Attachment>& keep) const override { return collect(network, keep); }
};

}  // namespace

const fw::Rules<HostPortSpec>& iptables_host_ports() {
    static const IptablesHostPorts rules;
    return rules;
}

}  // namespace cni::portmap
