// SPDX-License-Identifier: Apache-2.0
// veth pair setup (see veth.hpp).
#include "core/iface/veth.hpp"

#include "core/os/sysctl.hpp"

namespace cni::iface {

Result<VethPair> setup_veth(const nl::Socket& container, const nl::Socket& host, const os::Netns& host_ns,
                            const std::string& ifname, int mtu, const std::string& mac) {
    CNI_TRY_ASSIGN(auto existing, nl::find_link(container, ifname));
    if (existing) return fail("container veth name provided (" + ifname + ") already exists");
    std::string peer;
    for (int attempt = 0;; ++attempt) {
        if (attempt == 10) return fail("failed to find a unique veth name");
        peer = nl::random_veth_name();
        nl::NewLink self{ifname, mtu, mac, 0, -1};
        nl::NewLink other{peer, mtu, "", 0, host_ns.fd()};
        auto made = nl::add_veth(container, self, other);
        if (made) break;
        CNI_TRY_ASSIGN(auto clash, nl::find_link(host, peer));
        if (!clash) return fail("failed to make veth pair: " + made.error().msg);
    }
    CNI_TRY_ASSIGN(auto host_end, nl::require_link(host, peer));
    CNI_TRY(nl::set_link_up(host, host_end, true));
    (void)os::sysctl_set("net/ipv6/conf/" + peer + "/accept_ra", "0");  // the reference ignores errors too
    CNI_TRY_ASSIGN(host_end, nl::require_link(host, peer));
    CNI_TRY_ASSIGN(auto container_end, nl::require_link(container, ifname));
    return VethPair{host_end, container_end};
}

}  // namespace cni::iface
