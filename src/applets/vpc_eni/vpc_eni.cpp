// SPDX-License-Identifier: Apache-2.0
// vpc-eni (docs/vpc-eni.md): the routed datapath of the AWS VPC CNI. A pod's address belongs to
// one of the node's ENIs (the node file says which) and is reached by routing, with no bridge and
// no ARP between pod and host. Per pod: a veth pair whose host end is named after the SHA-1 of
// "<namespace>.<pod>" (the container id without them); in the pod the address as a /32,
// 169.254.1.1 as a link route, the default route through it and a permanent neighbour entry for
// it with the host end's MAC (for an IPv6 ENI's address: the /128, and fe80::1 as gateway and
// neighbour); on the host forwarding, a host route to the pod over the veth (never over an
// address the node routes over another link), the rule "to <pod> lookup main pref 512", and for a
// secondary ENI's address (device number N > 0; one of its prefixes alike) "from <pod> lookup N+1
// pref 1536", so the pod's
// traffic leaves through its own ENI. A failed ADD undoes what it did, and only that. DEL acts
// only on the addresses vpc-eni-ipam holds for the network and the container's interface (never
// on a prevResult's word), removes only the rules and route vpc-eni makes for them, and releases
// them last, so a DEL cut short is finished by the next; it is idempotent and works when the
// namespace or the veth is gone. ADD and DEL remove a host link of the veth's name only when it
// is a veth into the pod's namespace. CHECK verifies every piece; STATUS goes to the IPAM; GC removes
// the rules of the network's addresses whose attachments are gone, then the IPAM releases them.
// `vpc-eni node-setup FILE` / `node-teardown [FILE]` prepare the node (node.cpp).
#include <linux/fib_rules.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>

#include <algorithm>

#include "applets/vpc_eni/node.hpp"
#include "applets/vpc_eni/node_file.hpp"
#include "applets/vpc_eni/reservations.hpp"
#include "applets/vpc_eni/sha1.hpp"
#include "core/applet.hpp"
#include "core/cni/cni_args.hpp"
#include "core/cni/netconf.hpp"
#include "core/iface/configure.hpp"
#include "core/iface/link_result.hpp"
#include "core/iface/remove.hpp"
#include "core/iface/sockets.hpp"
#include "core/iface/veth.hpp"
#include "core/ipam/delegate.hpp"
#include "core/nl/addr.hpp"
#include "core/nl/link.hpp"
#include "core/nl/neigh.hpp"
#include "core/nl/route.hpp"
#include "core/nl/rule.hpp"
#include "core/os/sysctl.hpp"
#include "core/rollback.hpp"

