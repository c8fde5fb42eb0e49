// SPDX-License-Identifier: Apache-2.0
// mkdir_all and read_file (see fs.hpp).
#include "core/os/fs.hpp"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "core/os/errno_error.hpp"

namespace cni::os {

Status mkdir_all(const std::string& path, mode_t mode) {
    struct stat st{};
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return {};  // the usual case, in one call
    std::size_t pos = 0;
    while (pos != std::string::npos) {
        pos = path.find('/', pos + 1);
        std::string cur = path.substr(0, pos);
        if (cur.empty()) continue;
        if (::mkdir(cur.c_str(), mode) != 0 && errno != EEXIST) return sys_fail("mkdir", cur);
    }
    if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return fail("mkdir " + path + ": not a directory");
    return {};
}

Result<std::string> read_file(const std::string& path) {
    std::ifstream f(path);
    if (!f) return sys_fail("open", path);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

}  // namespace cni::os
