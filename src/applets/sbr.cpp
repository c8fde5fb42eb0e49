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
// rules it deletes; a configured gateway is not overwritten by a copy of the main table's default
// route; a failed ADD removes the rules and routes it added; CHECK verifies the rules. As the
// reference, it reads prevResult without giving it the config's cniVersion when it has none.
#include <linux/rtnetlink.h>
#include <unistd.h>

#include <set>

#include "core/applet.hpp"
#include "core/cni/netconf.hpp"
#include "core/go_num.hpp"
#include "core/iface/configure.hpp"
#include "core/iface/sockets.hpp"
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

Status add_source_routing(const nl::Socket& s, const SbrConf& c, const std::vector<IpConfig>& ips, const nl::LinkInfo& link,
                          Rollback& undo) {
    CNI_TRY_ASSIGN(auto used, tables_in_use(s));
    CNI_TRY_ASSIGN(auto routes, main_routes_of(s, link.index));
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
        for (auto& ip : ips) {
            nl::RouteSpec hint;
            hint.dst = ip.address.masked();
            hint.src = ip.address.ip;
            hint.oif = link.index;
            hint.scope = RT_SCOPE_LINK;
            (void)nl::replace_route(s, hint);  // as the reference: a warning at most
        }
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
        CNI_TRY(add_source_routing(s, c, ips, **link, undo));
    }
    undo.dismiss();
    return prev;
}

Status sbr_del(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_sbr_conf(ctx.req));
    const Request& r = ctx.req;
    CNI_TRY_ASSIGN(auto io, iface::open_container_if_exists(ctx));
    if (!io) return {};  // nothing can be left in a namespace that is gone
    auto lock = os::FileLock::acquire_existing(r.netns);
    if (!lock) return ::access(r.netns.c_str(), F_OK) != 0 ? Status{} : Status(cni::Unexpected(lock.error()));  // gone meanwhile
    const nl::Socket& s = io->container;
    CNI_TRY_ASSIGN(auto link, nl::find_link(s, r.ifname));
    if (!link) return {};
    CNI_TRY_ASSIGN(auto addrs, nl::list_addrs(s, link->index));
    std::vector<std::string> errors;
    for (int family : {AF_INET, AF_INET6}) {
        CNI_TRY_ASSIGN(auto rules, nl::list_rules(s, family));
        for (auto& rule : rules) {
            if (!rule.src || (c.table && std::int64_t(rule.table) != *c.table)) continue;
            bool ours = false;
            for (auto& a : addrs) ours = ours || a.local.ip == rule.src->ip;
            if (!ours) continue;
            if (auto gone = nl::del_rule(s, rule); !gone) {
                errors.push_back(gone.error().msg);
                continue;
            }
            if (c.table) continue;  // a configured table is the operator's, its routes stay
            for (int route_family : {AF_INET, AF_INET6}) {
                CNI_TRY_ASSIGN(auto routes, nl::list_routes(s, route_family, rule.table));
                for (auto& route : routes)
                    if (route.oif == link->index)
                        if (auto gone = nl::del_route(s, route); !gone) errors.push_back(gone.error().msg);
            }
        }
    }
    if (!errors.empty()) return fail(errors.back());
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
    .help = "Needs prevResult. Tables are chosen from 100 up.",
    .versions = kAllVersions,
    .add = sbr_add,
    .del = sbr_del,
    .check = sbr_check,
};

}  // namespace cni::sbr
