// SPDX-License-Identifier: Apache-2.0
// tap (docs/compatibility.md: tap): a persistent tap device (IFF_TAP|IFF_VNET_HDR, optionally
// IFF_MULTI_QUEUE, owner and group) created in the container namespace under a temporary name
// and renamed to CNI_IFNAME; mtu and mac (config, then CNI_ARGS MAC, then runtimeConfig mac);
// optionally enslaved to `bridge` inside the container; IPAM optional (L2 when absent).
// The device is made with the TUN ioctls (nl::add_persistent_tap), where the reference sometimes
// execs `ip tuntap`; with selinuxContext, as in the reference, `ip tuntap add` runs under that
// label (nl::add_labelled_tap), so the device carries it. A failed ADD deletes the device and
// releases the allocation; DEL is idempotent.
#include <linux/ip.h>

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
#include "core/nl/tap.hpp"
#include "core/rollback.hpp"
#include "core/strings.hpp"

namespace cni::tap {
namespace {

struct TapConf {
    NetConf net;
    bool multi_queue = false;
    std::int64_t mtu = 0;
    std::string mac;
    std::optional<std::uint32_t> owner, group;
    std::string bridge;
    std::string selinux_context;  // the SELinux label of the process that creates the device
};

constexpr std::array kTapKeys{
    key<&TapConf::multi_queue>("multiQueue", "a multi-queue tap"),
    key<&TapConf::mtu>("mtu", "the device's MTU; 0: the kernel's"),
    key<&TapConf::mac>("mac", iface::kMacDoc),
    key<&TapConf::owner>("owner", "the uid that may open the device"),
    key<&TapConf::group>("group", "the gid that may open the device"),
    key<&TapConf::bridge>("bridge", "a bridge in the container to enslave the tap to"),
    key<&TapConf::selinux_context>("selinuxContext", "the SELinux label `ip tuntap add` (from PATH) runs under to make the device"),
};

Result<TapConf> parse_tap_conf(const Request& req) {
    CNI_TRY_ASSIGN(auto c, load_config(req.config, kTapKeys));
    CNI_TRY_ASSIGN(c.mac, layered_mac(req.args, c.net, c.net.where, std::move(c.mac)));
    return c;
}

// The device: made under a temporary name in the container (with selinuxContext, by `ip`, which
// fails leaving none), its MTU and MAC set, renamed to CNI_IFNAME, enslaved to `bridge` and set
// up; its removal registered with `undo`.
Result<nl::LinkInfo> make_tap(const TapConf& c, const Request& r, const iface::ContainerSockets& io, Rollback& undo) {
    std::string tmp = nl::random_veth_name();
    {
        CNI_TRY_ASSIGN(auto guard, os::NetnsGuard::enter(io.ns));
        nl::TapSpec spec{tmp, c.multi_queue, c.owner, c.group};
        if (c.selinux_context.empty()) CNI_TRY(nl::add_persistent_tap(spec));
        else CNI_TRY(nl::add_labelled_tap(spec, c.selinux_context, r.environ));
    }
    auto prepare = [&](const nl::LinkInfo& link) -> Status {
        if (c.mtu > 0) CNI_TRY(nl::set_mtu(io.container, link, c.mtu));
        if (!c.mac.empty()) CNI_TRY(nl::set_mac(io.container, link, c.mac));
        return {};
    };
    CNI_TRY_ASSIGN(auto link, iface::rename_new_link(io.container, tmp, r.ifname, "tap", undo, prepare));
    if (!c.bridge.empty()) {
        CNI_TRY_ASSIGN(auto br, nl::find_link(io.container, c.bridge));
        if (!br || br->kind != "bridge") return fail("tap: bridge \"" + c.bridge + "\" not found in the container namespace");
        CNI_TRY(nl::set_master(io.container, link, br->index));
    }
    CNI_TRY(nl::set_link_up(io.container, link, true));
    return nl::require_link(io.container, r.ifname);
}

Result<CniResult> tap_add(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_tap_conf(ctx.req));
    CNI_TRY_ASSIGN(c.mac, net::configured_mac(c.mac, net::MacWording::plain));  // ADD's alone, as the reference's
    CNI_TRY_ASSIGN(auto io, iface::open_container(ctx));
    Rollback undo;
    CNI_TRY_ASSIGN(auto link, make_tap(c, ctx.req, io, undo));
    CNI_TRY_ASSIGN(auto result, iface::link_result(ctx, link, c.net.ipam_type, undo));
    if (!c.net.ipam_type.empty()) {
        (void)nl::set_ipv4_conf(io.container, link, IPV4_DEVCONF_ARP_NOTIFY, 1);  // net.ipv4.conf.<if>.arp_notify
        CNI_TRY(iface::configure_iface(io.container, io.ns, link, result));
    }
    result.dns = c.net.dns;  // none from the IPAM
    undo.dismiss();
    return result;
}

Status tap_check(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_tap_conf(ctx.req));
    CNI_TRY(ipam::check_of_optional_ipam(ctx, c.net.ipam_type));
    CNI_TRY_ASSIGN(auto prev, require_prev_result(c.net, "required prevResult missing"));
    CNI_TRY_ASSIGN(auto io, iface::open_container(ctx));
    CNI_TRY(iface::check_interface(io.container, ctx.req, prev, {"tun"}));
    return {};
}

constexpr auto kTapKeyDocs = docs_of(kTapKeys);

}  // namespace

extern const Applet tap_applet{
    .name = "tap",
    .kind = AppletKind::main,
    .summary = "a persistent tap device in the container",
    .keys = kTapKeyDocs,
    .help = "A persistent tap device, for VM runtimes. ipam is optional; dns replaces the result's.",
    .versions = kAllVersions,
    .add = tap_add,
    .del = iface::del_link<parse_tap_conf>,
    .check = tap_check,
    .status = ipam::status_of_optional<parse_tap_conf>,
};

}  // namespace cni::tap
