// SPDX-License-Identifier: Apache-2.0
// Putting a CNI result on an interface (reference ipam.ConfigureIface, 1.11): the addresses of
// the IPs whose interface index names `ifname` (IPv6 enabled on lo and the link first,
// keep_addr_on_down=1), the link set up, a bounded wait for IPv6 DAD when there is an IPv6
// gateway, then the routes, each via its own gw or the first gateway of its family. Also IP
// forwarding in the current namespace, and skipIPv6LinkLocal.
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

// skipIPv6LinkLocal, a key of cni-all's own (the reference has none and ignores it): when `ips`
// hold no IPv6 address, the still-down `link` gets no IPv6 link-local address either
// (addr_gen_mode none), so it sends no MLD report, router solicitation or DAD probe. A bridge
// floods each of those to every port: per new pod, work that grows with the pods already
// there (bench/RESULTS.md, churn). A no-op on a kernel without IPv6.
Status skip_ipv6_link_local(const nl::Socket& container, const nl::LinkInfo& link, const std::vector<IpConfig>& ips);

// net.ipv4.ip_forward / net.ipv6.conf.all.forwarding = 1 for the families of `ips` (written only
// if not already 1) in the namespace of `s`, which must be the calling thread's.
Status enable_forwarding(const nl::Socket& s, const std::vector<IpConfig>& ips);

// Does the IP belong to `ifname`? Only an index that names another interface says no: an
// absent, negative or out-of-range index counts as `ifname`'s, as in Go's sbr (1.5).
bool ip_is_for(const CniResult& result, const IpConfig& ip, const std::string& ifname);

}  // namespace cni::iface