namespace cni::vpc_eni {
namespace {

struct VpcEniConf {
    NetConf net;
    std::string node_file;
    std::string veth_prefix = "eni";
    std::int64_t mtu = 9001;
};

constexpr std::array kVpcEniKeys{
    key<&VpcEniConf::node_file>("nodeFile", "the node file: the node's ENIs and their addresses; root's own, under /etc/cni/ (docs/vpc-eni.md)"),
    key<&VpcEniConf::veth_prefix>("vethPrefix", "the host veth's name before its 11 hex digits; default eni"),
    key<&VpcEniConf::mtu>("mtu", "both veth ends' MTU; default 9001"),
};

constexpr std::uint32_t kToPodPriority = 512;     // to <pod> lookup main
constexpr std::uint32_t kFromPodPriority = 1536;  // from <pod> lookup <ENI's table>
constexpr std::uint32_t kFirstEniTable = 2, kLastEniTable = 251;  // device numbers 1..250

constexpr std::string_view kEniIpam = "vpc-eni-ipam";

std::string not_eni_ipam(const VpcEniConf& c) { return "vpc-eni: ipam type \"" + c.net.ipam_type + "\" is not vpc-eni-ipam"; }

// vpc-eni and its vpc-eni-ipam read one node file: the one whose addresses are routed is the one
// they are reserved from.
Status same_node_file(const Request& req, const VpcEniConf& c) {
    CNI_TRY_ASSIGN(auto ipam, read_eni_ipam(req));
    if (ipam.ipam.node_file == c.node_file) return {};
    return fail("vpc-eni: nodeFile \"" + c.node_file + "\" is not ipam.nodeFile \"" + ipam.ipam.node_file +
                "\": both name the one node file");
}

// The config; every verb but DEL also needs vpc-eni-ipam (`eni_ipam`), among whose reservations
// DEL finds a pod's addresses, with the same nodeFile.
Result<VpcEniConf> parse_conf(const Request& req, bool eni_ipam = true) {
    CNI_TRY_ASSIGN(auto c, load_config(req.config, kVpcEniKeys));
    if (eni_ipam && c.net.ipam_type != kEniIpam)
        return fail(not_eni_ipam(c) + ": DEL finds a pod's addresses among vpc-eni-ipam's reservations");
    if (eni_ipam) CNI_TRY(same_node_file(req, c));
    if (c.veth_prefix.empty() || c.veth_prefix.size() > 4)
        return fail("vpc-eni: vethPrefix \"" + c.veth_prefix + "\" must be 1 to 4 characters (the name has 15)");
    if (c.mtu < 68 || c.mtu > 9001) return fail("vpc-eni: mtu " + std::to_string(c.mtu) + " is not within 68..9001");
    return c;
}

// The config's vethPrefix is the node file's: the veths of the node's pods are the node's choice.
Status same_veth_prefix(const VpcEniConf& c, const NodeFile& node) {
    if (c.veth_prefix == node.veth_prefix) return {};
    return fail("vpc-eni: vethPrefix \"" + c.veth_prefix + "\" is not the node file's (\"" + node.veth_prefix + "\", " +
                node.path + "): the node's pods' veths are named by the node");
}

// The host end's name: the prefix and the first 11 hex digits of SHA-1("<namespace>.<pod>"),
// or of the container id when CNI_ARGS names no pod.
Result<std::string> host_veth_name(const Request& req, const std::string& prefix) {
    std::string ns, pod;
    auto keep = [](std::string& into) {
        return [&into](std::string_view v) -> Status {
            into = v;
            return {};
        };
    };
    auto ignore = [](std::string_view) -> Status { return {}; };
    CniArgField fields[] = {{"K8S_POD_NAMESPACE", keep(ns)}, {"K8S_POD_NAME", keep(pod)},
                            {"K8S_POD_INFRA_CONTAINER_ID", ignore}, {"K8S_POD_UID", ignore}};
    CNI_TRY(load_cni_args(req.args, fields));
    std::string key = !ns.empty() && !pod.empty() ? ns + "." + pod : req.container_id;
    return prefix + sha1_hex(key).substr(0, 11);
}

net::IpNet host_prefix(const net::IpAddr& ip) { return net::IpNet{ip, ip.bits(), ip.bits()}; }
int family_of(const net::IpAddr& ip) { return ip.is_v4() ? AF_INET : AF_INET6; }
// The pod's gateway, reached through the host end without ARP or ND.
net::IpAddr pod_gateway(const net::IpAddr& pod) { return *net::IpAddr::parse(pod.is_v4() ? "169.254.1.1" : "fe80::1"); }

nl::RuleSpec to_pod_rule(const net::IpAddr& ip) {
    nl::RuleSpec r;
    r.dst = host_prefix(ip);
    r.priority = kToPodPriority;
    r.table = RT_TABLE_MAIN;
    return r;
}
nl::RuleSpec from_pod_rule(const net::IpAddr& ip, std::uint32_t table) {
    nl::RuleSpec r;
    r.src = host_prefix(ip);
    r.priority = kFromPodPriority;
    r.table = table;
    return r;
}
nl::RuleSpec from_pod_rule(const net::IpAddr& ip, const Eni& eni) { return from_pod_rule(ip, eni.table()); }
nl::RouteSpec host_route(const net::IpAddr& ip, int veth_index) {
    nl::RouteSpec r;
    r.dst = host_prefix(ip);
    r.oif = veth_index;
    r.scope = RT_SCOPE_LINK;
    return r;
}

// In the pod: the address as a host prefix, the gateway as a link route, the default route
// through it, and the gateway's permanent neighbour entry (the host end's MAC).
Status configure_pod(const nl::Socket& s, const nl::LinkInfo& link, const net::IpAddr& ip, const std::string& host_mac) {
    const net::IpAddr gw = pod_gateway(ip);
    CNI_TRY(nl::add_addr(s, link.index, link.name, host_prefix(ip), ip.is_v4() ? 0 : IFA_F_NODAD));
    if (ip.is_v4()) {  // fe80::1 is on-link already
        nl::RouteSpec to_gw;
        to_gw.dst = host_prefix(gw);
        to_gw.oif = link.index;
        to_gw.scope = RT_SCOPE_LINK;
        CNI_TRY(nl::add_route(s, to_gw));
    }
    nl::RouteSpec def;
    def.dst = net::IpNet{*net::IpAddr::parse(ip.is_v4() ? "0.0.0.0" : "::"), 0, ip.bits()};
    def.gw = gw;
    def.oif = link.index;
    CNI_TRY(nl::add_route(s, def));
    return nl::set_neigh(s, nl::NeighSpec{family_of(ip), link.index, gw, host_mac, NUD_PERMANENT, 0});
}

// On the host: the route to the pod over the veth, and its rules. A route to the address over
// any other link (another program's, or a pod's the IPAM does not know of) is left alone and the
// ADD refused, never taken over; a rule that is there already is kept, and only the rules this
// ADD adds are pushed onto `undo`.
Status configure_host(const Context& ctx, const nl::Socket& s, const nl::LinkInfo& veth, const net::IpAddr& ip, const Eni& eni, Rollback& undo) {
    if (auto there = nl::route_to(s, ip); there && there->dst == host_prefix(ip) && there->oif != veth.index) {
        ctx.step("vpc-eni: the route to " + ip.str() + " already there: " + nl::describe(*there));  // not the error's to tell
        return fail("vpc-eni: the node already routes " + ip.str() + " over another link: left as it is, and the address not used");
    }
    CNI_TRY(nl::add_route(s, host_route(ip, veth.index)));
    std::vector<nl::RuleSpec> rules{to_pod_rule(ip)};
    if (eni.device_number > 0) rules.push_back(from_pod_rule(ip, eni));
    for (auto& rule : rules) {
        CNI_TRY_ASSIGN(bool added, nl::add_rule_if_absent(s, rule));
        if (added) undo.push([&s, rule] { (void)nl::del_rules(s, rule); });
    }
    return {};
}

// The host's rules of each family, dumped once per call when first needed: a DEL or GC of many
// addresses deletes their rules from that one dump (nl::del_rules_from), not a dump per rule.
struct HostRules {
    nl::Socket sock;
    std::optional<nl::RuleDump> v4, v6;
    Result<nl::RuleDump*> of(int family) {
        auto& dump = family == AF_INET ? v4 : v6;
        if (!dump) CNI_TRY_ASSIGN(dump, nl::dump_rules(sock, family));
        return &*dump;
    }
};

// Removes the host's rules of `ip` that vpc-eni sets, exactly as it sets them: to it, lookup main,
// at 512; from it at 1536 into any ENI's table (2..251), not only the one its ENI has now: the
// ENI's device number may have changed since ADD (or the address moved to another ENI, or the
// node file no longer lists it), and the old table's rule would send the address's next holder
// out of the wrong ENI. A rule of another priority or table stays, and so does one with a
// selector of its own (an input interface, a mark...): when such a rule comes before ours, ours
// is left too, with a warning (the kernel would delete that one in its place).
Status remove_rules(const Context& ctx, HostRules& host, const net::IpAddr& ip) {
    std::vector<nl::RuleSpec> ours{to_pod_rule(ip)};
    CNI_TRY_ASSIGN(auto* dump, host.of(family_of(ip)));
    for (auto& r : nl::lookups(*dump))
        if (r.priority == kFromPodPriority && r.src == host_prefix(ip) && r.table >= kFirstEniTable && r.table <= kLastEniTable &&
            std::ranges::none_of(ours, [&](const nl::RuleSpec& o) { return o.table == r.table; }))
            ours.push_back(from_pod_rule(ip, r.table));
    for (auto& rule : ours) {
        CNI_TRY_ASSIGN(bool gone, nl::del_rules_from(host.sock, *dump, rule));
        if (!gone)
            ctx.warn("vpc-eni: the rule " + nl::describe(rule) + " is left: another program's rule with more selectors "
                     "comes first, and the kernel would delete that one instead");
    }
    return {};
}


// The ENI of each of the IPAM's addresses: every one must be an ENI's secondary or prefix address.
Result<std::vector<const Eni*>> enis_of(const NodeFile& node, const std::vector<IpConfig>& ips) {
    std::vector<const Eni*> enis;
    for (auto& ip : ips) {
        const Eni* eni = node.eni_of(ip.address.ip);
        if (!eni)
            return fail("vpc-eni: IPAM gave " + ip.address.ip.str() + ", which is no ENI's secondary or prefix address in " + node.path);
        enis.push_back(eni);
    }
    return enis;
}

// The result as the pod sees it: the host end and the pod's interface, each address a host
// prefix behind the pod's gateway, and no routes of the IPAM's.
void route_result(CniResult& result, const iface::VethPair& pair, const Request& r) {
    result.interfaces = {iface::host_interface(pair.host), iface::container_interface(r, pair.container.mac)};
    for (auto& ip : result.ips) {
        ip.interface = 1;
        ip.address = host_prefix(ip.address.ip);
        ip.gateway = pod_gateway(ip.address.ip);
    }
    result.routes.clear();
}

Result<CniResult> vpc_eni_add(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_conf(ctx.req));
    CNI_TRY_ASSIGN(auto node, load_configured_node_file(c.node_file));
    CNI_TRY(node_is_set_up(node));
    CNI_TRY(same_veth_prefix(c, node));
    CNI_TRY_ASSIGN(auto host_name, host_veth_name(ctx.req, c.veth_prefix));
    const Request& r = ctx.req;
    CNI_TRY_ASSIGN(auto io, iface::open_host_and_container(ctx));

