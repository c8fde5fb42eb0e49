// SPDX-License-Identifier: Apache-2.0
// Bridge ports, over rtnetlink family AF_BRIDGE (libnl 3.7 has no API for either):
// - port flags (what `bridge link set dev P hairpin|isolated|learning on` does): RTM_SETLINK
//   with a nested IFLA_PROTINFO holding the IFLA_BRPORT_* attribute;
// - port VLANs (what `bridge vlan add/del ... master` does): RTM_SETLINK/RTM_DELLINK with an
//   IFLA_AF_SPEC holding BRIDGE_FLAGS_MASTER and bridge_vlan_info entries; a VID range goes in
//   one message (RANGE_BEGIN/RANGE_END). Plus the bridge's default_pvid, which is the only VLAN
//   a port that has just joined carries.
// Both go through the namespace's socket, so they work whichever namespace owns /sys.
#pragma once

#include <cstdint>
#include <string>

#include "core/nl/socket.hpp"

namespace cni::nl {

enum class PortFlag { hairpin, isolated, learning };

Status set_bridge_port_flag(const Socket& s, int port_index, const std::string& port_name, PortFlag flag, bool on);

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
