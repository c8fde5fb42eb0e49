// SPDX-License-Identifier: Apache-2.0
// sbr (docs/compatibility.md: sbr): source-based routing for CNI_IFNAME, chained after a main
// plugin. With `table`, it only adds "from <ip> lookup <table>" per address. Otherwise, per
// address of the interface in prevResult, it takes the first table from 100 up that no rule or
// route uses, adds "from <ip>/32 lookup T", a default route via the gateway (the `gateways`
// entry of that family, else the address's own gateway) and copies into T the interface's
// main-table routes whose source or gateway is in the address's subnet (or that have neither);
// finally the interface's main-table routes go (or, with addSourceHints, only those that are
// not subnet routes, which get a source hint instead). The netns file is flock'ed as the
// reference does, so Go and cni-all sbr exclude each other. Beyond the reference: DEL succeeds
// with an empty or vanished netns; it also removes the interface's routes from the tables whose
// rules it deletes and gives the main table back the routes ADD moved, which ADD wrote down
// (moved_routes.hpp), so ADD, DEL, ADD on an interface that stays works; GC drops the records of
// attachments that are gone; a configured gateway is not overwritten by a copy of the main table's
// default route; a failed ADD removes the rules and routes it added; CHECK verifies the rules. As
// the reference, it reads prevResult without giving it the config's cniVersion when it has none.
#include <linux/rtnetlink.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <set>

#include "applets/sbr/moved_routes.hpp"
#include "core/applet.hpp"
#include "core/cni/netconf.hpp"
#include "core/go_num.hpp"
#include "core/iface/configure.hpp"
#include "core/iface/sockets.hpp"
#include "core/iface/unlisted_records.hpp"
#include "core/nl/addr.hpp"
#include "core/nl/link.hpp"
#include "core/nl/route.hpp"
#include "core/nl/rule.hpp"
#include "core/os/file_lock.hpp"
#include "core/os/netns.hpp"
#include "core/rollback.hpp"