    Rollback undo;
    CNI_TRY_ASSIGN(auto result, ipam::allocate(ctx, c.net.ipam_type, undo));
    CNI_TRY_ASSIGN(auto enis, enis_of(node, result.ips));
    CNI_TRY(iface::enable_forwarding(io.host, result.ips));
    CNI_TRY_ASSIGN(auto pair, iface::setup_named_veth(io, os::SysctlDir::open("net/ipv6/conf"), r.ifname, host_name, c.mtu));
    undo.push([&] { (void)nl::delete_link(io.host, host_name); });
    CNI_TRY(nl::set_link_up(io.container, pair.container, true));
    for (auto& ip : result.ips) CNI_TRY(configure_pod(io.container, pair.container, ip.address.ip, pair.host.mac));
    for (std::size_t i = 0; i < result.ips.size(); ++i)
        CNI_TRY(configure_host(ctx, io.host, pair.host, result.ips[i].address.ip, *enis[i], undo));
    route_result(result, pair, r);
    if (!c.net.dns.empty()) result.dns = c.net.dns;
    undo.dismiss();
    return result;
}

// DEL's removal of the pod's host veth, its routes with it: only a veth to CNI_IFNAME in the
// container's namespace. A link of that name with its peer elsewhere (another sandbox's of the
// same pod, or another interface of this container: another attachment's), or not a veth, stays,
// and so does one when DEL has no namespace to tell by (a pod's veth goes with its namespace).
Status remove_host_veth(const Context& ctx, const nl::Socket& host, const std::string& name) {
    CNI_TRY_ASSIGN(auto veth, nl::find_link(host, name));
    if (!veth) return {};
    CNI_TRY_ASSIGN(auto pod, iface::open_container_if_exists(ctx));
    bool ours = false;
    if (pod) CNI_TRY_ASSIGN(ours, iface::veth_to(host, *veth, *pod, ctx.req.ifname));
    if (!ours) {
        ctx.warn("vpc-eni: " + name + " is left as it is: it is not a veth to " +
                 (pod ? ctx.req.ifname + " in the container's namespace" : "a namespace this DEL was given"));
        return {};
    }
    CNI_TRY(nl::delete_link(host, *veth));
    return {};
}

// The node file DEL reads: vpc-eni-ipam's, whose store holds the addresses; nodeFile with another IPAM.
Result<std::string> del_node_file(const Context& ctx, const VpcEniConf& c, bool eni_ipam) {
    if (!eni_ipam) return c.node_file;
    CNI_TRY_ASSIGN(auto ipam, read_eni_ipam(ctx.req));
    if (ipam.ipam.node_file != c.node_file)
        ctx.warn("vpc-eni: nodeFile \"" + c.node_file + "\" is not ipam.nodeFile \"" + ipam.ipam.node_file +
                 "\": DEL reads ipam.nodeFile, whose store holds the addresses");
    return ipam.ipam.node_file;
}

// DEL, in an order a second DEL can finish: the rules of the addresses vpc-eni-ipam holds for
// this container's interface in the network's store, the veth (if it is this container's) and
// its routes, the pod's end, and only then the addresses' release (released first, they could no
// longer be found). With another IPAM (whose ADD vpc-eni refuses), the same through nodeFile,
// vpc-eni releasing them itself, so the pod can still be deleted and nothing is left.
Status vpc_eni_del(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_conf(ctx.req, false));
    const bool eni_ipam = c.net.ipam_type == kEniIpam;
    if (!eni_ipam) ctx.warn(not_eni_ipam(c) + ": DEL finds the container's addresses through nodeFile, releases them itself "
                            "and runs no IPAM");
    CNI_TRY_ASSIGN(auto file, del_node_file(ctx, c, eni_ipam));
    auto node = load_configured_node_file(file);  // the veths' prefix; DEL goes on without it
    CNI_TRY_ASSIGN(auto ips, reserved_for(ctx, file, c.net.name));
    CNI_TRY_ASSIGN(auto sock, nl::Socket::open());
    HostRules host{std::move(sock), {}, {}};
    for (auto& ip : ips) CNI_TRY(remove_rules(ctx, host, ip));
    CNI_TRY_ASSIGN(auto host_name, host_veth_name(ctx.req, node ? node->veth_prefix : c.veth_prefix));
    CNI_TRY(remove_host_veth(ctx, host.sock, host_name));
    CNI_TRY(iface::remove_container_link(ctx));
    if (eni_ipam) return ipam::delegate_del(ctx, c.net.ipam_type, ctx.req.config);
    return release_for(ctx, file, c.net.name);
}

