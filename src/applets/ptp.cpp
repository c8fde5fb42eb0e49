// SPDX-License-Identifier: Apache-2.0
// ptp (docs/compatibility.md: ptp): a veth pair per container with point-to-point routing. IPAM
// runs first; in the container each address gets a /32 (/128) link route to its gateway and its
// subnet via that gateway; on the host the veth carries the gateway as /32 (/128) and a host route
// to the container's address; optional ipMasq. The keys are listed once, in kPtpKeys. A failed ADD undoes everything (link, rules, IPAM allocation). DEL is
// idempotent: IPAM DEL, then the link if the namespace still exists, then the ipMasq rules by chain
// name (the reference skips those when the link is gone and leaks them).
#include "core/applet.hpp"
#include "core/cni/netconf.hpp"
#include "core/fw/ipmasq.hpp"
#include "core/iface/check.hpp"
#include "core/iface/configure.hpp"
#include "core/iface/key_docs.hpp"
#include "core/iface/link_result.hpp"
#include "core/iface/masquerade.hpp"
#include "core/iface/remove.hpp"
#include "core/iface/sockets.hpp"
#include "core/iface/veth.hpp"
#include "core/ipam/delegate.hpp"
#include "core/nl/addr.hpp"
#include "core/nl/route.hpp"
#include "core/rollback.hpp"

namespace cni::ptp {
namespace {

struct PtpConf {
    NetConf net;
    bool ip_masq = false;
    std::string ip_masq_backend;
    std::int64_t mtu = 0;
    bool skip_ipv6_link_local = false;  // iface::skip_ipv6_link_local
};

constexpr std::array kPtpKeys{
    key<&PtpConf::ip_masq>("ipMasq", "masquerade what the container sends off its subnet"),
    key<&PtpConf::ip_masq_backend>("ipMasqBackend", "iptables or nftables; default: iptables unless only nf_tables is usable"),
    key<&PtpConf::mtu>("mtu", "the veth MTU; 0: the kernel's"),
    key<&PtpConf::skip_ipv6_link_local>("skipIPv6LinkLocal", iface::kSkipIpv6LinkLocalDoc),
};

Result<PtpConf> parse_ptp_conf(const Request& req) { return load_config(req.config, kPtpKeys); }

net::IpNet host_prefix(const net::IpAddr& ip) { return net::IpNet{ip, ip.bits(), ip.bits()}; }

// Container side: replace the kernel's subnet route by "gw/32 scope link" and "subnet via gw".
Status route_via_gateway(const nl::Socket& s, const nl::LinkInfo& link, const IpConfig& ip) {
    nl::RouteSpec subnet;
    subnet.dst = ip.address.masked();
    subnet.oif = link.index;
    CNI_TRY(nl::del_route(s, subnet));
    nl::RouteSpec to_gw;
    to_gw.dst = host_prefix(*ip.gateway);
    to_gw.oif = link.index;
    to_gw.scope = RT_SCOPE_LINK;
    to_gw.src = ip.address.ip;
    CNI_TRY(nl::add_route(s, to_gw));
    nl::RouteSpec via;
    via.dst = ip.address.masked();
    via.oif = link.index;
    via.gw = ip.gateway;
    via.src = ip.address.ip;
    return nl::add_route(s, via);
}

// Host side: the gateway address on the host veth and a host route to the container.
Status host_side(const nl::Socket& s, const nl::LinkInfo& veth, const IpConfig& ip) {
    if (auto st = nl::add_addr(s, veth.index, veth.name, host_prefix(*ip.gateway)); !st)
        return fail("failed to add IP addr " + host_prefix(*ip.gateway).str() + " to veth: " + st.error().msg);
    nl::RouteSpec to_container;
    to_container.dst = host_prefix(ip.address.ip);
    to_container.oif = veth.index;
    to_container.scope = RT_SCOPE_HOST;
    if (auto st = nl::add_route(s, to_container); !st && st.error().msg.find("file exists") == std::string::npos)
        return fail("failed to add route on host: " + st.error().msg);
    return {};
}

Result<CniResult> ptp_add(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_ptp_conf(ctx.req));
    CNI_TRY(fw::validate_ipmasq_backend(c.ip_masq_backend));  // ADD's alone: DEL tries every backend
    const Request& r = ctx.req;
    CNI_TRY_ASSIGN(auto io, iface::open_host_and_container(ctx));

