// SPDX-License-Identifier: Apache-2.0
// An exclusive flock(2) on a file, held for the lifetime of the object. It is the lock the
// reference plugins take (host-local's <dir>/lock), so Go and C++ plugins exclude each other.
#pragma once

#include <string>

#include "core/os/fs.hpp"
#include "core/os/unique_fd.hpp"
#include "core/result.hpp"

namespace cni::os {

class FileLock {
public:
    // Opens (creating with `mode` if needed) and blocks until the lock is held.
    static Result<FileLock> acquire(const std::string& path, int mode = 0600);
    // The same on a file that must already exist (a netns file, as sbr locks it): a missing
    // path is an error, never created - a stray file under /run/netns would look like a netns.
    static Result<FileLock> acquire_existing(const std::string& path);
    // `name` in an opened state directory, never through a link.
    static Result<FileLock> acquire_in(const Dir& dir, const std::string& name, int mode = 0600);

private:
    explicit FileLock(UniqueFd fd) : fd_(std::move(fd)) {}
    UniqueFd fd_;  // closing the fd releases the lock
};

}  // namespace cni::os
