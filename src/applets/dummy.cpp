// SPDX-License-Identifier: Apache-2.0
// dummy (docs/compatibility.md: dummy): a dummy link named CNI_IFNAME in the container namespace
// with the IPAM result on it (ipam is required). A failed ADD deletes the link and releases the
// allocation; DEL releases IPAM first, then deletes the link (a missing link or netns is fine).
#include "core/applet.hpp"
#include "core/cni/netconf.hpp"
#include "core/iface/check.hpp"
#include "core/iface/configure.hpp"
#include "core/iface/remove.hpp"
#include "core/ipam/delegate.hpp"
#include "core/nl/link.hpp"
#include "core/rollback.hpp"

namespace cni::dummy {
namespace {

Result<NetConf> parse_dummy_conf(const Request& req) {
    CNI_TRY_ASSIGN(auto nc, load_netconf(req.config));
    if (nc.ipam_type.empty()) return fail("dummy interface requires an IPAM configuration");
    return nc;
}

Result<CniResult> dummy_add(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_dummy_conf(ctx.req));
    const Request& r = ctx.req;
    CNI_TRY_ASSIGN(auto ns, container_netns(ctx));
    CNI_TRY_ASSIGN(auto container, nl::Socket::open_in(ns));
    Rollback undo;
    if (auto st = nl::add_dummy(container, nl::NewLink{r.ifname, 0, "", 0, -1}); !st)
        return fail("failed to create dummy: " + st.error().msg);
    undo.push([&] { (void)nl::delete_link(container, r.ifname); });
    CNI_TRY_ASSIGN(auto link, nl::require_link(container, r.ifname));
    CNI_TRY_ASSIGN(auto result, ipam::allocate(ctx, c.ipam_type, undo));
    Interface dummy_if;
    dummy_if.name = r.ifname;
    dummy_if.mac = link.mac;
    dummy_if.sandbox = r.netns;
    result.interfaces = {dummy_if};
    for (auto& ip : result.ips) ip.interface = 0;
    CNI_TRY(iface::configure_iface(container, ns, r.ifname, result));
    undo.dismiss();
    return result;
}

Status dummy_del(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_dummy_conf(ctx.req));
    return iface::release_and_remove(ctx, c.ipam_type);
}

Status dummy_check(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_dummy_conf(ctx.req));
    const Request& r = ctx.req;
    CNI_TRY(ipam::delegate_check(ctx, c.ipam_type, r.config));
    CNI_TRY_ASSIGN(auto prev, require_prev_result(c, "required prevResult missing"));
    CNI_TRY_ASSIGN(auto ns, container_netns(ctx));
    CNI_TRY_ASSIGN(auto container, nl::Socket::open_in(ns));
    CNI_TRY_ASSIGN(auto link, iface::check_container_link(container, prev, r.ifname, r.netns, "dummy"));
    if (!link.up()) return fail("dummy: interface " + r.ifname + " is down");
    CNI_TRY(iface::check_addresses_and_routes(container, link, prev, r.ifname));
    return {};
}

Status dummy_status(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_dummy_conf(ctx.req));
    return ipam::delegate_status(ctx, c.ipam_type, ctx.req.config);
}

}  // namespace

extern const Applet dummy_applet{
    .name = "dummy",
    .kind = AppletKind::main,
    .summary = "a dummy interface in the container carrying the IPAM result",
    .keys = {},
    .help = "Needs ipam. Creates a dummy link named CNI_IFNAME in the container.",
    .versions = kAllVersions,
    .add = dummy_add,
    .del = dummy_del,
    .check = dummy_check,
    .status = dummy_status,
};

}  // namespace cni::dummy
