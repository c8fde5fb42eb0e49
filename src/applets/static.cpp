// SPDX-License-Identifier: Apache-2.0
// static IPAM (docs/compatibility.md: static): returns the configured addresses, routes and DNS.
// CNI_ARGS IP (comma-separated CIDRs) is appended and CNI_ARGS GATEWAY applied to those of them
// containing it (the configured ones are parsed later, so the reference never matches them);
// args.cni.ips and then runtimeConfig.ips replace the addresses. No state: DEL
// does nothing; CHECK compares the configured gateways with the prevResult.
#include "core/applet.hpp"
#include "core/cni/cni_args.hpp"
#include "core/cni/netconf.hpp"
#include "core/strings.hpp"

namespace cni::static_ {
namespace {

struct StaticAddress {
    std::string text;  // CIDR as written
    std::optional<net::IpAddr> gateway;
    std::optional<net::IpNet> address;  // parsed from text; configured ones only at the end
};

struct StaticConf {
    std::string cni_version;
    std::vector<StaticAddress> addresses;
    std::vector<Route> routes;
    Dns dns;
};

Status decode(const json::Value& v, StaticAddress& out, const json::Where& w) {
    CNI_TRY(json::expect_object(v, w, "main.Address"));
    auto aw = w.in("Address");
    CNI_TRY(json::field(v, "address", out.text, aw));
    CNI_TRY(json::field(v, "gateway", out.gateway, aw));
    return {};
}

}  // namespace
}  // namespace cni::static_

template <>
struct cni::json::GoName<std::vector<cni::static_::StaticAddress>> {
    static constexpr std::string_view value = "[]main.Address";
};

