// SPDX-License-Identifier: Apache-2.0
// vrf (docs/compatibility.md: vrf): puts CNI_IFNAME into the VRF `vrfname` in the container
// namespace, chained after a main plugin. The VRF is reused or created (bound to `table`, or to
// the lowest table from 1 that no other VRF uses) and set up; enslaving cycles the interface, so
// the IPv6 addresses the kernel drops (without keep_addr_on_down) are added back and their
// prefix routes awaited in the VRF's table, and the interface's gateway routes (universe scope)
// are re-added there. Beyond the reference: a failed ADD releases the interface and removes a
// VRF it created; DEL succeeds when the netns, the interface or the VRF is already gone (the
// reference fails when the interface is gone, PR #1282); CHECK also checks the table.
#include <linux/if.h>
#include <linux/rtnetlink.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include "core/applet.hpp"
#include "core/cni/netconf.hpp"
#include "core/iface/sockets.hpp"
#include "core/nl/addr.hpp"
#include "core/nl/link.hpp"
#include "core/nl/route.hpp"
#include "core/os/netns.hpp"
#include "core/rollback.hpp"

namespace cni::vrf {
namespace {

constexpr std::string_view kVrfVersions[] = {"0.3.1", "0.4.0", "1.0.0", "1.1.0"};
constexpr std::string_view kMissingPrevResult = "missing prevResult from earlier plugin";

struct VrfConf {
    NetConf net;
    std::string vrf_name;
    std::uint32_t table = 0;  // 0: pick one
};

constexpr std::array kVrfKeys{
    key<&VrfConf::vrf_name>("vrfname", "required: the VRF, created if missing and removed with its last interface"),
    key<&VrfConf::table>("table", "its routing table; 0: the lowest no other VRF uses"),
};

Result<VrfConf> parse_vrf_conf(const Request& req) {
    CNI_TRY_ASSIGN(auto c, load_config(req.config, kVrfKeys, "VRFNetConf"));
    if (c.vrf_name.empty()) return fail("configuration is expected to have a valid vrf name");
    return c;
}

// The VRF named in the config, or nullopt; a link of another kind by that name is an error.
Result<std::optional<nl::LinkInfo>> find_vrf(const nl::Socket& s, const std::string& name) {
    CNI_TRY_ASSIGN(auto link, nl::find_link(s, name));
    if (link && link->kind != "vrf") return fail("Netlink " + name + " is not a VRF");
    return link;
}

Result<std::uint32_t> free_vrf_table(const nl::Socket& s) {
    std::set<std::uint32_t> taken;
    CNI_TRY_ASSIGN(auto links, nl::list_links(s));
    for (auto& l : links)
        if (l.kind == "vrf") taken.insert(l.vrf_table);
    std::uint32_t t = 1;
    while (taken.contains(t)) ++t;
    return t;
}

// Waits (about 2.5 s at most, as the reference) until table `table` routes `addr`'s prefix.
Status await_prefix_route(const nl::Socket& s, const net::IpNet& addr, std::uint32_t table) {
    for (int attempt = 0; attempt < 8; ++attempt) {
        CNI_TRY_ASSIGN(auto routes, nl::list_routes(s, AF_INET6, table));
        for (auto& r : routes)
            if (r.dst == addr.masked()) return {};
        std::this_thread::sleep_for(std::chrono::milliseconds(10 << attempt));
    }
    return fail("failed to find the route of " + addr.str() + " in the VRF table " + std::to_string(table));
}

// Enslaves `link` to `vrf`, then restores what the kernel dropped when it cycled the link.
Status enslave(const nl::Socket& s, const nl::LinkInfo& vrf, const nl::LinkInfo& link) {
    CNI_TRY_ASSIGN(auto v6_before, nl::list_addrs(s, link.index, AF_INET6));
    // The routes through the link that the kernel will not make again in the VRF table (its
    // prefix routes it does make): the ones a plugin added, universe or link scope. Link-scope
    // routes go first, so a gateway that only such a route reaches (ptp's "GW dev eth0 scope
    // link") is reachable in the VRF table when the routes through it arrive.
    std::vector<nl::RouteSpec> moved;
    for (int family : {AF_INET, AF_INET6}) {
        CNI_TRY_ASSIGN(auto routes, nl::list_routes(s, family, RT_TABLE_MAIN));
        for (auto& r : routes)
            if (r.oif == link.index && r.protocol != RTPROT_KERNEL && (r.scope == RT_SCOPE_UNIVERSE || r.scope == RT_SCOPE_LINK))
                moved.push_back(r);
    }
    std::stable_partition(moved.begin(), moved.end(), [](const nl::RouteSpec& r) { return r.scope == RT_SCOPE_LINK && !r.gw; });
    if (auto st = nl::set_master(s, link, vrf.index); !st)
        return fail("could not set vrf " + vrf.name + " as master of " + link.name + ": " + st.error().msg);

    CNI_TRY_ASSIGN(auto v6_after, nl::list_addrs(s, link.index, AF_INET6));
    for (auto& a : v6_before) {
        if (a.scope != RT_SCOPE_UNIVERSE) continue;
        bool kept = false;
        for (auto& b : v6_after) kept = kept || b.local == a.local;
        if (kept) continue;
        // replace: the kernel may still be re-adding it as the enslave cycles the link
        if (auto st = nl::add_addr(s, link.index, link.name, a.local, a.flags, true); !st)
            return fail("could not restore address " + a.local.str() + " to " + link.name + " @ " + vrf.name + ": " +
                        st.error().msg);
        CNI_TRY(await_prefix_route(s, a.local, vrf.vrf_table));
    }
    for (auto r : moved) {
        (void)nl::del_route(s, r);  // usually gone already: the kernel flushed them with the link
        r.table = vrf.vrf_table;
        if (auto st = nl::replace_route(s, r); !st)
            return fail("could not move route " + nl::describe(r) + " to the VRF table: " + st.error().msg);
    }
    return {};
}

// The VRF, created if missing (bound to `table`, else to the lowest free one) and set up, its
// removal registered with `undo`; one of that name bound to another table is an error.
Result<nl::LinkInfo> ensure_vrf(const nl::Socket& s, const VrfConf& c, Rollback& undo) {
    CNI_TRY_ASSIGN(auto vrf, find_vrf(s, c.vrf_name));
    if (vrf && c.table && vrf->vrf_table != c.table)
        return fail("VRF " + c.vrf_name + " already exists with a different table " + std::to_string(vrf->vrf_table) +
                    ", not " + std::to_string(c.table));
    if (vrf) return *vrf;
    std::uint32_t table = c.table;
    if (!table) CNI_TRY_ASSIGN(table, free_vrf_table(s));
    if (auto st = nl::add_vrf(s, nl::NewLink{c.vrf_name, 0, "", 0, -1}, table); !st)
        return fail("could not add VRF " + c.vrf_name + ": " + st.error().msg);
    undo.push([&s, &c] { (void)nl::delete_link(s, c.vrf_name); });
    CNI_TRY_ASSIGN(vrf, nl::find_link(s, c.vrf_name));
    if (!vrf) return fail("VRF " + c.vrf_name + " vanished");
    if (auto st = nl::set_link_up(s, *vrf, true); !st)
        return fail("could not set link up for VRF " + c.vrf_name + ": " + st.error().msg);
    return *vrf;
}

// CNI_IFNAME, which must have no master yet, enslaved to the VRF (enslave); its release
// registered with `undo`. Errors unprefixed: ADD words them "cmdAdd failed: ...".
Status join_vrf(const nl::Socket& s, const VrfConf& c, const std::string& ifname, Rollback& undo) {
    CNI_TRY_ASSIGN(auto vrf, ensure_vrf(s, c, undo));
    CNI_TRY_ASSIGN(auto link, nl::find_link(s, ifname));
    if (!link) return fail("could not get link by name " + ifname);
    if (link->master) {
        auto master = nl::find_link(s, link->master);
        std::string name = master && *master ? (*master)->name : "#" + std::to_string(link->master);
        return fail("interface " + ifname + " has already a master set: " + name);
    }
    undo.push([&s, ifname] {
        if (auto l = nl::find_link(s, ifname); l && *l) (void)nl::set_master(s, **l, 0);
    });
    return enslave(s, vrf, *link);
}

Result<CniResult> vrf_add(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_vrf_conf(ctx.req));
    CNI_TRY_ASSIGN(auto prev, require_prev_result(c.net, kMissingPrevResult));
    CNI_TRY_ASSIGN(auto io, iface::open_container(ctx));
    Rollback undo;
    if (auto st = join_vrf(io.container, c, ctx.req.ifname, undo); !st) return fail("cmdAdd failed: " + st.error().msg);
    undo.dismiss();
    return prev;
}

Status vrf_del(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_vrf_conf(ctx.req));
    const Request& r = ctx.req;
    CNI_TRY_ASSIGN(auto io, iface::open_container_if_exists(ctx));
    if (!io) return {};
    const nl::Socket& s = io->container;
    CNI_TRY_ASSIGN(auto vrf, find_vrf(s, c.vrf_name));
    if (!vrf) return {};
    CNI_TRY_ASSIGN(auto link, nl::find_link(s, r.ifname));
    if (link && link->master == vrf->index)
        if (auto st = nl::set_master(s, *link, 0); !st) return fail("resetMaster: could reset master to " + r.ifname + ": " + st.error().msg);
    CNI_TRY_ASSIGN(auto slaves, nl::ports_of(s, vrf->index));
    if (slaves.empty()) CNI_TRY(nl::delete_link(s, c.vrf_name));
    return {};
}

