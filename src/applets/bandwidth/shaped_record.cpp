// SPDX-License-Identifier: Apache-2.0
// The shaped-attachment record (shaped_record.hpp): {"network", "containerID", "ifname", "veth",
// "vethIndex"}, each a string but the index.
#include "applets/bandwidth/shaped_record.hpp"

#include "core/cni/json.hpp"

namespace cni::bandwidth {

Status save_shaped(const os::Dir& records, const ShapedRecord& r) {
    std::string text = "{\"network\": " + json::quote(r.network) + ", \"containerID\": " + json::quote(r.container_id) +
                       ", \"ifname\": " + json::quote(r.ifname) + ", \"veth\": " + json::quote(r.veth) +
                       ", \"vethIndex\": " + std::to_string(r.veth_index) + "}\n";
    return records.write_atomic(os::record_name(r.container_id, r.ifname), text, 0600);
}

Result<std::optional<ShapedRecord>> load_shaped(const os::Dir& records, const std::string& name) {
    CNI_TRY_ASSIGN(auto text, records.read_if_exists(name));
    if (!text) return std::nullopt;
    auto bad = fail("bandwidth: record " + records.path_of(name) + " does not decode");
    auto doc = json::parse(*text);
    if (!doc || !doc->IsObject()) return bad;
    ShapedRecord r;
    for (auto [key, into] : {std::pair{"network", &r.network}, {"containerID", &r.container_id}, {"ifname", &r.ifname}, {"veth", &r.veth}}) {
        const auto* v = json::find(*doc, key);
        if (!v || !v->IsString()) return bad;
        *into = std::string(v->GetString(), v->GetStringLength());
    }
    const auto* index = json::find(*doc, "vethIndex");
    if (!index || !index->IsInt() || index->GetInt() <= 0) return bad;
    r.veth_index = index->GetInt();
    if (os::record_name(r.container_id, r.ifname) != name) return bad;  // a record names its own attachment
    return r;
}

}  // namespace cni::bandwidth
