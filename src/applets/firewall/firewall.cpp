// SPDX-License-Identifier: Apache-2.0
// firewall (docs/compatibility.md: firewall): lets the container's traffic through the host's
// FORWARD chain, chained after a main plugin, with the reference's iptables rules (forward.hpp):
// CNI-FORWARD with the admin chain first (iptablesAdminChainName, default CNI-ADMIN), then per
// address of prevResult "replies to it" and "everything from it". ingressPolicy same-bridge or
// isolated (isolation.hpp; the bridge is prevResult's first interface) drops traffic between
// bridges (isolated: also inside the bridge); open does nothing. backend firewalld instead makes
// each address a source of firewalldZone (trusted) over D-Bus; with no backend given, firewalld
// is used when it is on the system bus ($DBUS_SYSTEM_BUS_ADDRESS), iptables otherwise, as the
// reference chooses. The ingress policy is iptables then. DEL removes the per-address rules or
// sources (from prevResult, as the reference); the shared chains stay. Beyond the reference:
// backend nftables writes the same rules in a table of the applet's own (inet
// cni_plugins_firewall), and is chosen with no backend given where iptables is unusable and
// nf_tables answers; DEL removes the attachment's rules in iptables and nftables whichever is
// chosen (a node may have switched: by its record, else read), GC those of the network's attachments not in
// cni.dev/valid-attachments, and STATUS fails with code 50 when no backend is usable. CHECK fails
// when an isolation rule is missing or firewalld does not have the source, a failed ADD takes back
// the sources it added, and DEL succeeds when firewalld is gone (its runtime sources went with it).
#include "applets/firewall/firewalld.hpp"
#include "applets/firewall/forward.hpp"
#include "applets/firewall/isolation.hpp"
#include "core/applet.hpp"
#include "core/cni/netconf.hpp"
#include "core/fw/driver.hpp"
#include "core/fw/iptables.hpp"
#include "core/fw/nftables.hpp"
#include "core/rollback.hpp"

namespace cni::firewall {
namespace {

constexpr std::string_view kFirewallVersions[] = {"0.4.0", "1.0.0", "1.1.0"};

struct FirewallConf {
    NetConf net;
    std::optional<fw::Driver> driver;  // none: firewalld when it runs, else iptables, else nftables
    std::string admin_chain = "CNI-ADMIN";
    std::string zone = "trusted";
    IngressPolicy policy = IngressPolicy::open;
    std::string backend_name, policy_name;  // as written
};

constexpr std::array kFirewallKeys{
    key<&FirewallConf::backend_name>("backend", "iptables, nftables (beyond the reference: table inet cni_plugins_firewall) or "
                                                "firewalld; default: firewalld when it is on the system bus, else iptables "
                                                "when usable, else nftables when nf_tables answers"),
    key<&FirewallConf::admin_chain>("iptablesAdminChainName", "the chain CNI-FORWARD (nftables: cni-forward) jumps to first; "
                                                              "default CNI-ADMIN"),
    key<&FirewallConf::zone>("firewalldZone", "the zone the addresses join; default trusted"),
    key<&FirewallConf::policy_name>("ingressPolicy", "open (the default), same-bridge or isolated (in nftables with that "
                                                     "backend, else iptables)"),
};

// An unknown backend is chosen as an empty one is, as in the reference (a config that works with
// the Go plugin must keep working), with a warning naming it.
Result<FirewallConf> parse_firewall_conf(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, load_config(ctx.req.config, kFirewallKeys, "FirewallNetConf"));
    const std::string& backend = c.backend_name;
    const std::string& policy = c.policy_name;
    if (auto named = fw::driver_named(backend)) c.driver = named;
    else if (!backend.empty())
        ctx.warn("firewall: unknown backend \"" + backend +
                 "\" (iptables, nftables or firewalld); using firewalld if it is running, else iptables, else nftables");
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

// The driver in effect: the configured one, or firewalld when it is on the bus, else iptables when
// usable, else nftables when nf_tables answers.
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

// Where the ingress policy goes: nftables with the nftables driver, else iptables (firewalld's too).
fw::Driver isolation_driver(fw::Driver forward_driver) {
    return forward_driver == fw::Driver::nftables ? fw::Driver::nftables : fw::Driver::iptables;
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
    auto driver = driver_of(c, ctx);
    CNI_TRY(forward().setup(driver, forward_spec(c, ctx, ips), undo));
    if (c.policy != IngressPolicy::open) {
        CNI_TRY_ASSIGN(auto bridge, bridge_of(c.policy, prev));
        CNI_TRY(isolation().setup(isolation_driver(driver), {bridge, c.policy, ips}, undo));
    }
    undo.dismiss();
    return prev;
}

Status firewall_del(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_firewall_conf(ctx));
    auto prev = parse_prev_result(c.net);
    if (!prev || !*prev) return {};  // without prevResult there is nothing to know the rules by
    // Where the attachment's record is (a node may have switched driver since the ADD), by the
    // record alone, so the cost does not grow with other attachments' rules; with no record
    // anywhere (the reference's ADD, a DEL run again) the chosen driver's, as the reference's DEL,
    // and those of the kernel's other driver, read. All are tried, the first error stands.
    auto chosen = driver_of(c, ctx);
    auto spec = forward_spec(c, ctx, addresses(**prev));
    bool in_iptables = forward_recorded(fw::Driver::iptables, spec), in_nft = forward_recorded(fw::Driver::nftables, spec);
    auto wanted = [&](fw::Driver d) {
        if (!in_iptables && !in_nft) return true;
        return d == fw::Driver::iptables ? in_iptables : d == fw::Driver::nftables ? in_nft : true;  // firewalld: no record
    };
    Status first = wanted(chosen) ? forward().teardown(chosen, spec) : Status{};
    for (fw::Driver d : {fw::Driver::iptables, fw::Driver::nftables})
        if (auto st = d == chosen || !wanted(d) ? Status{} : forward().teardown(d, spec); !st && first) first = std::move(st);
    return first;
}

// The per-address rules of the network's attachments not listed, in every driver that keeps them.
Status firewall_gc(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_firewall_conf(ctx));
    if (!c.net.valid_attachments) return {};
    return forward().gc_all(c.net.name, *c.net.valid_attachments);
}

