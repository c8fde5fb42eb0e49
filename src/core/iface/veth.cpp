// SPDX-License-Identifier: Apache-2.0
// veth pair setup (see veth.hpp).
#include "core/iface/veth.hpp"

namespace cni::iface {

Result<VethPair> setup_veth(const nl::Socket& container, const nl::Socket& host, const os::Netns& host_ns,
                            const os::SysctlDir& host_ipv6_conf, const std::string& ifname, std::int64_t mtu,
                            const std::string& mac) {
    // Why a creation failed is asked only after it did, and the host end is found through the
    // container end's IFLA_LINK: an RTNL request can wait behind the kernel's own work on a busy
    // node (addrconf's DAD work holds RTNL while it floods a bridge), so the usual ADD makes as
    // few as it can. (The host end cannot be created up: the kernel raises a veth's peer before
    // the pair is linked, and refuses with ENOTCONN.)
    std::string peer;
    for (int attempt = 0;; ++attempt) {
        if (attempt == 10) return fail("failed to find a unique veth name");
        peer = nl::random_veth_name();
        nl::NewLink self{ifname, mtu, mac, 0, -1};
        nl::NewLink other{peer, mtu, "", 0, host_ns.fd()};
        auto made = nl::add_veth(container, self, other);
        if (made) break;
        CNI_TRY_ASSIGN(auto existing, nl::find_link(container, ifname));
        if (existing) return fail("container veth name provided (" + ifname + ") already exists");
        CNI_TRY_ASSIGN(auto clash, nl::find_link(host, peer));
        if (!clash) return fail("failed to make veth pair: " + made.error().msg);
    }
    auto finished = [&]() -> Result<VethPair> {
        CNI_TRY_ASSIGN(auto container_end, nl::require_link(container, ifname));
        nl::LinkInfo host_end;
        host_end.index = container_end.peer_index;  // IFLA_LINK
        host_end.name = peer;
        CNI_TRY(nl::set_link_up(host, host_end, true));
        (void)host_ipv6_conf.set(peer + "/accept_ra", "0");  // the reference ignores errors too
        CNI_TRY_ASSIGN(host_end, nl::require_link(host, peer));
        return VethPair{host_end, container_end};
    }();
    if (!finished) (void)nl::delete_link(container, ifname);  // the pair goes with it
    return finished;
}

}  // namespace cni::iface