namespace cni::sbr {
namespace {

constexpr std::uint32_t kFirstTable = 100;

struct SbrConf {
    NetConf net;
    std::optional<std::int64_t> table;  // a Go int; ADD refuses one that is no kernel table id
    std::optional<net::IpAddr> gw4, gw6;  // `gateways`
    bool add_source_hints = false;
    std::vector<std::string> gateways;  // as written; parsed into gw4, gw6
};

constexpr std::array kSbrKeys{
    key<&SbrConf::table>("table", "only add \"from <ip> lookup <table>\" rules to this table"),
    key<&SbrConf::add_source_hints>("addSourceHints", "routes in the new tables name the source address"),
    key<&SbrConf::gateways>("gateways", "[IPv4, IPv6]: the default gateways of the new tables"),
};

Result<SbrConf> parse_sbr_conf(const Request& req) {
    CNI_TRY_ASSIGN(auto c, load_config(req.config, kSbrKeys, "PluginConf", kParseNetworkConf));
    const auto& gateways = c.gateways;
    if (gateways.size() > 2) return fail("gateways list cannot contain more than 2 entries (one IPv4, one IPv6)");
    for (auto& g : gateways) {
        auto ip = net::IpAddr::parse(g);
        if (!ip) return fail("invalid static gateway IP address: " + g);
        auto& slot = ip->is_v4() ? c.gw4 : c.gw6;
        if (slot) return fail(std::string("gateways list contains multiple ") + (ip->is_v4() ? "IPv4" : "IPv6") +
                              " addresses: " + slot->str() + " and " + g);
        slot = *ip;
    }
    return c;
}

// The prevResult, read without the config's cniVersion when it has none (PrevResultVersion).
Result<CniResult> chained_prev_result(const SbrConf& c) {
    return require_prev_result(c.net, "This plugin must be called as chained plugin", "could not parse prevResult: ",
                               PrevResultVersion::as_given);
}

// The prevResult's addresses on CNI_IFNAME (an address without an interface counts).
Result<std::vector<IpConfig>> addresses_for(const CniResult& prev, const std::string& ifname) {
    if (prev.ips.empty()) return fail("No IP addresses supplied on interface: " + ifname);
    CNI_TRY(require_ip_addresses(prev));
    std::vector<IpConfig> out;
    for (auto& ip : prev.ips)
        if (iface::ip_is_for(prev, ip, ifname)) out.push_back(ip);
    return out;
}

net::IpNet host_net(const net::IpAddr& ip) { return net::IpNet{ip, ip.bits(), ip.bits()}; }

// Every table any rule or route of either family refers to.
Result<std::set<std::uint32_t>> tables_in_use(const nl::Socket& s) {
    std::set<std::uint32_t> used;
    for (int family : {AF_INET, AF_INET6}) {
        CNI_TRY_ASSIGN(auto rules, nl::list_rules(s, family));
        for (auto& r : rules) used.insert(r.table);
        CNI_TRY_ASSIGN(auto routes, nl::list_routes(s, family, std::nullopt));
        for (auto& r : routes) used.insert(r.table);
    }
    return used;
}

std::uint32_t next_free(const std::set<std::uint32_t>& used, std::uint32_t from) {
    while (used.contains(from)) ++from;
    return from;
}

Result<std::vector<nl::RouteSpec>> main_routes_of(const nl::Socket& s, int link_index) {
    std::vector<nl::RouteSpec> out;
    for (int family : {AF_INET, AF_INET6}) {
        CNI_TRY_ASSIGN(auto routes, nl::list_routes(s, family, RT_TABLE_MAIN));
        for (auto& r : routes)
            if (r.oif == link_index) out.push_back(r);
    }
    return out;
}

// "from <ip> lookup <table>", its removal registered with `undo`; an error worded `failed` + why.
Status add_from_rule(const nl::Socket& s, const net::IpAddr& ip, std::uint32_t table, std::string_view failed, Rollback& undo) {
    nl::RuleSpec rule;
    rule.src = host_net(ip);
    rule.table = table;
    if (auto st = nl::add_rule(s, rule); !st) return fail(std::string(failed) + st.error().msg);
    undo.push([&s, rule] { (void)nl::del_rule(s, rule); });
    return {};
}

Status add_rules_only(const nl::Socket& s, const std::vector<IpConfig>& ips, std::uint32_t table, Rollback& undo) {
    for (auto& ip : ips) CNI_TRY(add_from_rule(s, ip.address.ip, table, "failed to add rule: ", undo));
    return {};
}

// addSourceHints' route for an address: its subnet on the link, with the address as the source.
nl::RouteSpec source_hint(const net::IpNet& address, int link_index) {
    nl::RouteSpec hint;
    hint.dst = address.masked();
    hint.src = address.ip;
    hint.oif = link_index;
    hint.scope = RT_SCOPE_LINK;
    return hint;
}

// Writes down the main-table routes ADD is about to move (moved_routes.hpp), with those an earlier
// ADD of the attachment recorded; the record as it was comes back if ADD fails.
Status record_moved(const SbrConf& c, const Request& r, const std::vector<nl::RouteSpec>& routes, Rollback& undo) {
    CNI_TRY_ASSIGN(auto records, os::open_records("sbr", true));
    std::string name = os::record_name(r.container_id, r.ifname);
    CNI_TRY_ASSIGN(auto earlier, load_moved_routes(*records, name));
    MovedRoutes moved{c.net.name, earlier ? earlier->routes : std::vector<nl::RouteSpec>{}};
    for (auto& route : routes)
        if (std::find(moved.routes.begin(), moved.routes.end(), route) == moved.routes.end()) moved.routes.push_back(route);
    if (moved.routes.size() > kMaxMovedRoutes) return fail("sbr: more than " + std::to_string(kMaxMovedRoutes) + " routes to move");
    CNI_TRY(save_moved_routes(*records, name, moved));
    undo.push([dir = std::make_shared<os::Dir>(std::move(*records)), name, earlier] {
        if (earlier) (void)save_moved_routes(*dir, name, *earlier);
        else dir->remove(name);
    });
    return {};
}

Status add_source_routing(const nl::Socket& s, const SbrConf& c, const Request& req, const std::vector<IpConfig>& ips,
                          const nl::LinkInfo& link, Rollback& undo) {
    CNI_TRY_ASSIGN(auto used, tables_in_use(s));
    CNI_TRY_ASSIGN(auto routes, main_routes_of(s, link.index));
    CNI_TRY(record_moved(c, req, routes, undo));
    std::uint32_t table = next_free(used, kFirstTable);
    for (auto& ip : ips) {
        CNI_TRY(add_from_rule(s, ip.address.ip, table, "Failed to add rule: ", undo));

        auto fixed_gw = ip.address.ip.is_v4() ? c.gw4 : c.gw6;
        auto gw = fixed_gw ? fixed_gw : ip.gateway;
        if (gw) {
            nl::RouteSpec def;
            def.dst = net::IpNet{ip.address.ip.is_v4() ? *net::IpAddr::parse("0.0.0.0") : *net::IpAddr::parse("::"), 0, ip.address.ip.bits()};
            def.gw = gw;
            def.oif = link.index;
            def.table = table;
            if (auto st = nl::add_route(s, def); !st)
                return fail("Failed to add default route to " + gw->str() + ": " + st.error().msg);
            undo.push([&s, def] { (void)nl::del_route(s, def); });
        }
        net::IpNet subnet = ip.address.masked();
        for (auto r : routes) {
            bool related = (r.src && subnet.contains(*r.src)) || (r.gw && subnet.contains(*r.gw)) || (!r.src && !r.gw);
            // A configured gateway wins over the main table's default route (the reference
            // copies that over the default it has just added).
            bool replaces_fixed_default = fixed_gw && r.dst.prefix == 0 && r.dst.ip.is_v4() == fixed_gw->is_v4();
            if (!related || replaces_fixed_default) continue;
            r.table = table;
            if (auto st = nl::replace_route(s, r); !st) return fail("Failed to readd route: " + st.error().msg);
            undo.push([&s, r] { (void)nl::del_route(s, r); });
        }
        used.insert(table);
        table = next_free(used, table + 1);
    }

    if (c.add_source_hints) {
        for (auto& ip : ips) (void)nl::replace_route(s, source_hint(ip.address, link.index));  // as the reference: a warning at most
        for (auto& r : routes)
            if (r.scope != RT_SCOPE_LINK) (void)nl::del_route(s, r);
        return {};
    }
    for (auto& r : routes) {
        auto gone = nl::del_route(s, r);
        if (!gone) return fail("Failed to delete route: " + gone.error().msg);
        undo.push([&s, r] { (void)nl::add_route(s, r); });
    }
    return {};
}

Result<CniResult> sbr_add(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_sbr_conf(ctx.req));
    const Request& r = ctx.req;
    CNI_TRY_ASSIGN(auto prev, chained_prev_result(c));
    CNI_TRY_ASSIGN(auto ips, addresses_for(prev, r.ifname));
    // Go's netlink would send a negative table as none and keep the low 32 bits of a larger one.
    if (c.table && !kernel_u32(*c.table))
        return fail("invalid table " + std::to_string(*c.table) + ": a routing table id lies in [0, 4294967295]");

