// SPDX-License-Identifier: Apache-2.0
// The records GC visits (see unlisted_records.hpp).
#include "core/iface/unlisted_records.hpp"

#include <set>

namespace cni::iface {

Result<std::optional<UnlistedRecords>> unlisted_records(std::string_view applet, const std::vector<net::Attachment>& valid) {
    CNI_TRY_ASSIGN(auto records, os::open_records(applet, false));
    if (!records) return std::nullopt;
    std::set<std::string> listed;
    for (auto& a : valid) listed.insert(os::record_name(a.container_id, a.ifname));
    UnlistedRecords out{std::move(*records), {}};
    for (auto& name : out.dir.names())
        if (name.ends_with(".json") && !listed.contains(name)) out.names.push_back(name);
    return out;
}

}  // namespace cni::iface
