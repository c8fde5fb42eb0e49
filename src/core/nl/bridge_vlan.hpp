// SPDX-License-Identifier: Apache-2.0
// VLANs on bridge ports (what `bridge vlan add/del ... master` does): RTM_SETLINK/RTM_DELLINK
// in family AF_BRIDGE with an IFLA_AF_SPEC holding BRIDGE_FLAGS_MASTER and bridge_vlan_info
// entries; a VID range goes in one message (RANGE_BEGIN/RANGE_END). Plus the bridge's
// default_pvid, which is the only VLAN a port that has just joined carries.
#pragma once

#include <cstdint>
#include <string>

#include "core/nl/socket.hpp"

namespace cni::nl {

struct VidRange {
    std::uint16_t first = 0;
    std::uint16_t last = 0;
};

// `pvid_untagged` makes the (single-VID) range the port's PVID, egressing untagged.
Status bridge_vlan_add(const Socket& s, int port_index, VidRange vids, bool pvid_untagged);
Status bridge_vlan_del(const Socket& s, int port_index, std::uint16_t vid);

// /sys/class/net/<bridge>/bridge/default_pvid (0: new ports get no VLAN).
Result<std::uint16_t> bridge_default_pvid(const std::string& bridge);

}  // namespace cni::nl
