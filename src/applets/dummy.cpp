// SPDX-License-Identifier: Apache-2.0
// dummy (docs/compatibility.md: dummy): a dummy link named CNI_IFNAME in the container namespace
// with the IPAM result on it (ipam is required). A failed ADD deletes the link and releases the
// allocation; DEL releases IPAM first, then deletes the link (a missing link or netns is fine).
#include "core/applet.hpp"
#include "core/cni/netconf.hpp"
#include "core/iface/check.hpp"
#include "core/iface/configure.hpp"
#include "core/iface/link_result.hpp"
#include "core/iface/remove.hpp"
#include "core/iface/sockets.hpp"
#include "core/ipam/delegate.hpp"
#include "core/nl/link.hpp"
#include "core/rollback.hpp"

namespace cni::dummy {
namespace {

struct DummyConf {
    NetConf net;  // no keys of its own
};

Result<DummyConf> parse_dummy_conf(const Request& req) {
    CNI_TRY_ASSIGN(auto nc, load_netconf(req.config));
    if (nc.ipam_type.empty()) return fail("dummy interface requires an IPAM configuration");
    return DummyConf{std::move(nc)};
}

Result<CniResult> dummy_add(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_dummy_conf(ctx.req));
    const Request& r = ctx.req;
    CNI_TRY_ASSIGN(auto io, iface::open_container(ctx));
    Rollback undo;
    if (auto st = nl::add_dummy(io.container, nl::NewLink{r.ifname, 0, "", 0, -1}); !st)
        return fail("failed to create dummy: " + st.error().msg);
    undo.push([&] { (void)nl::delete_link(io.container, r.ifname); });
    CNI_TRY_ASSIGN(auto link, nl::require_link(io.container, r.ifname));
    CNI_TRY_ASSIGN(auto result, iface::link_result(ctx, link, c.net.ipam_type, undo));
    CNI_TRY(iface::configure_iface(io.container, io.ns, link, result));
    undo.dismiss();
    return result;
}

Status dummy_check(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_dummy_conf(ctx.req));
    CNI_TRY(ipam::delegate_check(ctx, c.net.ipam_type, ctx.req.config));
    CNI_TRY_ASSIGN(auto prev, require_prev_result(c.net, "required prevResult missing"));
    CNI_TRY_ASSIGN(auto io, iface::open_container(ctx));
    auto up = [&](const nl::LinkInfo& link) -> Status {
        if (!link.up()) return fail("dummy: interface " + ctx.req.ifname + " is down");
        return {};
    };
    CNI_TRY(iface::check_interface(io.container, ctx.req, prev, {"dummy", false, up}));
    return {};
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
    .del = iface::del_link<parse_dummy_conf>,
    .check = dummy_check,
    .status = ipam::status_of<parse_dummy_conf>,
};

}  // namespace cni::dummy