    CNI_TRY_ASSIGN(auto io, iface::open_container(ctx));
    CNI_TRY_ASSIGN(auto lock, os::FileLock::acquire_existing(r.netns));
    const nl::Socket& s = io.container;
    Rollback undo;
    if (c.table) {
        CNI_TRY(add_rules_only(s, ips, std::uint32_t(*c.table), undo));
    } else {
        auto link = nl::find_link(s, r.ifname);
        if (!link || !*link)
            return fail("Cannot find network interface " + r.ifname + ": " + (link ? "Link not found" : link.error().msg));
        CNI_TRY(add_source_routing(s, c, r, ips, **link, undo));
    }
    undo.dismiss();
    return prev;
}

// DEL gives the main table back what ADD took (beyond the reference, docs/compatibility.md: sbr),
// so that a later ADD on the same interface finds its gateways reachable: addSourceHints' routes
// go (one stands where a subnet route was), then the routes ADD recorded come back, on-link ones
// first, and the record goes. Nothing already in the main table is replaced. Without a record (an
// attachment of the Go sbr's), nothing comes back, as with the reference; a record that does not
// decode is dropped with a warning, so that it cannot hold the DEL up.
void give_back_main_routes(const Context& ctx, const nl::Socket& s, const SbrConf& c, const nl::LinkInfo& link,
                           const std::vector<net::IpNet>& hinted, std::vector<std::string>& errors) {
    const Request& r = ctx.req;
    if (c.add_source_hints)
        for (auto& a : hinted)
            if (auto gone = nl::del_route(s, source_hint(a, link.index)); !gone) errors.push_back(gone.error().msg);
    auto records = os::open_records("sbr", false);
    if (!records || !*records) return records ? void() : errors.push_back(records.error().msg);
    std::string name = os::record_name(r.container_id, r.ifname);
    auto moved = load_moved_routes(**records, name);
    if (!moved) {
        ctx.warn(moved.error().msg + "; no route goes back to the main table");
        return (void)(*records)->remove(name);
    }
    if (!*moved) return;
    auto& routes = (*moved)->routes;
    std::stable_partition(routes.begin(), routes.end(), [](const nl::RouteSpec& m) { return !m.gw; });
    for (auto route : routes) {
        route.oif = link.index;
        if (auto added = nl::add_route_if_absent(s, route); !added) errors.push_back(added.error().msg);
    }
    if (errors.empty()) (*records)->remove(name);
}

// The record of an attachment whose namespace or interface is gone: nothing to give back to.
void forget_moved_routes(const Request& r) {
    if (auto records = os::open_records("sbr", false); records && *records) (*records)->remove(os::record_name(r.container_id, r.ifname));
}

Status sbr_del(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_sbr_conf(ctx.req));
    const Request& r = ctx.req;
    CNI_TRY_ASSIGN(auto io, iface::open_container_if_exists(ctx));
    if (!io) return forget_moved_routes(r), Status{};  // nothing can be left in a namespace that is gone
    auto lock = os::FileLock::acquire_existing(r.netns);
    if (!lock) return ::access(r.netns.c_str(), F_OK) != 0 ? Status{} : Status(cni::Unexpected(lock.error()));  // gone meanwhile
    const nl::Socket& s = io->container;
    CNI_TRY_ASSIGN(auto link, nl::find_link(s, r.ifname));
    if (!link) return forget_moved_routes(r), Status{};
    CNI_TRY_ASSIGN(auto addrs, nl::list_addrs(s, link->index));
    std::vector<std::string> errors;
    std::vector<net::IpNet> routed;  // the addresses whose rules went
    for (int family : {AF_INET, AF_INET6}) {
        CNI_TRY_ASSIGN(auto rules, nl::list_rules(s, family));
        for (auto& rule : rules) {
            if (!rule.src || (c.table && std::int64_t(rule.table) != *c.table)) continue;
            auto ours = std::find_if(addrs.begin(), addrs.end(), [&](auto& a) { return a.local.ip == rule.src->ip; });
            if (ours == addrs.end()) continue;
            if (auto gone = nl::del_rule(s, rule); !gone) {
                errors.push_back(gone.error().msg);
                continue;
            }
            if (c.table) continue;  // a configured table is the operator's, its routes stay
            routed.push_back(ours->local);
            for (int route_family : {AF_INET, AF_INET6}) {
                CNI_TRY_ASSIGN(auto routes, nl::list_routes(s, route_family, rule.table));
                for (auto& route : routes)
                    if (route.oif == link->index)
                        if (auto gone = nl::del_route(s, route); !gone) errors.push_back(gone.error().msg);
            }
        }
    }
    if (!c.table) give_back_main_routes(ctx, s, c, *link, routed, errors);
    if (!errors.empty()) return fail(errors.back());
    return {};
}

