// SPDX-License-Identifier: Apache-2.0
// sysctl reads and writes (see sysctl.hpp).
#include "core/os/sysctl.hpp"

#include <fcntl.h>
#include <unistd.h>

#include "core/os/errno_error.hpp"
#include "core/os/unique_fd.hpp"

namespace cni::os {

std::string sysctl_path(std::string_view name) {
    std::string n(name);
    auto dot = n.find('.');
    auto slash = n.find('/');
    if (dot != std::string::npos && (slash == std::string::npos || dot < slash))
        for (auto& c : n)
            if (c == '.') c = '/';
    return "/proc/sys/" + n;
}

Result<std::string> sysctl_get(std::string_view name) {
    auto path = sysctl_path(name);
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return sys_fail("open", path);
    std::string out;
    char buf[512];
    ssize_t n;
    while ((n = ::read(fd.get(), buf, sizeof buf)) > 0) out.append(buf, std::size_t(n));
    if (n < 0) return sys_fail("read", path);
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
}

Status sysctl_set(std::string_view name, std::string_view value) {
    auto path = sysctl_path(name);
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd) return sys_fail("open", path);
    if (::write(fd.get(), value.data(), value.size()) != static_cast<ssize_t>(value.size()))
        return sys_fail("write", path);
    return {};
}

}  // namespace cni::os
