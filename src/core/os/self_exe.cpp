// SPDX-License-Identifier: Apache-2.0
// The binary's directory (see self_exe.hpp).
#include "core/os/self_exe.hpp"

#include <unistd.h>

namespace cni::os {

std::string self_exe_dir() {
    char buf[4096];
    ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return {};
    std::string path(buf, std::size_t(n));
    return path.substr(0, path.rfind('/'));
}

}  // namespace cni::os