Status require(bool ok, const std::string& what) {
    if (!ok) return fail("vpc-eni: " + what);
    return {};
}

// CHECK of one of the pod's addresses, `ip`: an ENI's; in the pod the host prefix on `link`,
// the default route via the gateway and the gateway's permanent neighbour entry with `veth`'s
// MAC; on the host the route to it over `veth` and its rules.
Status check_address(const iface::HostSockets& io, const nl::LinkInfo& veth, const nl::LinkInfo& link, const NodeFile& node,
                     const net::IpAddr& ip) {
    const int family = family_of(ip);
    const net::IpAddr gw = pod_gateway(ip);
    const Eni* eni = node.eni_of(ip);
    CNI_TRY(require(eni != nullptr, ip.str() + " is no ENI's secondary or prefix address in " + node.path));
    CNI_TRY_ASSIGN(auto addrs, nl::list_addrs(io.container, link.index, family));
    CNI_TRY(require(std::ranges::any_of(addrs, [&](const nl::AddrInfo& a) { return a.local == host_prefix(ip); }),
                    link.name + " lacks " + host_prefix(ip).str()));
    CNI_TRY_ASSIGN(auto pod_routes, nl::list_routes(io.container, family));
    CNI_TRY(require(std::ranges::any_of(pod_routes, [&](const nl::RouteSpec& rt) {
                        return rt.dst.prefix == 0 && rt.gw == gw && rt.oif == link.index;
                    }),
                    "the pod has no default route via " + gw.str()));
    CNI_TRY_ASSIGN(auto neighs, nl::list_neighs(io.container, family, link.index));
    CNI_TRY(require(std::ranges::any_of(neighs, [&](const nl::NeighSpec& n) {
                        return n.ip == gw && n.mac == veth.mac && n.state == NUD_PERMANENT;
                    }),
                    "the pod has no permanent neighbour " + gw.str() + " lladdr " + veth.mac));
    CNI_TRY_ASSIGN(auto host_routes, nl::list_routes_via(io.host, family, veth.index));
    CNI_TRY(require(std::ranges::any_of(host_routes, [&](const nl::RouteSpec& rt) {
                        return rt.dst == host_prefix(ip) && rt.oif == veth.index;
                    }),
                    "the host has no route to " + ip.str() + " over " + veth.name));
    CNI_TRY_ASSIGN(bool to_pod, nl::has_rule(io.host, to_pod_rule(ip)));  // exactly: another's with a selector more is not it
    CNI_TRY(require(to_pod, "the rule to " + ip.str() + " lookup main pref 512 is missing"));
    if (eni->device_number > 0) {
        CNI_TRY_ASSIGN(bool from_pod, nl::has_rule(io.host, from_pod_rule(ip, *eni)));
        CNI_TRY(require(from_pod, "the rule from " + ip.str() + " lookup " + std::to_string(eni->table()) + " pref 1536 is missing"));
    }
    return {};
}

