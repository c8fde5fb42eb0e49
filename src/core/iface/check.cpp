// SPDX-License-Identifier: Apache-2.0
// CHECK helpers (see check.hpp).
#include "core/iface/check.hpp"

#include "core/iface/configure.hpp"
#include "core/nl/addr.hpp"
#include "core/nl/route.hpp"

namespace cni::iface {
namespace {

Result<nl::LinkInfo> check_container_link(const nl::Socket& container, const CniResult& prev, const std::string& ifname,
                                          const std::string& netns, std::string_view kind) {
    const Interface* mine = nullptr;
    for (auto& i : prev.interfaces)
        if (i.name == ifname && i.sandbox == netns) mine = &i;
    if (!mine) return fail("Sandbox in prevResult doesn't match configured netns: " + netns);
    CNI_TRY_ASSIGN(auto link, nl::require_link(container, ifname));
    if (!kind.empty() && link.kind != kind) return fail("Error: Container interface " + ifname + " not of type " + std::string(kind));
    if (!mine->mac.empty() && mine->mac != link.mac)
        return fail("Interface " + ifname + " Mac " + mine->mac + " doesn't match container Mac: " + link.mac);
    return link;
}

Result<std::vector<net::IpNet>> check_addresses_and_routes(const nl::Socket& container, const nl::LinkInfo& link,
                                                           const CniResult& prev, const std::string& ifname) {
    CNI_TRY(require_addresses_and_routes(prev));
    CNI_TRY_ASSIGN(auto addrs, nl::list_addrs(container, link.index));
    std::vector<net::IpNet> nets;
    for (auto& ip : prev.ips) {
        if (!ip_is_for(prev, ip, ifname)) continue;
        nets.push_back(ip.address);
        bool found = false;
        for (auto& a : addrs) found |= a.local == ip.address;
        if (!found) return fail("Failed to match addr " + ip.address.str() + " on interface " + ifname);
    }
    for (auto& want : prev.routes) {
        CNI_TRY_ASSIGN(auto routes, nl::list_routes(container, want.dst.ip.is_v4() ? AF_INET : AF_INET6, std::nullopt));
        bool found = false;
        for (auto& have : routes) found |= have.dst == want.dst.masked() && (!want.gw || have.gw == want.gw);
        if (!found) return fail("Failed to match route " + want.dst.str() + " in the container");
    }
    return nets;
}

Status check_no_ipv6_link_local(const nl::Socket& container, const nl::LinkInfo& link, const CniResult& prev) {
    for (auto& ip : prev.ips)
        if (!ip.address.ip.is_v4()) return {};
    CNI_TRY_ASSIGN(auto addrs, nl::list_addrs(container, link.index, AF_INET6));
    for (auto& a : addrs)
        if (a.scope == RT_SCOPE_LINK)
            return fail("skipIPv6LinkLocal: " + link.name + " has the IPv6 link-local address " + a.local.str());
    return {};
}

}  // namespace

Result<std::vector<net::IpNet>> check_interface(const nl::Socket& container, const Request& r, const CniResult& prev,
                                                const InterfaceCheck& want) {
    CNI_TRY_ASSIGN(auto link, check_container_link(container, prev, r.ifname, r.netns, want.kind));
    if (want.attributes) CNI_TRY(want.attributes(link));
    CNI_TRY_ASSIGN(auto nets, check_addresses_and_routes(container, link, prev, r.ifname));
    if (want.skip_ipv6_link_local) CNI_TRY(check_no_ipv6_link_local(container, link, prev));
    return nets;
}

}  // namespace cni::iface
