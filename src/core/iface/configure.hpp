// SPDX-License-Identifier: Apache-2.0
// Putting a CNI result on an interface (reference ipam.ConfigureIface, 1.11): the addresses of
// the IPs whose interface index names `ifname` (IPv6 enabled on lo and the link first,
// keep_addr_on_down=1), the link set up, a bounded wait for IPv6 DAD when there is an IPv6
// gateway, then the routes, each via its own gw or the first gateway of its family. Also IP
// forwarding in the current namespace.
#pragma once

#include <string>

#include "core/cni/cni_result.hpp"
#include "core/nl/link.hpp"
#include "core/nl/socket.hpp"
#include "core/os/netns.hpp"

namespace cni::iface {

// `container` is a socket in `container_ns`; sysctls are written there through the guard.
Status configure_iface(const nl::Socket& container, const os::Netns& container_ns, const std::string& ifname,
                       const CniResult& result);
// The same for a link the caller has just looked up (one request fewer).
Status configure_iface(const nl::Socket& container, const os::Netns& container_ns, const nl::LinkInfo& link,
                       const CniResult& result);

// net.ipv4.ip_forward / net.ipv6.conf.all.forwarding = 1 for the families of `ips` (written only
// if not already 1) in the namespace of `s`, which must be the calling thread's.
Status enable_forwarding(const nl::Socket& s, const std::vector<IpConfig>& ips);

// Does the IP belong to `ifname` (its interface index is absent or names it)? (1.5)
bool ip_is_for(const CniResult& result, const IpConfig& ip, const std::string& ifname);

}  // namespace cni::iface
