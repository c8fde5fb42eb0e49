// SPDX-License-Identifier: Apache-2.0
// The call log's file (docs/logging.md), in a folder of the node's opened once
// (os::Dir::open_trusted: no one but root and we can change it). The file and its rotations
// (name.1 .. name.<keep>, name.1 the newest) are opened, renamed and removed relative to that
// folder, never by path. Only a file the logger made is written, renamed or removed: a regular
// file of ours, mode 0600, with no other link; anything else at one of its names stops the write
// (the line is lost). Concurrent writers take an flock of the file for the append and the rotation,
// tried for a bounded time, so a rotation happens once.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/os/fs.hpp"
#include "core/os/unique_fd.hpp"

namespace cni::log {

class LogFile {
public:
    LogFile(os::Dir folder, std::string name, std::int64_t max_bytes, int keep)
        : folder_(std::move(folder)), name_(std::move(name)), max_bytes_(max_bytes), keep_(keep) {}
    // Appends one line with one write, rotating first when it would pass max_bytes; never fails.
    void append(std::string_view line) const;

private:
    os::UniqueFd open_ours() const;
    os::UniqueFd rotate() const;
    bool may_replace(const std::string& name) const;
    std::string rotated(int n) const { return name_ + "." + std::to_string(n); }

    os::Dir folder_;
    std::string name_;
    std::int64_t max_bytes_;
    int keep_;
};

}  // namespace cni::log
