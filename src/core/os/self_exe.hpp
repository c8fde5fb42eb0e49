// SPDX-License-Identifier: Apache-2.0
// Is a file this very binary? A plugin found in CNI_PATH that resolves (through symlinks or
// hard links) to the same inode as /proc/self/exe can run in-process instead of fork+exec.
#pragma once

#include <string>

namespace cni::os {

bool is_self_exe(const std::string& path);

}  // namespace cni::os