Status vpc_eni_check(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_conf(ctx.req));
    CNI_TRY_ASSIGN(auto node, load_configured_node_file(c.node_file));
    CNI_TRY(same_veth_prefix(c, node));
    CNI_TRY_ASSIGN(auto host_name, host_veth_name(ctx.req, c.veth_prefix));
    const Request& r = ctx.req;
    CNI_TRY(ipam::delegate_check(ctx, c.net.ipam_type, r.config));
    CNI_TRY_ASSIGN(auto prev, require_prev_result(c.net, "vpc-eni: Required prevResult missing"));
    CNI_TRY_ASSIGN(auto io, iface::open_host_and_container(ctx));
    CNI_TRY_ASSIGN(auto veth, nl::find_link(io.host, host_name));
    CNI_TRY(require(veth.has_value(), "host veth " + host_name + " is missing"));
    CNI_TRY(require(veth->up(), "host veth " + host_name + " is down"));
    CNI_TRY_ASSIGN(auto link, nl::find_link(io.container, r.ifname));
    CNI_TRY(require(link.has_value() && link->peer_index == veth->index,
                    r.ifname + " in the pod is missing or not the peer of " + host_name));
    for (auto& ip : prev.ips) CNI_TRY(check_address(io, *veth, *link, node, ip.address.ip));
    return {};
}

