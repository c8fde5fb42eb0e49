// SPDX-License-Identifier: Apache-2.0
// veth pair setup (see veth.hpp).
#include "core/iface/veth.hpp"

namespace cni::iface {
namespace {

// The pair made: the host end (found through the container end's IFLA_LINK) up with accept_ra=0;
// on failure the pair is deleted.
Result<VethPair> finish_pair(const nl::Socket& container, const nl::Socket& host, const os::SysctlDir& host_ipv6_conf,
                             const std::string& ifname, const std::string& peer) {
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

}  // namespace

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
    return finish_pair(container, host, host_ipv6_conf, ifname, peer);
}

Result<bool> veth_to(const nl::Socket& host, const nl::LinkInfo& link, const ContainerSockets& pod, const std::string& ifname) {
    if (link.kind != "veth" || !link.link_netnsid) return false;
    CNI_TRY_ASSIGN(auto id, nl::netns_id(host, pod.ns.fd()));
    if (id != link.link_netnsid) return false;
    CNI_TRY_ASSIGN(auto peer, nl::find_link(pod.container, ifname));
    return peer && peer->index == link.peer_index && peer->peer_index == link.index;
}

Result<VethPair> setup_named_veth(const HostSockets& io, const os::SysctlDir& host_ipv6_conf, const std::string& ifname,
                                  const std::string& host_name, std::int64_t mtu) {
    CNI_TRY_ASSIGN(auto old, nl::find_link(io.host, host_name));
    if (old) {
        CNI_TRY_ASSIGN(bool ours, veth_to(io.host, *old, io, ifname));
        if (!ours)
            return fail("a link named " + host_name + " is on the host and is not a veth to " + ifname +
                        " in this container's namespace: left as it is, and no veth made");
        CNI_TRY(nl::delete_link(io.host, *old));  // that very link, an earlier ADD's
    }
    CNI_TRY(nl::add_veth(io.container, nl::NewLink{ifname, mtu, "", 0, -1}, nl::NewLink{host_name, mtu, "", 0, io.host_ns.fd()}));
    // Before the host end comes up: its link-local address is usable at once (a point-to-point
    // link has nothing to detect duplicates with).
    (void)host_ipv6_conf.set(host_name + "/accept_dad", "0");
    return finish_pair(io.container, io.host, host_ipv6_conf, ifname, host_name);
}

}  // namespace cni::iface
