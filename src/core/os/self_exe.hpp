// SPDX-License-Identifier: Apache-2.0
// Is a file this very binary? A plugin found in CNI_PATH that resolves (through symlinks or
// hard links) to the same inode as /proc/self/exe, or that is a launcher `cni-all install`
// wrote beside this binary (src/launcher/tag.hpp), can run in-process instead of fork+exec. And
// where this binary lives (`cni-all exec` looks for plugins beside it).
#pragma once

#include <string>

namespace cni::os {

bool is_self_exe(const std::string& path);
// The directory holding this binary (through /proc/self/exe); "" if it cannot be read.
std::string self_exe_dir();

}  // namespace cni::os
