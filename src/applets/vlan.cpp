// SPDX-License-Identifier: Apache-2.0
// vlan (docs/compatibility.md: vlan): an 802.1Q child of `master` (required) with `vlanId`
// (0..4094), created under a temporary name in the container namespace and renamed; IPAM is
// required; mtu 0..master MTU; linkInContainer; skipIPv6LinkLocal; dns always replaces the
// result's. Unlike the reference, a failed ADD removes the link, and DEL needs neither the master
// (the reference looks up its MTU and fails when it is gone) nor the namespace.
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

namespace cni::vlan {
namespace {

struct VlanConf {
    NetConf net;
    std::string master;
    std::int64_t vlan_id = 0;  // checked to lie in 0..4094 at parse
    std::int64_t mtu = 0;
    bool link_in_container = false;
    bool skip_ipv6_link_local = false;  // iface::skip_ipv6_link_local
};

constexpr std::array kVlanKeys{
    key<&VlanConf::master>("master", "required: the host link the VLAN is made on"),
    key<&VlanConf::vlan_id>("vlanId", "the 802.1Q tag, 0..4094"),
    key<&VlanConf::mtu>("mtu", iface::kChildMtuDoc),
    key<&VlanConf::link_in_container>("linkInContainer", iface::kLinkInContainerDoc),
    key<&VlanConf::skip_ipv6_link_local>("skipIPv6LinkLocal", iface::kSkipIpv6LinkLocalDoc),
};

Result<VlanConf> parse_vlan_conf(const Request& req) {
    CNI_TRY_ASSIGN(auto c, load_config(req.config, kVlanKeys));
    if (c.master.empty())
        return fail("\"master\" field is required. It specifies the host interface name to create the VLAN for.");
    if (c.vlan_id < 0 || c.vlan_id > 4094)
        return fail("invalid VLAN ID " + std::to_string(c.vlan_id) + " (must be between 0 and 4095 inclusive)");
    return c;
}

Result<CniResult> vlan_add(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_vlan_conf(ctx.req));
    CNI_TRY_ASSIGN(auto io, iface::open_host_and_container(ctx));
    CNI_TRY_ASSIGN(auto master, iface::find_master(c.link_in_container ? io.container : io.host, c.master));
    CNI_TRY(iface::check_child_mtu(c.mtu, master));
    Rollback undo;
    auto create = [&](const nl::Socket& s, const nl::NewLink& attrs) {
        return nl::add_vlan(s, attrs, master.index, int(c.vlan_id));
    };
    CNI_TRY_ASSIGN(auto link, iface::create_child(io.host, io.container, io.ns, c.link_in_container, ctx.req.ifname, c.mtu,
                                                  "", "vlan", create, undo));
    CNI_TRY_ASSIGN(auto result, ipam::allocate(ctx, c.net.ipam_type, undo, "failed to execute IPAM delegate: "));
    result.interfaces = {iface::container_interface(ctx.req, link.mac)};
    if (c.skip_ipv6_link_local) CNI_TRY(iface::skip_ipv6_link_local(io.container, link, result.ips));
    CNI_TRY(iface::configure_child(io.container, io.ns, link, result, false));
    result.dns = c.net.dns;
    undo.dismiss();
    return result;
}

Status vlan_check(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_vlan_conf(ctx.req));
    CNI_TRY(ipam::delegate_check(ctx, c.net.ipam_type, ctx.req.config));
    CNI_TRY_ASSIGN(auto prev, require_prev_result(c.net, "required prevResult missing"));
    CNI_TRY_ASSIGN(auto io, iface::open_host_and_container(ctx));
    CNI_TRY(iface::find_master(c.link_in_container ? io.container : io.host, c.master));
    auto same_id = [&](const nl::LinkInfo& link) -> Status {
        if (link.vlan_id == c.vlan_id) return {};
        return fail("vlan: " + ctx.req.ifname + " has VLAN id " + std::to_string(link.vlan_id) + ", the config says " +
                    std::to_string(c.vlan_id));
    };
    CNI_TRY(iface::check_interface(io.container, ctx.req, prev, {"vlan", c.skip_ipv6_link_local, same_id}));
    return {};
}

constexpr auto kVlanKeyDocs = docs_of(kVlanKeys);

}  // namespace

extern const Applet vlan_applet{
    .name = "vlan",
    .kind = AppletKind::main,
    .summary = "an 802.1Q child of a host link in the container",
    .keys = kVlanKeyDocs,
    .help = "Needs ipam. dns replaces the IPAM result's.",
    .versions = kAllVersions,
    .add = vlan_add,
    .del = iface::del_link<parse_vlan_conf>,
    .check = vlan_check,
    .status = ipam::status_of<parse_vlan_conf>,
};

}  // namespace cni::vlan
