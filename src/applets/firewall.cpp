// SPDX-License-Identifier: Apache-2.0
// firewall (reference-behaviour 2.14): lets the container's traffic through the host's FORWARD
// chain, chained after a main plugin, with the reference's iptables rules (core/fw/forward):
// CNI-FORWARD with the admin chain first (iptablesAdminChainName, default CNI-ADMIN), then per
// address of prevResult "replies to it" and "everything from it". ingressPolicy same-bridge or
// isolated (the bridge is prevResult's first interface) drops traffic between bridges (isolated:
// also inside the bridge); open does nothing. The firewalld backend is refused with code 2
// rather than ignored, and the automatic choice is iptables (no D-Bus here). DEL removes the
// per-address rules (from prevResult, as the reference); the shared chains stay.
#include "core/applet.hpp"
#include "core/cni/netconf.hpp"
#include "core/fw/forward.hpp"
#include "core/rollback.hpp"

namespace cni {
namespace {

constexpr std::string_view kFirewallVersions[] = {"0.4.0", "1.0.0", "1.1.0"};

struct FirewallConf {
    NetConf net;
    std::string admin_chain = "CNI-ADMIN";
    fw::IngressPolicy policy = fw::IngressPolicy::open;
};

Result<FirewallConf> parse_firewall_conf(const Request& req) {
    auto nc = parse_netconf(req.config, "FirewallNetConf");
    if (!nc) return fail("failed to load netconf: " + nc.error().msg);
    FirewallConf c;
    c.net = std::move(*nc);
    json::Where w{"FirewallNetConf", ""};
    std::string backend, policy, zone;
    CNI_TRY(json::field(c.net.root(), "backend", backend, w));
    CNI_TRY(json::field(c.net.root(), "iptablesAdminChainName", c.admin_chain, w));
    CNI_TRY(json::field(c.net.root(), "firewalldZone", zone, w));
    CNI_TRY(json::field(c.net.root(), "ingressPolicy", policy, w));
    if (backend == "firewalld") return fail(code::unsupported_field, "backend firewalld not supported");
    if (!backend.empty() && backend != "iptables") return fail("unknown firewall backend \"" + backend + "\"");
    if (c.admin_chain.empty()) c.admin_chain = "CNI-ADMIN";
    if (c.admin_chain.size() > 28) return fail("iptablesAdminChainName \"" + c.admin_chain + "\" is longer than 28 characters");
    if (policy.empty() || policy == "open") c.policy = fw::IngressPolicy::open;
    else if (policy == "same-bridge") c.policy = fw::IngressPolicy::same_bridge;
    else if (policy == "isolated") c.policy = fw::IngressPolicy::isolated;
    else return fail("unknown ingress policy: \"" + policy + "\"");
    return c;
}

std::vector<IpAddr> addresses(const CniResult& r) {
    std::vector<IpAddr> out;
    for (auto& ip : r.ips) out.push_back(ip.address.ip);
    return out;
}

Result<CniResult> prev_or_fail(const FirewallConf& c) {
    auto prev = parse_prev_result(c.net);
    if (!prev) return fail("failed to parse prevResult: " + prev.error().msg);
    if (!*prev) return fail("must be called as a chained plugin");
    return std::move(**prev);
}

Result<CniResult> firewall_add(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_firewall_conf(ctx.req));
    CNI_TRY_ASSIGN(auto prev, prev_or_fail(c));
    auto ips = addresses(prev);
    Rollback undo;
    undo.push([&] { (void)fw::teardown_forward(ips); });
    CNI_TRY(fw::setup_forward(ips, c.admin_chain));
    if (c.policy != fw::IngressPolicy::open) {
        const char* name = c.policy == fw::IngressPolicy::isolated ? "isolated" : "same-bridge";
        if (prev.interfaces.empty())
            return fail(std::string("interface needs to be set for ingress policy \"") + name +
                        "\", make sure to chain \"firewall\" plugin with \"bridge\"");
        if (prev.interfaces[0].name.empty()) return fail("got empty bridge name");
        CNI_TRY(fw::setup_isolation(prev.interfaces[0].name, c.policy, ips));
    }
    undo.dismiss();
    return prev;
}

Status firewall_del(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_firewall_conf(ctx.req));
    auto prev = parse_prev_result(c.net);
    if (!prev || !*prev) return {};  // without prevResult there is nothing to know the rules by
    return fw::teardown_forward(addresses(**prev));
}

Status firewall_check(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_firewall_conf(ctx.req));
    CNI_TRY_ASSIGN(auto prev, prev_or_fail(c));
    return fw::check_forward(addresses(prev), c.admin_chain);
}

}  // namespace

extern const Applet firewall_applet{
    .name = "firewall",
    .kind = AppletKind::meta,
    .summary = "accept the container's traffic in FORWARD, optional bridge isolation (chained)",
    .help = "Keys: backend (iptables; firewalld is refused), iptablesAdminChainName (CNI-ADMIN), ingressPolicy "
            "(open, same-bridge, isolated). Needs prevResult.",
    .versions = kFirewallVersions,
    .add = firewall_add,
    .del = firewall_del,
    .check = firewall_check,
};

}  // namespace cni
