// SPDX-License-Identifier: Apache-2.0
// Neighbour entries (rtnetlink RTM_*NEIGH) as plain values: IPv4 ARP / IPv6 ND entries
// (family AF_INET/AF_INET6, an IP and its MAC) and bridge/VXLAN forwarding entries (family
// AF_BRIDGE, a MAC and, for VXLAN, the remote IP), the way flanneld programs a VXLAN device.
#pragma once

#include <linux/neighbour.h>

#include <optional>
#include <string>
#include <vector>

#include "core/net/ip.hpp"
#include "core/nl/socket.hpp"

namespace cni::nl {

struct NeighSpec {
    int family = 0;                // AF_INET / AF_INET6 (taken from ip when 0) or AF_BRIDGE
    int ifindex = 0;
    std::optional<net::IpAddr> ip;      // the neighbour (ARP/ND) or the VXLAN remote (FDB)
    std::string mac;               // lowercase, colon separated
    int state = NUD_PERMANENT;
    unsigned flags = 0;            // NTF_SELF, NTF_MASTER, ...
    bool operator==(const NeighSpec&) const = default;
};

// Adds or replaces the entry (NLM_F_REPLACE, as `ip neigh replace` / `bridge fdb replace`).
Status set_neigh(const Socket& s, const NeighSpec& n);
// False when there was no such entry.
Result<bool> del_neigh(const Socket& s, const NeighSpec& n);
// The entries of `family` on `ifindex` (every link when 0).
Result<std::vector<NeighSpec>> list_neighs(const Socket& s, int family, int ifindex = 0);

std::string describe(const NeighSpec& n);  // "10.0.0.2 lladdr 0a:.. dev #3" for messages

}  // namespace cni::nl
