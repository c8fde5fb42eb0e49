// SPDX-License-Identifier: Apache-2.0
// A DHCPACK as a CNI result (see lease_result.hpp).
#include "applets/dhcp/lease_result.hpp"

#include <bit>

namespace cni::dhcp {
namespace {

constexpr int kScopeLink = 253;  // RT_SCOPE_LINK

Route route_for(const StaticRoute& r, std::int64_t priority) {
    Route out{r.dst, std::nullopt, 0, 0, priority, std::nullopt, std::nullopt};
    if (r.gateway) out.gw = v4(r.gateway);
    else out.scope = kScopeLink;
    return out;
}

}  // namespace

Result<CniResult> lease_result(const Message& ack, std::int64_t priority) {
    auto mask = ack.address_option(opt::subnet_mask);
    if (!mask) return fail("DHCP option Subnet Mask not found in DHCPACK");
    if (std::uint32_t inv = ~*mask; (inv & (inv + 1)) != 0)
        return fail("DHCP server sent a non-contiguous subnet mask " + v4(*mask).str());
    CniResult r;
    IpConfig ip{std::nullopt, net::IpNet{v4(ack.yiaddr), std::popcount(*mask), 32}, std::nullopt};
    auto router = ack.address_option(opt::routers);
    if (router) ip.gateway = v4(*router);
    r.ips.push_back(ip);

    if (const Bytes* classless = ack.find(opt::classless_routes)) {
        CNI_TRY_ASSIGN(auto routes, parse_classless_routes(*classless));
        for (auto& sr : routes) r.routes.push_back(route_for(sr, priority));
        return r;
    }
    if (const Bytes* fixed = ack.find(opt::static_routes)) {
        CNI_TRY_ASSIGN(auto routes, parse_static_routes(*fixed));
        for (auto& sr : routes) r.routes.push_back(route_for(sr, priority));
    }
    if (router) r.routes.push_back(route_for(StaticRoute{*net::IpNet::parse("0.0.0.0/0"), *router}, priority));
    return r;
}

}  // namespace cni::dhcp
