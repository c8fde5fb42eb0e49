// SPDX-License-Identifier: Apache-2.0
// Same-binary detection by device and inode (see self_exe.hpp).
#include "core/os/self_exe.hpp"

#include <sys/stat.h>

namespace cni::os {

bool is_self_exe(const std::string& path) {
    struct stat self{}, other{};
    if (::stat("/proc/self/exe", &self) != 0 || ::stat(path.c_str(), &other) != 0) return false;
    return self.st_dev == other.st_dev && self.st_ino == other.st_ino;
}

}  // namespace cni::os