// This network's records of attachments not in cni.dev/valid-attachments go; their routes lived
// in namespaces GC cannot reach, which the runtime has removed.
Status sbr_gc(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_sbr_conf(ctx.req));
    if (!c.net.valid_attachments) return {};
    CNI_TRY_ASSIGN(auto unlisted, iface::unlisted_records("sbr", *c.net.valid_attachments));
    if (!unlisted) return {};
    for (auto& name : unlisted->names)
        if (auto moved = load_moved_routes(unlisted->dir, name); !moved || (*moved && (*moved)->network == c.net.name))
            unlisted->dir.remove(name);
    return {};
}

Status sbr_check(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_sbr_conf(ctx.req));
    const Request& r = ctx.req;
    CNI_TRY_ASSIGN(auto prev, chained_prev_result(c));
    CNI_TRY_ASSIGN(auto ips, addresses_for(prev, r.ifname));
    CNI_TRY_ASSIGN(auto io, iface::open_container(ctx));
    for (auto& ip : ips) {
        CNI_TRY_ASSIGN(auto rules, nl::list_rules(io.container, ip.address.ip.is_v4() ? AF_INET : AF_INET6));
        bool found = false;
        for (auto& rule : rules)
            found = found || (rule.src && *rule.src == host_net(ip.address.ip) && (!c.table || std::int64_t(rule.table) == *c.table));
        if (!found) return fail("sbr: no rule \"from " + ip.address.ip.str() + " lookup ...\" for " + r.ifname);
    }
    return {};
}

constexpr auto kSbrKeysDocs = docs_of(kSbrKeys);

}  // namespace

extern const Applet sbr_applet{
    .name = "sbr",
    .kind = AppletKind::meta,
    .summary = "source-based routing tables for the container interface (chained)",
    .keys = kSbrKeysDocs,
    .help = "Needs prevResult. Tables are chosen from 100 up. DEL gives the main table back the routes ADD moved, "
            "which ADD writes down in /run/cni/sbr.",
    .versions = kAllVersions,
    .add = sbr_add,
    .del = sbr_del,
    .check = sbr_check,
    .gc = sbr_gc,
};

}  // namespace cni::sbr
