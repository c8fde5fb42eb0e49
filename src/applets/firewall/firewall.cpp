// SPDX-License-Identifier: Apache-2.0
// firewall (docs/compatibility.md: firewall): lets the container's traffic through the host's
// FORWARD chain, chained after a main plugin, with the reference's iptables rules (forward.hpp):
// CNI-FORWARD with the admin chain first (iptablesAdminChainName, default CNI-ADMIN), then per
// address of prevResult "replies to it" and "everything from it". ingressPolicy same-bridge or
// isolated (isolation.hpp; the bridge is prevResult's first interface) drops traffic between
// bridges (isolated: also inside the bridge); open does nothing. backend firewalld instead makes
// each address a source of firewalldZone (trusted) over D-Bus; with no backend given, firewalld is
// used when it is on the system bus ($DBUS_SYSTEM_BUS_ADDRESS), iptables otherwise, as the
// reference chooses. The ingress policy is iptables either way. DEL removes the per-address rules
// or sources (from prevResult, as the reference); the shared chains stay. Beyond the reference:
// CHECK fails when an isolation rule is missing or firewalld does not have the source, a failed ADD
// takes back the sources it added, and DEL succeeds when firewalld is gone (its runtime sources
// went with it).
#include "applets/firewall/firewalld.hpp"
#include "applets/firewall/forward.hpp"
#include "applets/firewall/isolation.hpp"
#include "core/applet.hpp"
#include "core/cni/netconf.hpp"
#include "core/fw/driver.hpp"
#include "core/rollback.hpp"