Status vpc_eni_status(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_conf(ctx.req));
    auto node = load_configured_node_file(c.node_file);
    if (!node) return fail(code::plugin_not_available, node.error().msg);
    // Not ready before node-setup, as ADD is refused then: the runtime reports the node not ready.
    if (auto up = node_is_set_up(*node); !up) return fail(code::plugin_not_available, up.error().msg);
    return ipam::delegate_status(ctx, c.net.ipam_type, ctx.req.config);
}

// GC as DEL does it: the host rules of the network's addresses whose attachments are not among
// the valid ones (their pods' routes went with their veths), then the IPAM's GC, which releases
// them. Another network's addresses are not this GC's.
Status vpc_eni_gc(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_conf(ctx.req));
    CNI_TRY(load_configured_node_file(c.node_file));  // refused as by ADD and CHECK
    CNI_TRY_ASSIGN(auto stale, stale_addresses(ctx));
    CNI_TRY_ASSIGN(auto sock, nl::Socket::open());
    HostRules host{std::move(sock), {}, {}};
    Failures failures;
    for (auto& ip : stale) failures.add(remove_rules(ctx, host, ip));
    CNI_TRY(failures.status("vpc-eni GC: "));
    return ipam::delegate_gc(ctx, c.net.ipam_type, ctx.req.config);
}