    Rollback undo;
    CNI_TRY_ASSIGN(auto result, ipam::allocate(ctx, c.net.ipam_type, undo));
    for (auto& ip : result.ips)
        if (!ip.gateway) return fail("ptp: IPAM returned " + ip.address.str() + " without a gateway");
    CNI_TRY(iface::enable_forwarding(io.host, result.ips));

    CNI_TRY_ASSIGN(auto veth, iface::setup_veth(io.container, io.host, io.host_ns, os::SysctlDir::open("net/ipv6/conf"),
                                                r.ifname, c.mtu, ""));
    undo.push([&] { (void)nl::delete_link(io.container, r.ifname); });
    result.interfaces = {iface::host_interface(veth.host), iface::container_interface(r, veth.container.mac)};
    for (auto& ip : result.ips) ip.interface = 1;

    if (c.skip_ipv6_link_local) CNI_TRY(iface::skip_ipv6_link_local(io.container, veth.container, result.ips));
    CNI_TRY(iface::configure_iface(io.container, io.ns, veth.container, result));
    for (auto& ip : result.ips) CNI_TRY(route_via_gateway(io.container, veth.container, ip));
    for (auto& ip : result.ips) CNI_TRY(host_side(io.host, veth.host, ip));
    if (c.ip_masq) CNI_TRY(iface::masquerade_add(ctx, c.net, c.ip_masq_backend, result.ips, undo));
    if (!c.net.dns.empty()) result.dns = c.net.dns;
    undo.dismiss();
    return result;
}

Status ptp_del(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_ptp_conf(ctx.req));
    const Request& r = ctx.req;
    CNI_TRY(ipam::delegate_del(ctx, c.net.ipam_type, r.config));
    CNI_TRY(iface::remove_container_link(ctx));
    if (c.ip_masq) CNI_TRY(iface::masquerade_del(ctx, c.net));
    return {};
}

Status ptp_check(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_ptp_conf(ctx.req));
    const Request& r = ctx.req;
    CNI_TRY(ipam::delegate_check(ctx, c.net.ipam_type, r.config));
    CNI_TRY_ASSIGN(auto prev, require_prev_result(c.net, "ptp: Required prevResult missing"));
    CNI_TRY_ASSIGN(auto io, iface::open_container(ctx));
    CNI_TRY_ASSIGN(auto nets, iface::check_interface(io.container, r, prev, {"veth", c.skip_ipv6_link_local}));
    if (c.ip_masq) CNI_TRY(iface::masquerade_check(ctx, c.net, c.ip_masq_backend, nets));
    return {};
}

// Code 50 when ipMasq's backend cannot work here, else the IPAM's STATUS.
Status ptp_status(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_ptp_conf(ctx.req));
    return iface::masquerade_and_ipam_status(ctx, c.net, c.ip_masq, c.ip_masq_backend);
}

// Beyond the reference (which has no GC): as bridge's, stale ipMasq rules and the IPAM delegate.
Status ptp_gc(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_ptp_conf(ctx.req));
    return iface::gc_masquerade_and_ipam(ctx, c.net, c.ip_masq);
}

constexpr auto kPtpKeyDocs = docs_of(kPtpKeys);

}  // namespace

extern const Applet ptp_applet{
    .name = "ptp",
    .kind = AppletKind::main,
    .summary = "veth pair with point-to-point routing to the host",
    .keys = kPtpKeyDocs,
    .help = "Needs ipam. The container routes its subnet via the gateway; the host veth holds the gateway as /32 "
            "(/128) and a host route to the container. dns replaces the IPAM result's.",
    .versions = kAllVersions,
    .add = ptp_add,
    .del = ptp_del,
    .check = ptp_check,
    .status = ptp_status,
    .gc = ptp_gc,
};

}  // namespace cni::ptp
