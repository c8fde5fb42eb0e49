// SPDX-License-Identifier: Apache-2.0
// Opt-in logging of plugin calls and of the dhcp daemon (docs/logging.md), off by default, with
// the settings of core/log/settings.hpp (the node's alone but a network's logLevel). A line goes
// to the node's log file (core/log/log_file.hpp) or to syslog/journald through /dev/log, with
// control characters made spaces, cut past kLineLimit bytes with a marker saying how much was left
// out. Levels: error, info (one line per call), debug (the steps). Nothing here fails a call: a
// line that cannot be written is lost.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "core/log/log_file.hpp"
#include "core/log/settings.hpp"

namespace cni::log {

inline constexpr std::size_t kLineLimit = 16 * 1024;  // with its newline

class Logger {
public:
    // Opens the log's folder when a level is on (once: a daemon keeps it).
    explicit Logger(const Settings& s);
    bool enabled(Level l) const { return l != Level::off && l <= level_ && (syslog_ || file_); }
    // Writes "<UTC time> <level> <text>" when `l` is enabled; never fails.
    void write(Level l, std::string_view text) const noexcept;
    // Why the node's log is not written (its settings file, its logFile or its folder refused), or empty.
    const std::string& problem() const { return problem_; }

private:
    void to_syslog(Level l, const std::string& line) const;
    Level level_;
    bool syslog_;
    std::optional<LogFile> file_;
    std::size_t line_limit_;
    std::string problem_;
};

}  // namespace cni::log