constexpr auto kVpcEniKeyDocs = docs_of(kVpcEniKeys);
constexpr std::array kNodeCommands{
    Subcommand{"node-setup", node_setup, "[--imds [URL] [--imds-v1] [--interval SECONDS]] FILE",
               "prepares the node as the node file FILE says (idempotent; what it changes is recorded in stateDir "
               "first). With --imds it learns the ENIs, primary interface and VPC CIDRs from the instance metadata "
               "service at URL (default http://169.254.169.254, IMDSv2; --imds-v1 allows IMDSv1) and writes FILE, "
               "keeping its other keys; with --interval it does so again every SECONDS."},
    Subcommand{"node-teardown", node_teardown, "[FILE]",
               "removes what node-setup added and restores what it recorded, so the node is as it was. It goes by the "
               "node file the node was set up by, which node-setup keeps in stateDir, when that loads (FILE giving the "
               "stateDir), else by FILE; without FILE, or when it does not load, by that kept file in the default "
               "stateDir, or the one FILE names (without FILE, the one /etc/cni/vpc-eni/node.json names)."},
};
constexpr auto kNodeFileKeyDocs = docs_of(kNodeFileKeys);
constexpr auto kEniKeyDocs = docs_of(kEniKeys);
constexpr std::array kNodeFiles{
    KeyTable{"the node file (node-setup FILE, nodeFile; any other key is an error)", kNodeFileKeyDocs},
    KeyTable{"each of its enis", kEniKeyDocs},
};

}  // namespace

extern const Applet vpc_eni_applet{
    .name = "vpc-eni",
    .kind = AppletKind::main,
    .summary = "the AWS VPC CNI's routed datapath: pod addresses from the node's ENIs",
    .keys = kVpcEniKeyDocs,
    .help = "Needs ipam type vpc-eni-ipam (it hands out the node file's secondary and prefix addresses): DEL acts only "
            "on the addresses it holds for the container's interface, never on a prevResult's. ADD refuses with code 11 "
            "(try again later) until node-setup has recorded the node in stateDir since boot. node-setup and node-teardown "
            "(above) prepare the node: rp_filter, MTUs, the ENIs' addresses and route tables, the fwmark and local "
            "rules, the SNAT of pod traffic leaving the VPC and, with nodePortSupport, the connmark that sends a "
            "NodePort's replies back through the primary ENI (docs/vpc-eni.md).",
    .versions = kAllVersions,
    .add = vpc_eni_add,
    .del = vpc_eni_del,
    .check = vpc_eni_check,
    .status = vpc_eni_status,
    .gc = vpc_eni_gc,
    .subcommands = kNodeCommands,
    .files = kNodeFiles,
};

}  // namespace cni::vpc_eni
