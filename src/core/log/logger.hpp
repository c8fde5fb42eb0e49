// SPDX-License-Identifier: Apache-2.0
// Opt-in logging of plugin calls and of the dhcp daemon (docs/logging.md), off by default. The
// settings come from a node-wide file (CNI_ALL_LOG_CONFIG, default /etc/cni/cni-all-log.json:
// {"logLevel": "info", "logFile": "/var/log/cni-all.log", "logMaxSize": bytes, "logKeep": n})
// and, per network, from the logLevel and logFile keys of a plugin's config (as multus reads
// them), which win. A line goes to a file, size-capped and rotated (file.1 .. file.<keep>, under
// an flock of the file so concurrent calls rotate once), or to syslog/journald through /dev/log
// ("syslog", or "syslog:<socket>"). Levels: error, info (one line per call), debug (the steps).
// Nothing here fails a call: a log that cannot be written is skipped.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace cni::log {

enum class Level { off, error, info, debug };

struct Settings {
    Level level = Level::off;
    std::string target;                      // a file path, "syslog" or "syslog:<socket path>"
    std::int64_t max_bytes = 10 << 20;       // a file is rotated past this size
    int keep = 3;                            // rotated files kept
};

inline constexpr const char* kNodeSettings = "/etc/cni/cni-all-log.json";

// The node-wide settings: the file named by CNI_ALL_LOG_CONFIG in `environ` (else kNodeSettings);
// off when there is none or it cannot be read.
Settings node_settings(std::span<const std::string> environ);
// The same, with a network's config (the JSON a plugin gets) over them: its logLevel and logFile.
Settings call_settings(std::span<const std::string> environ, std::string_view config);

class Logger {
public:
    explicit Logger(Settings s) : s_(std::move(s)) {}
    bool enabled(Level l) const { return s_.level != Level::off && l <= s_.level && !s_.target.empty(); }
    // Writes "<UTC time> <level> <text>" when `l` is enabled; never fails.
    void write(Level l, std::string_view text) const noexcept;

private:
    void to_file(const std::string& line) const;
    void to_syslog(Level l, const std::string& line) const;
    Settings s_;
};

std::string_view name_of(Level l);

}  // namespace cni::log
