// SPDX-License-Identifier: Apache-2.0
// ipvlan (docs/compatibility.md: ipvlan): an ipvlan child of `master` in mode l2 (default), l3 or
// l3s, created under a temporary name in the container namespace and renamed. The master defaults
// to the single interface of a prevResult (chained) or the default route's link. With no ipam.type,
// a prevResult's IPs are used as they are. mtu, linkInContainer, skipIPv6LinkLocal, dns (always
// replaces the result's). Unlike the reference, a failed ADD removes the link, and DEL never needs
// a master or a default route.
#include "core/applet.hpp"
#include "core/cni/netconf.hpp"
#include "core/iface/check.hpp"
#include "core/iface/child_link.hpp"
#include "core/iface/configure.hpp"
#include "core/iface/key_docs.hpp"
#include "core/iface/link_result.hpp"
#include "core/iface/remove.hpp"
#include "core/iface/sockets.hpp"
#include "core/ipam/delegate.hpp"
#include "core/nl/link.hpp"
#include "core/rollback.hpp"
#include "core/strings.hpp"

namespace cni::ipvlan {
namespace {

struct IpvlanConf {
    NetConf net;
    std::string master;
    std::string mode_name;
    std::optional<int> mode;  // nullopt for an unknown name: refused by ADD and CHECK only
    std::int64_t mtu = 0;
    bool link_in_container = false;
    bool skip_ipv6_link_local = false;  // iface::skip_ipv6_link_local
    std::optional<CniResult> prev;
};

constexpr std::array kIpvlanKeys{
    key<&IpvlanConf::master>("master", "the host link to attach to; default: a chained prevResult's single interface, else the default route's link"),
    key<&IpvlanConf::mode_name>("mode", "l2 (the default), l3 or l3s"),
    key<&IpvlanConf::mtu>("mtu", iface::kChildMtuDoc),
    key<&IpvlanConf::link_in_container>("linkInContainer", iface::kLinkInContainerDoc),
    key<&IpvlanConf::skip_ipv6_link_local>("skipIPv6LinkLocal", iface::kSkipIpv6LinkLocalDoc),
};

Result<IpvlanConf> parse_ipvlan_conf(const Request& req) {
    CNI_TRY_ASSIGN(auto c, load_config(req.config, kIpvlanKeys));
    c.mode = nl::ipvlan_mode_from_name(c.mode_name);
    CNI_TRY_ASSIGN(c.prev, parse_prev_result(c.net, "could not parse prevResult: "));
    return c;
}

// The configured master, or a chained prevResult's single interface, or the default route's.
Result<std::string> master_name(const IpvlanConf& c) {
    if (!c.master.empty() || !c.prev) return c.master;
    if (c.prev->interfaces.size() == 1 && !c.prev->interfaces[0].name.empty()) return c.prev->interfaces[0].name;
    return fail("chained master failure. PrevResult lacks a single named interface");
}

// The mode ADD creates and CHECK compares; an unknown one does not fail DEL, as in the reference.
Result<int> known_mode(const IpvlanConf& c) {
    if (!c.mode) return fail("unknown ipvlan mode: " + go_quote(c.mode_name));
    return *c.mode;
}

Result<CniResult> ipvlan_add(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_ipvlan_conf(ctx.req));
    bool have_prev_ips = c.prev && !c.prev->ips.empty();
    if (c.net.ipam_type.empty() && !have_prev_ips)
        return fail("ipvlan: neither an \"ipam\" type nor IPs in prevResult to configure");
    CNI_TRY_ASSIGN(auto io, iface::open_host_and_container(ctx));  // a bad CNI_NETNS before a bad mode
    CNI_TRY_ASSIGN(auto mode, known_mode(c));
    CNI_TRY_ASSIGN(auto name, master_name(c));
    CNI_TRY_ASSIGN(auto master, iface::find_master(c.link_in_container ? io.container : io.host, name));
    Rollback undo;
    auto create = [&](const nl::Socket& s, const nl::NewLink& attrs) { return nl::add_ipvlan(s, attrs, master.index, mode); };
    CNI_TRY_ASSIGN(auto link, iface::create_child(io.host, io.container, io.ns, c.link_in_container, ctx.req.ifname, c.mtu,
                                                  "", "ipvlan", create, undo));
    CNI_TRY_ASSIGN(auto result, iface::link_result(ctx, link, c.net.ipam_type, undo));
    if (c.net.ipam_type.empty()) {
        result.ips = c.prev->ips;
        result.routes = c.prev->routes;
    }
    if (c.skip_ipv6_link_local) CNI_TRY(iface::skip_ipv6_link_local(io.container, link, result.ips));
    CNI_TRY(iface::configure_child(io.container, io.ns, link, result, true));
    result.dns = c.net.dns;
    undo.dismiss();
    return result;
}

Status ipvlan_check(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_ipvlan_conf(ctx.req));
    CNI_TRY_ASSIGN(auto mode, known_mode(c));
    CNI_TRY(ipam::check_of_optional_ipam(ctx, c.net.ipam_type));
    if (!c.prev) return fail("required prevResult missing");
    CNI_TRY_ASSIGN(auto io, iface::open_container(ctx));
    auto same_mode = [&](const nl::LinkInfo& link) -> Status {
        if (link.ipvlan_mode == mode) return {};
        return fail("container ipvlan mode " + nl::ipvlan_mode_name(link.ipvlan_mode) + " does not match expected value: " +
                    nl::ipvlan_mode_name(mode));
    };
    CNI_TRY(iface::check_interface(io.container, ctx.req, *c.prev, {"ipvlan", c.skip_ipv6_link_local, same_mode}));
    return {};
}

constexpr auto kIpvlanKeyDocs = docs_of(kIpvlanKeys);

}  // namespace

extern const Applet ipvlan_applet{
    .name = "ipvlan",
    .kind = AppletKind::main,
    .summary = "an ipvlan child of a host link in the container",
    .keys = kIpvlanKeyDocs,
    .help = "Addresses come from ipam, or from a chained prevResult's IPs. dns replaces the result's.",
    .versions = kAllVersions,
    .add = ipvlan_add,
    .del = iface::del_link<parse_ipvlan_conf>,
    .check = ipvlan_check,
    .status = ipam::status_of_optional<parse_ipvlan_conf>,
};

}  // namespace cni::ipvlan
