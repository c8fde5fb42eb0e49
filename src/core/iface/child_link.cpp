// SPDX-License-Identifier: Apache-2.0
// Child links of a master moved into the container (see child_link.hpp).
#include "core/iface/child_link.hpp"

#include <linux/ip.h>

#include "core/iface/configure.hpp"
#include "core/nl/route.hpp"
#include "core/os/sysctl.hpp"

namespace cni::iface {

Result<nl::LinkInfo> find_master(const nl::Socket& where, const std::string& name) {
    if (name.empty()) {
        CNI_TRY_ASSIGN(auto index, nl::default_route_link(where));
        if (!index) return fail("failed to find master: no default route interface found");
        CNI_TRY_ASSIGN(auto link, nl::find_link(where, *index));
        if (!link) return fail("failed to find master: the default route's link vanished");
        return *link;
    }
    CNI_TRY_ASSIGN(auto link, nl::find_link(where, name));
    if (!link) return fail("failed to lookup master \"" + name + "\": Link not found");
    return *link;
}

Status check_child_mtu(std::int64_t mtu, const nl::LinkInfo& master) {
    if (mtu >= 0 && mtu <= master.mtu) return {};
    return fail("invalid MTU " + std::to_string(mtu) + ", must be [0, master MTU(" + std::to_string(master.mtu) + ")]");
}

Result<nl::LinkInfo> rename_new_link(const nl::Socket& container, const std::string& tmp, const std::string& ifname,
                                     std::string_view kind, Rollback& undo, const PrepareLink& prepare) {
    auto name = std::make_shared<std::string>(tmp);
    undo.push([&container, name] { (void)nl::delete_link(container, *name); });
    CNI_TRY_ASSIGN(auto link, nl::require_link(container, tmp));
    if (prepare) CNI_TRY(prepare(link));
    if (auto st = nl::rename_link(container, link, ifname); !st)
        return fail("failed to rename " + std::string(kind) + " to \"" + ifname + "\": " + st.error().msg);
    *name = ifname;
    return nl::require_link(container, ifname);
}

Result<nl::LinkInfo> create_child(const nl::Socket& host, const nl::Socket& container, const os::Netns& ns,
                                  bool in_container, const std::string& ifname, std::int64_t mtu, const std::string& mac,
                                  std::string_view kind, const CreateChild& create, Rollback& undo) {
    std::string tmp = nl::random_veth_name();
    nl::NewLink attrs{tmp, mtu, mac, 0, in_container ? -1 : ns.fd()};
    if (auto st = create(in_container ? container : host, attrs); !st)
        return fail("failed to create " + std::string(kind) + ": " + st.error().msg);
    return rename_new_link(container, tmp, ifname, kind, undo);
}

Status configure_child(const nl::Socket& container, const os::Netns& ns, const nl::LinkInfo& link, CniResult& result,
                       bool notify) {
    for (auto& ip : result.ips) ip.interface = 0;
    if (notify) {
        (void)nl::set_ipv4_conf(container, link, IPV4_DEVCONF_ARP_NOTIFY, 1);  // no /proc/sys/net/ipv4 lookup
        CNI_TRY_ASSIGN(auto guard, os::NetnsGuard::enter(ns));
        (void)os::sysctl_set("net/ipv6/conf/" + link.name + "/ndisc_notify", "1");
    }
    return configure_iface(container, ns, link, result);
}

}  // namespace cni::iface