Status vrf_check(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_vrf_conf(ctx.req));
    const Request& r = ctx.req;
    CNI_TRY(require_prev_result(c.net, kMissingPrevResult));
    CNI_TRY_ASSIGN(auto io, iface::open_container(ctx));
    const nl::Socket& s = io.container;
    CNI_TRY_ASSIGN(auto vrf, find_vrf(s, c.vrf_name));
    if (!vrf) return fail("failed to find VRF " + c.vrf_name);
    if (c.table && vrf->vrf_table != c.table)
        return fail("VRF " + c.vrf_name + " uses table " + std::to_string(vrf->vrf_table) + ", not " + std::to_string(c.table));
    CNI_TRY_ASSIGN(auto link, nl::require_link(s, r.ifname));
    if (link.master != vrf->index) return fail("interface " + r.ifname + " is not assigned to VRF " + c.vrf_name);
    return {};
}

constexpr auto kVrfKeysDocs = docs_of(kVrfKeys);

}  // namespace

extern const Applet vrf_applet{
    .name = "vrf",
    .kind = AppletKind::meta,
    .summary = "put the container interface into a VRF (chained)",
    .keys = kVrfKeysDocs,
    .help = "Needs prevResult.",
    .versions = kVrfVersions,
    .add = vrf_add,
    .del = vrf_del,
    .check = vrf_check,
};

}  // namespace cni::vrf
