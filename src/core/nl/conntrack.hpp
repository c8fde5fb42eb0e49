// SPDX-License-Identifier: Apache-2.0
// Conntrack entries over ctnetlink (NETLINK_NETFILTER): removing the UDP flows to a port, as
// portmap does after mapping it and after unmapping it, so that datagrams of a flow tracked before the mapping (to
// nothing, or to an earlier container) are DNAT'ed anew instead of following the stale entry.
#pragma once

#include <cstdint>
#include <span>

#include "core/result.hpp"

namespace cni::nl {

// Deletes the entries of `family` (AF_INET/AF_INET6) whose original direction is UDP to one
// of `ports`: by a filtered flush per port where the kernel has it, else by one dump of the
// table for all of them and a delete per match. Works in the calling thread's network
// namespace, and does nothing when that namespace tracks nothing.
Status delete_udp_flows_to(int family, std::span<const std::uint16_t> ports);

}  // namespace cni::nl
