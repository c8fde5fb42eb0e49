// SPDX-License-Identifier: Apache-2.0
// macvlan (docs/compatibility.md: macvlan): a macvlan child of `master` (default: a chained
// prevResult's first host-side interface, or with linkInContainer its first container-side one;
// else the link of the default route, looked up in the host namespace or, with linkInContainer,
// the container's), created under a temporary vethXXXXXXXX name directly in the container
// namespace, then renamed to CNI_IFNAME (the keys: kMacvlanKeys; ipam is optional, L2 when absent;
// dns always replaces the result's). A failed ADD deletes the link and releases the IPAM
// allocation; DEL needs neither the master nor the netns.
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
#include "core/net/mac.hpp"
#include "core/nl/link.hpp"
#include "core/rollback.hpp"
#include "core/strings.hpp"

namespace cni::macvlan {
namespace {

struct MacvlanConf {
    NetConf net;
    std::string master;
    std::string mode_name;
    std::optional<std::uint32_t> mode;  // nullopt for an unknown name: refused by ADD and CHECK only
    std::int64_t mtu = 0;
    std::string mac;
    bool link_in_container = false;
    bool skip_ipv6_link_local = false;  // iface::skip_ipv6_link_local
    std::uint32_t bc_queue_len = 0;
};

constexpr std::array kMacvlanKeys{
    key<&MacvlanConf::master>("master", "the host link to attach to; default: a chained prevResult's first host-side "
                                        "interface (container-side with linkInContainer), else the default route's link"),
    key<&MacvlanConf::mode_name>("mode", "bridge (the default), private, vepa or passthru"),
    key<&MacvlanConf::mtu>("mtu", iface::kChildMtuDoc),
    key<&MacvlanConf::mac>("mac", iface::kMacDoc),
    key<&MacvlanConf::link_in_container>("linkInContainer", iface::kLinkInContainerDoc),
    key<&MacvlanConf::skip_ipv6_link_local>("skipIPv6LinkLocal", iface::kSkipIpv6LinkLocalDoc),
    key<&MacvlanConf::bc_queue_len>("bcqueuelen", "the broadcast queue length; 0: the kernel's"),
};

Result<MacvlanConf> parse_macvlan_conf(const Request& req) {
    CNI_TRY_ASSIGN(auto c, load_config(req.config, kMacvlanKeys));
    c.mode = nl::macvlan_mode_from_name(c.mode_name);
    CNI_TRY_ASSIGN(c.mac, layered_mac(req.args, c.net, c.net.where, std::move(c.mac)));
    return c;
}

// Where the master comes from when `master` is not set, beyond the reference
// (docs/compatibility.md: macvlan): the first interface of a chained prevResult on the master's
// side (host-side: no sandbox; with linkInContainer: in a sandbox, and not CNI_IFNAME, which
// CHECK's prevResult lists as the macvlan itself). nullopt: the configured master, or "" for the
// default route's link.
Result<std::optional<Interface>> chained_master(const MacvlanConf& c, const std::string& ifname) {
    if (!c.master.empty()) return std::nullopt;
    CNI_TRY_ASSIGN(auto prev, parse_prev_result(c.net, "could not parse prevResult: "));
    if (!prev) return std::nullopt;
    for (auto& i : prev->interfaces) {
        bool on_master_side = c.link_in_container ? !i.sandbox.empty() && i.name != ifname : i.sandbox.empty();
        if (on_master_side && !i.name.empty()) return i;
    }
    return std::nullopt;
}

// The mode ADD creates and CHECK compares; an unknown one does not fail DEL, as in the reference.
Result<std::uint32_t> known_mode(const MacvlanConf& c) {
    if (!c.mode) return fail("unknown macvlan mode: " + go_quote(c.mode_name));
    return *c.mode;
}

Result<CniResult> macvlan_add(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_macvlan_conf(ctx.req));
    CNI_TRY_ASSIGN(auto io, iface::open_host_and_container(ctx));  // a bad CNI_NETNS before a bad mode
    CNI_TRY_ASSIGN(auto mode, known_mode(c));
    CNI_TRY_ASSIGN(c.mac, net::configured_mac(c.mac, net::MacWording::args));  // ADD's alone, as the reference's
    CNI_TRY_ASSIGN(auto chained, chained_master(c, ctx.req.ifname));
    CNI_TRY_ASSIGN(auto master, iface::find_master(c.link_in_container ? io.container : io.host,
                                                   chained ? chained->name : c.master));
    CNI_TRY(iface::check_child_mtu(c.mtu, master));

    Rollback undo;
    auto create = [&](const nl::Socket& s, const nl::NewLink& attrs) {
        return nl::add_macvlan(s, attrs, master.index, mode, c.bc_queue_len);
    };
    CNI_TRY_ASSIGN(auto link, iface::create_child(io.host, io.container, io.ns, c.link_in_container, ctx.req.ifname, c.mtu,
                                                  c.mac, "macvlan", create, undo));
    CNI_TRY_ASSIGN(auto result, iface::link_result(ctx, link, c.net.ipam_type, undo));
    if (chained) result.interfaces.push_back(*chained);  // so that CHECK finds the same master
    if (c.skip_ipv6_link_local) CNI_TRY(iface::skip_ipv6_link_local(io.container, link, result.ips));
    if (!c.net.ipam_type.empty()) CNI_TRY(iface::configure_child(io.container, io.ns, link, result, true));
    else CNI_TRY(nl::set_link_up(io.container, link, true));
    result.dns = c.net.dns;  // the reference always replaces it, even with an empty one
    undo.dismiss();
    return result;
}

Status macvlan_check(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_macvlan_conf(ctx.req));
    CNI_TRY_ASSIGN(auto mode, known_mode(c));
    CNI_TRY(ipam::check_of_optional_ipam(ctx, c.net.ipam_type));
    CNI_TRY_ASSIGN(auto prev, require_prev_result(c.net, "required prevResult missing"));
    CNI_TRY_ASSIGN(auto io, iface::open_host_and_container(ctx));
    CNI_TRY_ASSIGN(auto chained, chained_master(c, ctx.req.ifname));
    CNI_TRY(iface::find_master(c.link_in_container ? io.container : io.host, chained ? chained->name : c.master));
    auto same_mode = [&](const nl::LinkInfo& link) -> Status {
        if (link.macvlan_mode == mode) return {};
        return fail("container macvlan mode " + nl::macvlan_mode_name(link.macvlan_mode) + " does not match expected value: " +
                    nl::macvlan_mode_name(mode));
    };
    CNI_TRY(iface::check_interface(io.container, ctx.req, prev, {"macvlan", c.skip_ipv6_link_local, same_mode}));
    return {};
}

constexpr auto kMacvlanKeyDocs = docs_of(kMacvlanKeys);

}  // namespace

extern const Applet macvlan_applet{
    .name = "macvlan",
    .kind = AppletKind::main,
    .summary = "a macvlan child of a host link in the container",
    .keys = kMacvlanKeyDocs,
    .help = "Needs ipam, or creates the link without addresses (L2). dns always replaces the IPAM result's.",
    .versions = kAllVersions,
    .add = macvlan_add,
    .del = iface::del_link<parse_macvlan_conf>,
    .check = macvlan_check,
    .status = ipam::status_of_optional<parse_macvlan_conf>,
};

}  // namespace cni::macvlan
