// SPDX-License-Identifier: Apache-2.0
// Parsing and applying the bridge port VLANs (see port_vlans.hpp).
#include "applets/bridge/port_vlans.hpp"

#include <bitset>
#include <optional>

namespace cni::bridge {
Status decode(const json::Value& v, VlanTrunk& out, const json::Where& w) {
    if (v.IsNull()) return {};
    if (!v.IsObject()) return cni::Unexpected(json::type_error(v, w, "bridge.VlanTrunk"));
    CNI_TRY(json::field(v, "minID", out.min_id, w));
    CNI_TRY(json::field(v, "maxID", out.max_id, w));
    CNI_TRY(json::field(v, "id", out.id, w));
    return {};
}

namespace {

Status add_trunk_item(const VlanTrunk& item, std::bitset<4095>& vids) {
    auto valid = [](std::int64_t v) { return v > 0 && v <= 4094; };
    const auto& [min_id, max_id, id] = item;
    if (min_id && !max_id) return fail("minID and maxID should be configured simultaneously, maxID is missing");
    if (!min_id && max_id) return fail("minID and maxID should be configured simultaneously, minID is missing");
    if (min_id) {
        if (!valid(*min_id)) return fail("incorrect trunk minID parameter: " + std::to_string(*min_id));
        if (!valid(*max_id)) return fail("incorrect trunk maxID parameter: " + std::to_string(*max_id));
        if (*max_id < *min_id) return fail("minID is greater than maxID in trunk parameter");
        for (auto v = *min_id; v <= *max_id; ++v) vids.set(std::size_t(v));
    }
    if (id) {
        if (!valid(*id)) return fail("incorrect trunk id parameter: " + std::to_string(*id));
        vids.set(std::size_t(*id));
    }
    return {};
}

}  // namespace

Result<PortVlans> port_vlans_of(std::int64_t vlan, const std::optional<std::vector<VlanTrunk>>& trunk, bool preserve_default) {
    PortVlans v;
    if (vlan < 0 || vlan > 4094) return fail("invalid VLAN ID " + std::to_string(vlan) + " (must be between 0 and 4094)");
    v.vlan = int(vlan);
    v.preserve_default = preserve_default;
    if (!trunk) return v;
    v.trunk_set = true;
    std::bitset<4095> vids;
    for (const auto& item : *trunk) CNI_TRY(add_trunk_item(item, vids));
    for (std::uint16_t vid = 1; vid <= 4094; ++vid) {
        if (!vids.test(vid)) continue;
        if (!v.trunk.empty() && v.trunk.back().last + 1 == vid)
            v.trunk.back().last = vid;
        else
            v.trunk.push_back({vid, vid});
    }
    return v;
}

Status apply_port_vlans(const nl::Socket& s, const std::string& bridge, int port_index, const PortVlans& v) {
    if (!v.filtering()) return {};
    if (!v.preserve_default) {
        CNI_TRY_ASSIGN(auto pvid, nl::bridge_default_pvid(bridge));
        if (pvid != 0) {
            if (auto st = nl::bridge_vlan_del(s, port_index, pvid); !st)
                return fail("failed to remove default vlan on interface: " + st.error().msg);
        }
    }
    if (v.vlan != 0) {
        auto vid = std::uint16_t(v.vlan);
        if (auto st = nl::bridge_vlan_add(s, port_index, {vid, vid}, true); !st)
            return fail("failed to setup vlan tag on interface: " + st.error().msg);
    } else if (!v.trunk.empty()) {
        if (auto st = nl::bridge_vlan_add(s, port_index, {1, 1}, true); !st)
            return fail("failed to setup vlan tag on interface: " + st.error().msg);
    }
    for (auto range : v.trunk)
        if (auto st = nl::bridge_vlan_add(s, port_index, range, false); !st)
            return fail("failed to setup vlan trunk on interface: " + st.error().msg);
    return {};
}

}  // namespace cni::bridge