namespace cni::static_ {
namespace {

constexpr std::array kStaticKeys{
    key<&StaticConf::addresses>("addresses", "[{\"address\": CIDR, \"gateway\": IP}]"),
    key_with<&StaticConf::routes, decode_routes>("routes", "[]*types.Route", "[{\"dst\": CIDR, \"gw\": IP}]"),
    key_with<&StaticConf::dns, decode_dns>("dns", "types.DNS", "{nameservers, domain, search, options}"),
};

// The reference's message for each place a CIDR can come from.
Result<net::IpNet> parse_cidr(std::string_view text, std::string_view field) {
    auto n = net::IpNet::parse(text);
    if (!n) return fail("the '" + std::string(field) + "' field is expected to be in CIDR notation, got: '" + std::string(text) + "'");
    return *n;
}

// args.cni.ips / runtimeConfig.ips: CIDRs that replace the configured addresses.
Status replace_addresses(const json::Value* holder, StaticConf& c, const json::Where& w) {
    if (!holder || !holder->IsObject()) return {};
    std::vector<std::string> ips;
    CNI_TRY(json::field(*holder, "ips", ips, w));
    if (ips.empty()) return {};
    c.addresses.clear();
    for (auto& ip : ips) {
        auto net = net::IpNet::parse(ip);
        if (!net) return fail("an entry in the 'ips' field is NOT in CIDR notation, got: '" + ip + "'");
        c.addresses.push_back(StaticAddress{ip, std::nullopt, net});
    }
    return {};
}

Result<StaticConf> parse_static_conf(const Request& req) {
    CNI_TRY_ASSIGN(auto nc, parse_ipam_netconf(req.config, "main.Net", "main.IPAMConfig"));
    StaticConf c{nc.cni_version, {}, {}, {}};
    json::Where top{"Net", ""};
    const json::Value* ipam = nc.member("ipam");
    if (!ipam || ipam->IsNull()) return fail("IPAM config missing 'ipam' key");
    CNI_TRY(json::expect_object(*ipam, top.at("ipam"), "main.IPAMConfig"));
    auto iw = top.at("ipam").in("IPAMConfig");
    CNI_TRY(read_keys(*ipam, kStaticKeys, c, iw));

    std::string env_ip, env_gw;
    CniArgField fields[] = {
        {"IP", [&](std::string_view v) -> Status { env_ip = v; return {}; }},
        {"GATEWAY", [&](std::string_view v) -> Status { env_gw = v; return {}; }},
    };
    CNI_TRY(load_cni_args(req.args, fields));
    if (!env_ip.empty())
        for (auto item : split(env_ip, ',')) {
            auto text = trim_space(item);
            CNI_TRY_ASSIGN(auto net, parse_cidr(text, "ip"));
            c.addresses.push_back(StaticAddress{std::string(text), std::nullopt, net});
        }
    if (!env_gw.empty())
        for (auto item : split(env_gw, ',')) {
            auto gw = net::IpAddr::parse(trim_space(item));
            if (!gw) return fail("invalid gateway address: " + std::string(item));
            for (auto& a : c.addresses)  // configured addresses are not parsed yet: CNI_ARGS ones only
                if (a.address && a.address->contains(*gw)) a.gateway = *gw;
        }
    CNI_TRY_ASSIGN(auto args, json::anonymous_struct(nc.root(), "args", top, R"(struct { A *main.IPAMArgs "json:\"cni\"" })"));
    CNI_TRY_ASSIGN(auto a, json::struct_member(args.object, "cni", args.inner, "main.IPAMArgs"));
    CNI_TRY(replace_addresses(a, c, args.inner.at("cni").in("IPAMArgs")));
    CNI_TRY_ASSIGN(auto rc, json::anonymous_struct(nc.root(), "runtimeConfig", top,
                                                   R"(struct { IPs []string "json:\"ips,omitempty\"" })"));
    CNI_TRY(replace_addresses(rc.object, c, rc.inner));

    int v4 = 0, v6 = 0;
    for (auto& a : c.addresses) {
        if (!a.address) {
            CNI_TRY_ASSIGN(a.address, parse_cidr(a.text, "address"));
        }
        (a.address->ip.is_v4() ? v4 : v6)++;
    }
    if (v4 > 1 || v6 > 1) {
        auto ok = version_at_least(c.cni_version, "0.3.0");
        if (!ok || !*ok) return fail("CNI version " + c.cni_version + " does not support more than 1 address per family");
    }
    return c;
}

Result<CniResult> static_add(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_static_conf(ctx.req));
    CNI_TRY(require_route_dsts(c.routes));
    CniResult r;
    for (auto& a : c.addresses) r.ips.push_back(IpConfig{std::nullopt, *a.address, a.gateway});
    r.routes = c.routes;
    r.dns = c.dns;
    return r;
}

Status static_check(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_static_conf(ctx.req));
    CNI_TRY_ASSIGN(auto nc, load_netconf(ctx.req.config));  // Go decodes the prevResult through types.NetConf
    CNI_TRY_ASSIGN(auto prev, require_prev_result(nc, "Required prevResult missing"));
    for (auto& a : c.addresses)
        for (auto& ip : prev.ips)
            if (ip.address.ip == a.address->ip) {
                if (!a.gateway || (ip.gateway && *ip.gateway == *a.gateway)) break;
                return fail("static: Failed to match addr " + ip.address.ip.str() + " on interface " + ctx.req.ifname);
            }
    return {};
}

constexpr auto kStaticKeyDocs = docs_of(kStaticKeys);

}  // namespace

extern const Applet static_applet{
    .name = "static",
    .kind = AppletKind::ipam,
    .summary = "return statically configured addresses",
    .keys = kStaticKeyDocs,
    .help = "Returns fixed addresses; no state. CNI_ARGS IP=cidr[,cidr] appends, GATEWAY=ip[,ip] sets the gateway of the "
            "addresses containing it; args.cni.ips and runtimeConfig ips (CIDRs) replace the addresses.",
    .versions = kAllVersions,
    .add = static_add,
    .check = static_check,
};

}  // namespace cni::static_
