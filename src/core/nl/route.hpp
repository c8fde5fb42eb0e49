// SPDX-License-Identifier: Apache-2.0
// Routes (rtnetlink RTM_*ROUTE) as plain values: destination, gateway, output link, preferred
// source, scope, table, metric, the MTU/advmss metrics and ECMP next hops. New routes use protocol "boot" and
// NLM_F_EXCL, as Go netlink's RouteAdd (and `ip route add`) do.
#pragma once

#include <linux/rtnetlink.h>

#include <optional>
#include <string>
#include <vector>

#include "core/net/ip.hpp"
#include "core/nl/socket.hpp"

namespace cni::nl {

struct NextHop {
    std::optional<net::IpAddr> gw;
    int oif = 0;
    int weight = 1;                 // as `ip route` counts it (the kernel stores weight - 1)
    bool operator==(const NextHop&) const = default;
};

struct RouteSpec {
    net::IpNet dst;                      // the network (host bits cleared)
    std::optional<net::IpAddr> gw;
    int oif = 0;                    // output link index, 0 if none
    std::optional<net::IpAddr> src;      // preferred source
    int scope = RT_SCOPE_UNIVERSE;
    std::uint32_t table = RT_TABLE_MAIN;  // the kernel's u32s
    std::uint32_t metric = 0;
    std::uint32_t mtu = 0;
    std::uint32_t advmss = 0;
    int type = RTN_UNICAST;
    int protocol = RTPROT_BOOT;     // who made it (RTPROT_KERNEL for prefix routes, ...)
    std::vector<NextHop> multipath; // ECMP: set instead of gw/oif (a listed route with one next hop has none)
    bool operator==(const RouteSpec&) const = default;
};

Status add_route(const Socket& s, const RouteSpec& r);
// add_route, where a route with the same destination, table and metric already there is left as
// it is: false.
Result<bool> add_route_if_absent(const Socket& s, const RouteSpec& r);
// Adds or replaces the route with the same destination, table and metric (`ip route replace`).
Status replace_route(const Socket& s, const RouteSpec& r);
// Matches on dst, table, oif, gw, metric, src (scope and protocol are wildcards); false when absent.
Result<bool> del_route(const Socket& s, const RouteSpec& r);
// Routes of `family` (AF_INET/AF_INET6) in `table` (all tables when nullopt), unicast only.
Result<std::vector<RouteSpec>> list_routes(const Socket& s, int family, std::optional<std::uint32_t> table = RT_TABLE_MAIN);
// The same for the routes of `table` whose next hop leaves through link `oif` only, filtered by
// the kernel (a strict dump request): what the answer costs does not grow with the node's other
// routes.
Result<std::vector<RouteSpec>> list_routes_via(const Socket& s, int family, int oif, std::uint32_t table = RT_TABLE_MAIN);

// The link the kernel routes `dst` through (`ip route get`: rules and tables included);
// nullopt when it is unreachable, leaves through no link, or the lookup fails.
std::optional<int> route_get_link(const Socket& s, const net::IpAddr& dst);
// The route the kernel would use for `dst`, as its table holds it (`ip route get fibmatch`: its
// prefix, type, table and next hops); nothing when there is none or the lookup fails.
std::optional<RouteSpec> route_to(const Socket& s, const net::IpAddr& dst);

std::string describe(const RouteSpec& r);

// The link of the first default route (IPv4, then IPv6) in the main table, as the reference
// picks a macvlan/ipvlan master; nullopt when there is none.
Result<std::optional<int>> default_route_link(const Socket& s);  // "10.0.0.0/24 via 10.0.0.1 dev #3" for messages

}  // namespace cni::nl
