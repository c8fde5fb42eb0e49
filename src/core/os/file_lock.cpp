// SPDX-License-Identifier: Apache-2.0
// flock-based exclusive lock (see file_lock.hpp).
#include "core/os/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>

#include "core/os/errno_error.hpp"

namespace cni::os {

Result<FileLock> FileLock::acquire(const std::string& path, int mode) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, mode));
    if (!fd) return sys_fail("open", path);
    while (::flock(fd.get(), LOCK_EX) != 0)
        if (errno != EINTR) return sys_fail("flock", path);
    return FileLock(std::move(fd));
}

}  // namespace cni::os
