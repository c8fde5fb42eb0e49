// SPDX-License-Identifier: Apache-2.0
// sbr's record of the main-table routes an ADD moved into its tables (docs/compatibility.md: sbr),
// so that DEL puts back exactly those and nothing else: one file per attachment,
// `<containerID>:<ifname>.json`, in root's folder /run/cni/sbr (no config key chooses it; routes
// live no longer than the namespace, which a reboot ends). A record is read back as hostile: at
// most kMaxMovedRoutes routes, each field checked.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/cni/request.hpp"
#include "core/nl/route.hpp"
#include "core/os/fs.hpp"
#include "core/result.hpp"

namespace cni::sbr {

inline constexpr std::size_t kMaxMovedRoutes = 1024;

struct MovedRoutes {
    std::string network;                // the network whose ADD moved them (GC acts on its own)
    std::vector<nl::RouteSpec> routes;  // as they stood in the main table
};

// Records live in os::open_records("sbr", ...) under os::record_name(containerID, ifname).
Status save_moved_routes(const os::Dir& records, const std::string& name, const MovedRoutes& moved);
// nullopt when there is no record; an error for one that does not decode.
Result<std::optional<MovedRoutes>> load_moved_routes(const os::Dir& records, const std::string& name);

}  // namespace cni::sbr
