// SPDX-License-Identifier: Apache-2.0
// Where this binary lives (`cni-all exec` looks for plugins beside it).
#pragma once

#include <string>

namespace cni::os {

// The directory holding this binary (through /proc/self/exe); "" if it cannot be read.
std::string self_exe_dir();

}  // namespace cni::os
