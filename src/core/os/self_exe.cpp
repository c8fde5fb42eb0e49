// SPDX-License-Identifier: Apache-2.0
// Same-binary detection by device and inode, and the binary's directory (see self_exe.hpp).
#include "core/os/self_exe.hpp"

#include <sys/stat.h>
#include <unistd.h>

namespace cni::os {

bool is_self_exe(const std::string& path) {
    struct stat self{}, other{};
    if (::stat("/proc/self/exe", &self) != 0 || ::stat(path.c_str(), &other) != 0) return false;
    return self.st_dev == other.st_dev && self.st_ino == other.st_ino;
}

std::string self_exe_dir() {
    char buf[4096];
    ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return {};
    std::string path(buf, std::size_t(n));
    return path.substr(0, path.rfind('/'));
}

}  // namespace cni::os
