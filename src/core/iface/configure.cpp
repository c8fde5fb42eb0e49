// SPDX-License-Identifier: Apache-2.0
// Interface configuration from a CNI result (see configure.hpp).
#include "core/iface/configure.hpp"

#include <linux/if_addr.h>
#include <linux/if_link.h>

#include <chrono>
#include <thread>

#include "core/go_num.hpp"
#include "core/nl/addr.hpp"
#include "core/nl/link.hpp"
#include "core/nl/netconf.hpp"
#include "core/nl/route.hpp"
#include "core/os/sysctl.hpp"

namespace cni::iface {
namespace {

Status enable_ipv6(const os::Netns& ns, const std::string& ifname) {
    CNI_TRY_ASSIGN(auto guard, os::NetnsGuard::enter(ns));
    for (const std::string& dev : {std::string("lo"), ifname}) {
        std::string name = "net/ipv6/conf/" + dev + "/disable_ipv6";
        auto value = os::sysctl_get(name);
        if (!value || *value == "0") continue;  // unreadable: the reference only logs it
        if (auto st = os::sysctl_set(name, "0"); !st)
            return fail("failed to enable IPv6 for interface \"" + dev + "\" (" + name + "=" + *value + "): " + st.error().msg);
    }
    (void)os::sysctl_set("net/ipv6/conf/" + ifname + "/keep_addr_on_down", "1");
    return {};
}

// Wait (5 s at most, 50 ms polls) until no IPv6 address of the link is tentative.
Status wait_for_dad(const nl::Socket& s, const nl::LinkInfo& link) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (true) {
        CNI_TRY_ASSIGN(auto addrs, nl::list_addrs(s, link.index, AF_INET6));
        bool tentative = false;
        for (auto& a : addrs) {
            if (a.flags & IFA_F_DADFAILED) return fail("failed while waiting for addresses to be stable: DAD failed for " + a.local.str());
            if ((a.flags & IFA_F_TENTATIVE) && a.scope == RT_SCOPE_UNIVERSE) tentative = true;
        }
        if (!tentative) return {};
        if (std::chrono::steady_clock::now() > deadline) {
            CNI_TRY_ASSIGN(auto now, nl::find_link(s, link.index));
            if (now && now->oper_state == 6 /* IF_OPER_UP */)
                return fail("failed while waiting for addresses to be stable: link " + link.name + " still has tentative addresses");
            return {};
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

// A result route's priority, table, mtu, advmss and scope are Go ints, the kernel's u32s (scope a
// byte). As Go's netlink does, one of the first four at 0 or below is left unset (the main table
// for a table). One past the kernel's field is refused, where Go's would keep its low bits.
Status set_route_numbers(const Route& r, nl::RouteSpec& spec) {
    auto value = [&](std::int64_t v, std::string_view key) -> Result<std::uint32_t> {
        if (v <= 0) return 0;
        if (auto u = kernel_u32(v)) return *u;
        return fail("route " + r.dst.str() + ": " + std::string(key) + " " + std::to_string(v) + " is out of range [0, 4294967295]");
    };
    CNI_TRY_ASSIGN(spec.metric, value(r.priority, "priority"));
    CNI_TRY_ASSIGN(spec.mtu, value(r.mtu, "mtu"));
    CNI_TRY_ASSIGN(spec.advmss, value(r.advmss, "advmss"));
    if (r.table && *r.table > 0) CNI_TRY_ASSIGN(spec.table, value(*r.table, "table"));
    if (r.scope && (*r.scope < 0 || *r.scope > 255))
        return fail("route " + r.dst.str() + ": scope " + std::to_string(*r.scope) + " is out of range [0, 255]");
    if (r.scope) spec.scope = int(*r.scope);
    return {};
}

}  // namespace

bool ip_is_for(const CniResult& result, const IpConfig& ip, const std::string& ifname) {
    if (!ip.interface || *ip.interface < 0) return true;
    auto idx = std::size_t(*ip.interface);
    return idx >= result.interfaces.size() || result.interfaces[idx].name == ifname;
}

Status configure_iface(const nl::Socket& container, const os::Netns& container_ns, const std::string& ifname,
                       const CniResult& result) {
    CNI_TRY_ASSIGN(auto link, nl::require_link(container, ifname));
    return configure_iface(container, container_ns, link, result);
}

Status configure_iface(const nl::Socket& container, const os::Netns& container_ns, const nl::LinkInfo& link,
                       const CniResult& result) {
    CNI_TRY(require_addresses_and_routes(result));
    const std::string& ifname = link.name;
    std::optional<net::IpAddr> gw4, gw6;
    bool ipv6_enabled = false;
    for (auto& ip : result.ips) {
        if (ip.interface && std::size_t(*ip.interface) >= result.interfaces.size())
            return fail("failed to add IP addr " + ip.address.str() + " to \"" + ifname + "\": invalid interface index");
        if (!ip_is_for(result, ip, ifname)) continue;
        bool v4 = ip.address.ip.is_v4();
        if (!v4 && !ipv6_enabled) {
            CNI_TRY(enable_ipv6(container_ns, ifname));
            ipv6_enabled = true;
        }
        if (auto st = nl::add_addr(container, link.index, ifname, ip.address); !st)
            return fail("failed to add IP addr " + ip.address.str() + " to \"" + ifname + "\": " + st.error().msg);
        if (ip.gateway) {
            if (v4 && !gw4) gw4 = ip.gateway;
            if (!v4 && !gw6) gw6 = ip.gateway;
        }
    }
    if (auto st = nl::set_link_up(container, link, true); !st)
        return fail("failed to set \"" + ifname + "\" UP: " + st.error().msg);
    if (gw6) CNI_TRY(wait_for_dad(container, link));
    for (auto& r : result.routes) {
        nl::RouteSpec spec;
        spec.dst = r.dst.masked();
        spec.oif = link.index;
        spec.gw = r.gw ? r.gw : (r.dst.ip.is_v4() ? gw4 : gw6);
        // An on-link route (scope link, no gateway: e.g. DHCP classless routes via 0.0.0.0)
        // stays on-link. The reference fills in the default gateway here too, which the kernel
        // always refuses for a scope-link route ("Nexthop has invalid gateway").
        if (!r.gw && r.scope == RT_SCOPE_LINK) spec.gw.reset();
        CNI_TRY(set_route_numbers(r, spec));
        if (auto st = nl::add_route(container, spec); !st)
            return fail("failed to add route '" + r.dst.str() + " via " + (spec.gw ? spec.gw->str() : std::string("<nil>")) +
                        " dev " + ifname + "': " + st.error().msg);
    }
    return {};
}

Status skip_ipv6_link_local(const nl::Socket& container, const nl::LinkInfo& link, const std::vector<IpConfig>& ips) {
    for (auto& ip : ips)
        if (!ip.address.ip.is_v4()) return {};
    if (auto st = nl::set_ipv6_addr_gen_mode(container, link, IN6_ADDR_GEN_MODE_NONE); !st)
        return fail("skipIPv6LinkLocal: " + st.error().msg);
    return {};
}

Status enable_forwarding(const nl::Socket& s, const std::vector<IpConfig>& ips) {
    bool v4 = false, v6 = false;
    for (auto& ip : ips) (ip.address.ip.is_v4() ? v4 : v6) = true;
    auto ensure = [&](int family, const char* name) -> Status {
        // Read over netlink (no /proc/sys lookup, see os::SysctlDir); from /proc/sys if that fails.
        auto on = nl::forwarding_enabled(s, family);
        if (on && *on) return {};
        if (!on) {
            auto value = os::sysctl_get(name);
            if (value && *value == "1") return {};
        }
        return os::sysctl_set(name, "1");
    };
    if (v4) CNI_TRY(ensure(AF_INET, "net/ipv4/ip_forward"));
    if (v6) CNI_TRY(ensure(AF_INET6, "net/ipv6/conf/all/forwarding"));
    return {};
}

}  // namespace cni::iface
