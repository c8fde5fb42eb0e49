// SPDX-License-Identifier: Apache-2.0
// sysctl reads and writes (see sysctl.hpp).
#include "core/os/sysctl.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/os/errno_error.hpp"
#include "core/os/fs.hpp"
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

namespace {

Status write_at(int dir, const std::string& name, const std::string& path, std::string_view value) {
    UniqueFd fd(::openat(dir, name.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd) return sys_fail("open", path);
    return write_all(fd.get(), value, path);
}

}  // namespace

Status sysctl_set(std::string_view name, std::string_view value) {
    auto path = sysctl_path(name);
    return write_at(AT_FDCWD, path, path, value);
}

namespace {
constexpr std::string_view kNetRoot = "/proc/sys/net/";
}  // namespace

bool is_net_sysctl_path(std::string_view path) {
    if (!path.starts_with(kNetRoot) || path.size() == kNetRoot.size()) return false;
    std::string_view rest = path.substr(kNetRoot.size());
    while (true) {
        auto slash = rest.find('/');
        auto part = rest.substr(0, slash);
        if (part.empty() || part == "." || part == "..") return false;
        if (slash == std::string_view::npos) return true;
        rest.remove_prefix(slash + 1);
    }
}

Status net_sysctl_set(std::string_view path, std::string_view value) {
    std::string p(path);
    if (!is_net_sysctl_path(path)) return fail("refusing to write " + p + ": not a sysctl under /proc/sys/net");
    UniqueFd root(::open(kNetRoot.data(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root) return sys_fail("open", kNetRoot);
    std::string rel = p.substr(kNetRoot.size());
    open_how how{};
    how.flags = O_WRONLY | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    long fd = ::syscall(SYS_openat2, root.get(), rel.c_str(), &how, sizeof how);
    if (fd < 0 && errno == ENOSYS)  // before Linux 5.6: the checked path, its last component not a link
        fd = ::openat(root.get(), rel.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return sys_fail("open", p);
    UniqueFd owned(static_cast<int>(fd));
    return write_all(owned.get(), value, p);
}

SysctlDir SysctlDir::open(std::string_view dir) {
    auto path = sysctl_path(dir);
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    int err = fd ? 0 : errno;
    return SysctlDir(std::move(path), std::move(fd), err);
}

Status SysctlDir::set(std::string_view name, std::string_view value) const {
    std::string path = path_ + "/" + std::string(name);
    if (!fd_) return sys_fail("open", path, errno_);
    return write_at(fd_.get(), std::string(name), path, value);
}

}  // namespace cni::os
