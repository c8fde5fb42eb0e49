// SPDX-License-Identifier: Apache-2.0
// Where the call log goes and at what level (docs/logging.md). Where the log goes, how large a
// file grows and how many are kept are the node's choice alone: root's settings file
// (CNI_ALL_LOG_CONFIG in the runtime's environment, default /etc/cni/cni-all-log.json:
// {"logLevel": "info", "logFile": "/var/log/cni-all/cni.log", "logMaxSize": bytes, "logKeep": n,
// "networkLogLevels": {"min": "error", "max": "info"}}, or "logFile": "syslog" for /dev/log). A
// network's config, which a tenant may write, can only raise or lower its own calls' logLevel,
// within the node's networkLogLevels (a level outside is held to the nearer bound); its logFile,
// logMaxSize and logKeep are ignored, as the reference ignores keys it does not know.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace cni::log {

enum class Level { off, error, info, debug };

inline constexpr const char* kNodeSettings = "/etc/cni/cni-all-log.json";
// The bounds of logMaxSize and logKeep, whatever the node file says.
inline constexpr std::int64_t kMinFileBytes = 4096;
inline constexpr std::int64_t kMaxFileBytes = std::int64_t(1) << 30;
inline constexpr int kMaxKeep = 20;

struct Settings {
    Level level = Level::off;
    bool syslog = false;                  // to /dev/log
    std::string folder;                   // else to the file `name` in this folder
    std::string name;
    std::int64_t max_bytes = 10 << 20;    // a file is rotated past this size
    int keep = 3;                         // rotated files kept
    Level network_min = Level::error;     // the levels a network's logLevel may choose
    Level network_max = Level::info;
    std::string problem;                  // why the node's settings or logFile are not used, if so
};

// The node's settings: the file named by CNI_ALL_LOG_CONFIG in `environ` (else kNodeSettings);
// off when there is none, or it cannot be read, or others than root may write it or change its
// folder (os::read_trusted_file: the log folder's policy).
Settings node_settings(std::span<const std::string> environ);

struct CallSettings {
    Settings settings;
    std::vector<std::string> ignored;  // the network's keys that only the node may set
    std::string held;                  // what became of a network's logLevel out of bounds, if so
};
// The node's settings with a network's logLevel (the config a plugin gets) over them, held to
// the node's networkLogLevels.
CallSettings call_settings(std::span<const std::string> environ, std::string_view config);

std::string_view name_of(Level l);

}  // namespace cni::log
