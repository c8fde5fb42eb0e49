// SPDX-License-Identifier: Apache-2.0
// The bridge applet's VLAN keys (docs/compatibility.md: bridge): "vlan" (0-4094, the port's PVID,
// untagged), "vlanTrunk" ([{minID,maxID} | {id}], tagged VIDs 1-4094, deduplicated) and
// "preserveDefaultVlan". Either VLAN key turns vlan_filtering on for a new bridge and, unless
// the default VLAN is preserved, strips the VLAN a port gets on joining before adding its own.
#pragma once

#include <optional>
#include <vector>

#include "core/cni/netconf.hpp"
#include "core/nl/bridge_port.hpp"

namespace cni::bridge {

struct PortVlans {
    int vlan = 0;
    std::vector<nl::VidRange> trunk;  // sorted, disjoint, merged
    bool trunk_set = false;           // "vlanTrunk" present (even as []), like Go's non-nil slice
    bool preserve_default = false;  // false since containernetworking/plugins#1181 (2025); true before

    bool filtering() const { return vlan != 0 || trunk_set; }
};

// One entry of "vlanTrunk", as decoded (Go's *bridge.VlanTrunk; null decodes to an empty one).
struct VlanTrunk {
    std::optional<std::int64_t> min_id, max_id, id;  // Go ints
};
Status decode(const json::Value& v, VlanTrunk& out, const json::Where& w);

// The VLANs the decoded keys ask for, checked and merged as the reference's loadNetConf does.
Result<PortVlans> port_vlans_of(std::int64_t vlan, const std::optional<std::vector<VlanTrunk>>& trunk, bool preserve_default);

// The VLANs of `port`, which has just joined `bridge`.
Status apply_port_vlans(const nl::Socket& s, const std::string& bridge, int port_index, const PortVlans& v);

}  // namespace cni::bridge

template <>
struct cni::json::GoName<cni::bridge::VlanTrunk> {
    static constexpr std::string_view value = "bridge.VlanTrunk";
};
template <>
struct cni::json::GoName<std::vector<cni::bridge::VlanTrunk>> {
    static constexpr std::string_view value = "[]*bridge.VlanTrunk";
};
