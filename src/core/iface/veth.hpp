// SPDX-License-Identifier: Apache-2.0
// The veth pair every veth-based applet starts from (reference ip.SetupVeth, 1.11): the
// container end `ifname` is created in the container namespace with its peer placed straight
// into the host namespace under a random "vethXXXXXXXX" name (another name on a clash, up to 10
// tries); the host end is set up with accept_ra=0 (written under `host_ipv6_conf`, the host's
// /proc/sys/net/ipv6/conf opened by the caller: see os::SysctlDir); the container end is left down.
#pragma once

#include <string>

#include "core/iface/sockets.hpp"
#include "core/nl/link.hpp"
#include "core/os/netns.hpp"
#include "core/os/sysctl.hpp"

namespace cni::iface {

struct VethPair {
    nl::LinkInfo host;
    nl::LinkInfo container;
};

Result<VethPair> setup_veth(const nl::Socket& container, const nl::Socket& host, const os::Netns& host_ns,
                            const os::SysctlDir& host_ipv6_conf, const std::string& ifname, std::int64_t mtu,
                            const std::string& mac);

// The same with the host end named `host_name` (vpc-eni names it after the pod), made in `io`'s
// namespaces; the host end skips IPv6 duplicate detection. A link of that name on the host is
// removed first only when it is a veth to `ifname` in the container's namespace (a leftover of an
// earlier ADD of this attachment); any other, even one to another interface of the container
// (another attachment's), is left alone and the ADD refused.
Result<VethPair> setup_named_veth(const HostSockets& io, const os::SysctlDir& host_ipv6_conf, const std::string& ifname,
                                  const std::string& host_name, std::int64_t mtu);

// Whether the host link `link` is a veth whose peer is `ifname` in `pod`'s namespace: its
// link_netnsid is the id the host knows that namespace by, and there each end names the other.
Result<bool> veth_to(const nl::Socket& host, const nl::LinkInfo& link, const ContainerSockets& pod, const std::string& ifname);

}  // namespace cni::iface
