// SPDX-License-Identifier: Apache-2.0
// portmap's host ports in native nftables (see host_ports.hpp), object for object as the
// reference's v1.9: table `ip|ip6 cni_hostport` ("CNI portmap plugin") with the regular chains
// `hostports`, `hostip_hostports` (kept empty, for upgrades) and `hostports_all` (jumps to both),
// the base chains `prerouting` and `output` (nat, dstnat) each holding `[conditions] fib daddr
// type local jump hostports_all`, and with snat `masquerading` (nat, srcnat). Per mapping in
// `hostports`: `[ip daddr HOSTIP] tcp dport H dnat to IP:P`; with snat, `ip saddr IP|0.0.0.0/0
// ip daddr IP masquerade` (and from 127.0.0.1 for IPv4 unless masqAll). Every rule of an
// attachment is commented with its container ID, which is how CHECK counts them and DEL (both
// families) removes them, the reference's as well as ours; one nf_tables transaction per call.
// Beyond the reference: an ADD first removes the attachment's earlier rules (a retried ADD does
// not duplicate them), and where route_localnet is turned on, the guard drops what reaches 127/8
// from elsewhere undnat'ed (kube-proxy's rule, in this table's `localnet_guard` input chain).
// Conditions are the nft syntax subset `ip|ip6 saddr|daddr [!=] ADDR[/LEN]` and
// `iifname|oifname [!=] NAME[*]`.
#include "applets/portmap/host_ports.hpp"

#include <netinet/in.h>  // before the kernel headers, which then defer to it
#include <linux/netfilter.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_tables.h>

#include <algorithm>

