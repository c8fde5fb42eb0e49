// SPDX-License-Identifier: Apache-2.0
// flock-based exclusive lock (see file_lock.hpp).
#include "core/os/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>

#include "core/os/errno_error.hpp"

namespace cni::os {

namespace {

Result<UniqueFd> lock_exclusive(UniqueFd fd, const std::string& path) {
    if (!fd) return sys_fail("open", path);
    while (::flock(fd.get(), LOCK_EX) != 0)
        if (errno != EINTR) return sys_fail("flock", path);
    return fd;
}

}  // namespace

Result<FileLock> FileLock::acquire(const std::string& path, int mode) {
    CNI_TRY_ASSIGN(auto fd, lock_exclusive(UniqueFd(::open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, mode)), path));
    return FileLock(std::move(fd));
}

Result<FileLock> FileLock::acquire_in(const Dir& dir, const std::string& name, int mode) {
    UniqueFd fd = dir.open_regular(name, O_RDONLY | O_CREAT, mode_t(mode));
    CNI_TRY_ASSIGN(fd, lock_exclusive(std::move(fd), dir.path_of(name)));
    return FileLock(std::move(fd));
}

Result<FileLock> FileLock::acquire_existing(const std::string& path) {
    CNI_TRY_ASSIGN(auto fd, lock_exclusive(UniqueFd(::open(path.c_str(), O_RDONLY | O_CLOEXEC)), path));
    return FileLock(std::move(fd));
}

}  // namespace cni::os