namespace cni::firewall {
namespace {

constexpr std::string_view kFirewallVersions[] = {"0.4.0", "1.0.0", "1.1.0"};

struct FirewallConf {
    NetConf net;
    std::optional<fw::Driver> driver;  // none: firewalld when it runs, else iptables
    std::string admin_chain = "CNI-ADMIN";
    std::string zone = "trusted";
    IngressPolicy policy = IngressPolicy::open;
    std::string backend_name, policy_name;  // as written
};

constexpr std::array kFirewallKeys{
    key<&FirewallConf::backend_name>("backend", "iptables or firewalld; default: firewalld when it is on the system bus"),
    key<&FirewallConf::admin_chain>("iptablesAdminChainName", "the chain CNI-FORWARD jumps to first; default CNI-ADMIN"),
    key<&FirewallConf::zone>("firewalldZone", "the zone the addresses join; default trusted"),
    key<&FirewallConf::policy_name>("ingressPolicy", "open (the default), same-bridge or isolated (iptables either way)"),
};

// An unknown backend is chosen as an empty one is, as in the reference (a config that works with
// the Go plugin must keep working), with a warning naming it.
Result<FirewallConf> parse_firewall_conf(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, load_config(ctx.req.config, kFirewallKeys, "FirewallNetConf"));
    const std::string& backend = c.backend_name;
    const std::string& policy = c.policy_name;
    if (auto named = fw::driver_named(backend); named && named != fw::Driver::nftables) c.driver = named;
    else if (!backend.empty())
        ctx.warn("firewall: unknown backend \"" + backend +
                 "\" (iptables or firewalld); using firewalld if it is running, else iptables");
    if (c.zone.empty()) c.zone = "trusted";
    if (c.admin_chain.empty()) c.admin_chain = "CNI-ADMIN";
    if (policy.empty() || policy == "open") c.policy = IngressPolicy::open;
    else if (policy == "same-bridge") c.policy = IngressPolicy::same_bridge;
    else if (policy == "isolated") c.policy = IngressPolicy::isolated;
    else return fail("unknown ingress policy: \"" + policy + "\"");
    return c;
}

// The admin chain ADD creates and CHECK looks for (iptables names hold 28 characters); DEL does
// not use it, so a name ADD refused does not fail the DEL after it.
Status check_admin_chain(const FirewallConf& c) {
    if (c.admin_chain.size() > 28) return fail("iptablesAdminChainName \"" + c.admin_chain + "\" is longer than 28 characters");
    return {};
}

std::vector<net::IpAddr> addresses(const CniResult& r) {
    std::vector<net::IpAddr> out;
    for (auto& ip : r.ips)
        if (!ip.address.is_nil()) out.push_back(ip.address.ip);
    return out;
}

Result<CniResult> prev_or_fail(const FirewallConf& c) {
    CNI_TRY_ASSIGN(auto prev, require_prev_result(c.net, "must be called as a chained plugin", "failed to parse prevResult: "));
    CNI_TRY(require_ip_addresses(prev));
    return prev;
}

// The driver in effect: the configured one, or firewalld when it is on the bus.
fw::Driver driver_of(const FirewallConf& c, const Context& ctx) {
    return forward().choose(c.driver, [&] { return firewalld_running(ctx.req.getenv("DBUS_SYSTEM_BUS_ADDRESS")); });
}

// The attachment's spec (firewalld's driver talks to $DBUS_SYSTEM_BUS_ADDRESS and warns on stderr).
ForwardSpec forward_spec(const FirewallConf& c, const Context& ctx, std::vector<net::IpAddr> ips) {
    return {.ips = std::move(ips),
            .admin_chain = c.admin_chain,
            .zone = c.zone,
            .network = c.net.name,
            .attachment = {ctx.req.container_id, ctx.req.ifname},
            .bus_address = ctx.req.getenv("DBUS_SYSTEM_BUS_ADDRESS"),
            .warn = ctx.warn};
}

// The bridge an ingress policy isolates: prevResult's first interface.
Result<std::string> bridge_of(IngressPolicy policy, const CniResult& prev) {
    if (prev.interfaces.empty())
        return fail(std::string("interface needs to be set for ingress policy \"") + policy_name(policy) +
                    "\", make sure to chain \"firewall\" plugin with \"bridge\"");
    if (prev.interfaces[0].name.empty()) return fail("got empty bridge name");
    return prev.interfaces[0].name;
}

Result<CniResult> firewall_add(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_firewall_conf(ctx));
    CNI_TRY(check_admin_chain(c));
    CNI_TRY_ASSIGN(auto prev, prev_or_fail(c));
    auto ips = addresses(prev);
    Rollback undo;
    CNI_TRY(forward().setup(driver_of(c, ctx), forward_spec(c, ctx, ips), undo));
    if (c.policy != IngressPolicy::open) {
        CNI_TRY_ASSIGN(auto bridge, bridge_of(c.policy, prev));
        CNI_TRY(isolation().setup(fw::Driver::iptables, {bridge, c.policy, ips}, undo));
    }
    undo.dismiss();
    return prev;
}

Status firewall_del(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_firewall_conf(ctx));
    auto prev = parse_prev_result(c.net);
    if (!prev || !*prev) return {};  // without prevResult there is nothing to know the rules by
    // the chosen driver's alone, as the reference's DEL
    return forward().teardown(driver_of(c, ctx), forward_spec(c, ctx, addresses(**prev)));
}

Status firewall_check(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_firewall_conf(ctx));
    CNI_TRY(check_admin_chain(c));
    CNI_TRY_ASSIGN(auto prev, prev_or_fail(c));
    auto ips = addresses(prev);
    if (c.policy != IngressPolicy::open) {
        CNI_TRY_ASSIGN(auto bridge, bridge_of(c.policy, prev));
        CNI_TRY(isolation().check(fw::Driver::iptables, {bridge, c.policy, ips}));
    }
    return forward().check(driver_of(c, ctx), forward_spec(c, ctx, ips));
}

constexpr auto kFirewallKeyDocs = docs_of(kFirewallKeys);

}  // namespace

extern const Applet firewall_applet{
    .name = "firewall",
    .kind = AppletKind::meta,
    .summary = "accept the container's traffic in FORWARD, optional bridge isolation (chained)",
    .keys = kFirewallKeyDocs,
    .help = "Needs prevResult. Env: DBUS_SYSTEM_BUS_ADDRESS.",
    .versions = kFirewallVersions,
    .add = firewall_add,
    .del = firewall_del,
    .check = firewall_check,
};

}  // namespace cni::firewall
