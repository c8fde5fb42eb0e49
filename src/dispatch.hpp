// SPDX-License-Identifier: Apache-2.0
// The process edge of a CNI invocation: reads the environment and stdin once, runs the verb, prints
// the result or the error exactly once, and gives the exit code (docs/design.md, principle 3).
#pragma once

#include <cstdio>
#include <span>
#include <string>

#include "core/applet.hpp"

namespace cni {

int run_cni(const Applet& applet, std::span<const std::string> environ, int stdin_fd, std::FILE* out, std::FILE* err);

// Read at most `limit` bytes from fd; more is a code 5 error.
Result<std::string> read_bounded(int fd, std::size_t limit);

}  // namespace cni