// Code 50 when the driver ADD would use cannot work here (with no backend given, none can).
Status firewall_status(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_firewall_conf(ctx));
    auto driver = driver_of(c, ctx);
    bool usable = driver == fw::Driver::firewalld  ? firewalld_running(ctx.req.getenv("DBUS_SYSTEM_BUS_ADDRESS"))
                  : driver == fw::Driver::nftables ? fw::nft::available()
                                                   : fw::iptables_usable();
    if (usable) return {};
    if (!c.driver)
        return fail(code::plugin_not_available, "firewall: no firewall backend is usable: firewalld is not on the system bus, "
                                                "iptables is not usable and nf_tables does not answer");
    return fail(code::plugin_not_available, "firewall: backend " + std::string(fw::name_of(driver)) + " is not usable here");
}

Status firewall_check(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_firewall_conf(ctx));
    CNI_TRY(check_admin_chain(c));
    CNI_TRY_ASSIGN(auto prev, prev_or_fail(c));
    auto ips = addresses(prev);
    auto driver = driver_of(c, ctx);
    if (c.policy != IngressPolicy::open) {
        CNI_TRY_ASSIGN(auto bridge, bridge_of(c.policy, prev));
        CNI_TRY(isolation().check(isolation_driver(driver), {bridge, c.policy, ips}));
    }
    return forward().check(driver, forward_spec(c, ctx, ips));
}

constexpr auto kFirewallKeyDocs = docs_of(kFirewallKeys);

}  // namespace

extern const Applet firewall_applet{
    .name = "firewall",
    .kind = AppletKind::meta,
    .summary = "accept the container's traffic in FORWARD, optional bridge isolation (chained)",
    .keys = kFirewallKeyDocs,
    .help = "Needs prevResult. Env: DBUS_SYSTEM_BUS_ADDRESS. backend nftables writes table inet cni_plugins_firewall: "
            "forward jumps to cni-forward (the admin chain first, then each address's accepts) and, for ingressPolicy, "
            "to cni-isolation-stage-1/2.",
    .versions = kFirewallVersions,
    .add = firewall_add,
    .del = firewall_del,
    .check = firewall_check,
    .status = firewall_status,
    .gc = firewall_gc,
};

}  // namespace cni::firewall
