// SPDX-License-Identifier: Apache-2.0
// Errors from failed system calls, worded like Go's os errors ("open /x: no such file or
// directory") because callers compare messages with the reference's.
#pragma once

#include <cerrno>
#include <cstring>
#include <string>

#include "core/result.hpp"

namespace cni::os {

// strerror text in Go's spelling (lowercase first letter).
inline std::string errno_text(int err) {
    std::string s = std::strerror(err);
    if (!s.empty() && s[0] >= 'A' && s[0] <= 'Z') s[0] = char(s[0] - 'A' + 'a');
    return s;
}

// "<op> <path>: <reason>", code 999.
inline cni::Unexpected<Error> sys_fail(std::string_view op, std::string_view path, int err = errno) {
    return fail(std::string(op) + " " + std::string(path) + ": " + errno_text(err));
}

}  // namespace cni::os