namespace cni::portmap {
namespace {

namespace nft = fw::nft;

constexpr std::string_view kTable = "cni_hostport";
constexpr std::string_view kHostPorts = "hostports";
constexpr std::string_view kHostIpHostPorts = "hostip_hostports";
constexpr std::string_view kAll = "hostports_all";
constexpr std::string_view kMasquerading = "masquerading";
constexpr std::string_view kGuard = "localnet_guard";
constexpr std::string_view kGuardComment = "CNI portfwd: block incoming localnet connections";
constexpr std::int32_t kDstNat = -100, kSrcNat = 100, kFilter = 0;

nft::Family family_of(const net::IpAddr& ip) { return ip.is_v4() ? nft::Family::ip : nft::Family::ip6; }
net::IpNet host(const net::IpAddr& ip) { return net::IpNet{ip, ip.bits(), ip.bits()}; }

bool holds_attachment(std::string_view chain) {
    return chain == kHostPorts || chain == kHostIpHostPorts || chain == kMasquerading;
}

// The attachment's rules in the family's table.
Result<std::vector<nft::ListedRule>> rules_of(nft::Family f, std::string_view container_id) {
    CNI_TRY_ASSIGN(auto all, nft::list_rules(f, kTable));
    std::vector<nft::ListedRule> mine;
    for (auto& r : all)
        if (holds_attachment(r.chain) && r.comment == container_id) mine.push_back(std::move(r));
    return mine;
}

// The masquerade rules' sources: the container itself (hairpin) or everything, and localhost.
std::vector<net::IpNet> masquerade_sources(const HostPortSpec& s) {
    bool v4 = s.container.ip.is_v4();
    if (s.masq_all) return {*net::IpNet::parse(v4 ? "0.0.0.0/0" : "::/0")};
    std::vector<net::IpNet> out{host(s.container.ip)};
    if (v4) out.push_back(*net::IpNet::parse("127.0.0.1/32"));
    return out;
}

Result<net::IpNet> condition_address(const std::string& text, bool v4, const std::string& where) {
    auto net = net::IpNet::parse(text.find('/') == std::string::npos ? text + (v4 ? "/32" : "/128") : text);
    if (!net || net->ip.is_v4() != v4) return fail(where + ": invalid " + (v4 ? "IPv4" : "IPv6") + " address " + text);
    return net->masked();
}

}  // namespace

Result<nft::Exprs> nftables_conditions(const std::vector<std::string>& tokens, std::string_view key) {
    const std::string where(key);
    const bool v4 = !key.ends_with("V6");
    nft::Exprs out;
    for (std::size_t i = 0; i < tokens.size();) {
        const std::string& word = tokens[i++];
        auto operand = [&](std::string_view what) -> Result<std::pair<bool, std::string>> {
            bool negated = false;
            if (i < tokens.size() && (tokens[i] == "==" || tokens[i] == "!=")) negated = tokens[i++] == "!=";
            if (i == tokens.size()) return fail(where + ": " + std::string(what) + " needs a value");
            std::string value = tokens[i++];
            if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
            return std::pair{negated, value};
        };
        if (word == "ip" || word == "ip6") {
            if ((word == "ip") != v4) return fail(where + ": \"" + word + "\" addresses do not belong in " + where);
            if (i == tokens.size() || (tokens[i] != "saddr" && tokens[i] != "daddr"))
                return fail(code::unsupported_field, where + ": only \"" + word + " saddr\" and \"" + word +
                                                         " daddr\" are supported in nftables conditions");
            bool source = tokens[i++] == "saddr";
            CNI_TRY_ASSIGN(auto op, operand(word + (source ? " saddr" : " daddr")));
            CNI_TRY_ASSIGN(auto net, condition_address(op.second, v4, where));
            nft::append(out, nft::match_address(v4 ? nft::Family::ip : nft::Family::ip6, source, net, op.first));
        } else if (word == "iifname" || word == "oifname") {
            CNI_TRY_ASSIGN(auto op, operand(word));
            if (op.second.empty() || op.second.size() > 15) return fail(where + ": invalid interface name \"" + op.second + "\"");
            nft::append(out, nft::match_iface(word == "iifname", op.second, op.first));
        } else {
            return fail(code::unsupported_field, where + ": the nftables expression \"" + word +
                                                     "\" is not supported in conditions (ip/ip6 saddr/daddr and "
                                                     "iifname/oifname are)");
        }
    }
    return out;
}

namespace {

Status add_rules(const HostPortSpec& s) {
    const nft::Family f = family_of(s.container.ip);
    return nft::transact("unable to set up nftables rules for port mappings", [&](nft::Batch& tx) -> Status {
        CNI_TRY_ASSIGN(auto stale, rules_of(f, s.container_id));
        tx.add_table(f, kTable, "CNI portmap plugin");
        tx.add_chain(f, kTable, kHostPorts);
        tx.add_chain(f, kTable, kHostIpHostPorts);
        tx.add_chain(f, kTable, kAll);
        tx.flush_chain(f, kTable, kAll);
        tx.add_rule(f, kTable, kAll, nft::verdict_jump(kHostIpHostPorts), {});
        tx.add_rule(f, kTable, kAll, nft::verdict_jump(kHostPorts), {});
        for (auto [chain, hook] : {std::pair{"prerouting", NF_INET_PRE_ROUTING}, std::pair{"output", NF_INET_LOCAL_OUT}}) {
            tx.add_chain(f, kTable, chain, nft::Hook{std::uint32_t(hook), kDstNat});
            tx.flush_chain(f, kTable, chain);
            nft::Exprs entry = s.nft_conditions;
            nft::append(entry, nft::match_local_destination());
            nft::append(entry, nft::verdict_jump(kAll));
            tx.add_rule(f, kTable, chain, entry, {});
        }
        if (s.snat) tx.add_chain(f, kTable, kMasquerading, nft::Hook{NF_INET_POST_ROUTING, kSrcNat});
        for (auto& r : stale) tx.delete_rule(f, kTable, r.chain, r.handle);
        for (auto& m : s.mappings) {
            nft::Exprs rule;
            if (m.host_ip) nft::append(rule, nft::match_address(f, false, host(*m.host_ip)));
            nft::append(rule, nft::match_dport(std::uint8_t(m.proto), std::uint16_t(m.host_port)));
            nft::append(rule, nft::dnat_to(s.container.ip, std::uint16_t(m.container_port)));
            tx.add_rule(f, kTable, kHostPorts, rule, s.container_id);
        }
        if (s.snat) {
            for (auto& src : masquerade_sources(s)) {
                nft::Exprs rule = nft::match_address(f, true, src);
                nft::append(rule, nft::match_address(f, false, host(s.container.ip)));
                nft::append(rule, nft::masquerade());
                tx.add_rule(f, kTable, kMasquerading, rule, s.container_id);
            }
        }
        return {};
    });
}

Status check_rules(const HostPortSpec& s) {
    CNI_TRY_ASSIGN(auto mine, rules_of(family_of(s.container.ip), s.container_id));
    auto count = [&](std::string_view chain) {
        return std::size_t(std::count_if(mine.begin(), mine.end(), [&](auto& r) { return r.chain == chain; }));
    };
    if (count(kHostPorts) + count(kHostIpHostPorts) < s.mappings.size()) return fail("missing hostport rules in \"hostports\" chain");
    if (s.snat && count(kMasquerading) < masquerade_sources(s).size())
        return fail("missing hostport rules in \"masquerading\" chain");
    return {};
}

Status remove_rules(std::string_view container_id) {
    if (!nft::available()) return {};
    for (nft::Family f : {nft::Family::ip, nft::Family::ip6}) {
        CNI_TRY(nft::transact("error deleting nftables rules", [&](nft::Batch& tx) -> Status {
            CNI_TRY_ASSIGN(auto mine, rules_of(f, container_id));
            for (auto& r : mine) tx.delete_rule(f, kTable, r.chain, r.handle);
            return {};
        }));
    }
    return {};
}

}  // namespace

Status nftables_localnet_guard() {
    const nft::Family f = nft::Family::ip;
    return nft::transact("adding the localnet guard rule", [&](nft::Batch& tx) -> Status {
        CNI_TRY_ASSIGN(auto all, nft::list_rules(f, kTable));
        if (std::any_of(all.begin(), all.end(), [](auto& r) { return r.chain == kGuard && r.comment == kGuardComment; })) return {};
        tx.add_table(f, kTable, "CNI portmap plugin");
        tx.add_chain(f, kTable, kGuard, nft::Hook{NF_INET_LOCAL_IN, kFilter, "filter"});
        nft::Exprs rule = nft::match_address(f, true, *net::IpNet::parse("127.0.0.0/8"), true);
        nft::append(rule, nft::match_address(f, false, *net::IpNet::parse("127.0.0.0/8")));
        nft::append(rule, nft::match_ct_none_of(NFT_CT_STATE, NF_CT_STATE_BIT(IP_CT_ESTABLISHED) | NF_CT_STATE_BIT(IP_CT_RELATED)));
        nft::append(rule, nft::match_ct_none_of(NFT_CT_STATUS, IPS_DST_NAT));
        nft::append(rule, nft::verdict_drop());
        tx.add_rule(f, kTable, kGuard, rule, kGuardComment);
        return {};
    });
}

namespace {

class NftablesHostPorts final : public fw::Rules<HostPortSpec> {
public:
    Status setup(const HostPortSpec& s, Rollback& undo) const override {
        undo.push([this, s] { (void)teardown(s); });
        CNI_TRY(add_rules(s));
        return s.localnet_guard ? nftables_localnet_guard() : Status{};
    }
    Status check(const HostPortSpec& s) const override { return check_rules(s); }
    Status teardown(const HostPortSpec& s) const override { return remove_rules(s.container_id); }
};

}  // namespace

const fw::Rules<HostPortSpec>& nftables_host_ports() {
    static const NftablesHostPorts rules;
    return rules;
}

}  // namespace cni::portmap
