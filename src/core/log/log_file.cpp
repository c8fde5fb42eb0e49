// SPDX-License-Identifier: Apache-2.0
// The call log's file in the node's folder (see log_file.hpp).
#include "core/log/log_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cni::log {
namespace {

constexpr int kAppend = O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;

// A file the logger made: a regular file of ours, mode 0600, with no other link to it.
bool made_by_us(const struct stat& st) {
    return S_ISREG(st.st_mode) && st.st_uid == ::geteuid() && st.st_nlink == 1 && (st.st_mode & 07777) == 0600;
}

bool same_file(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

// An flock of `fd`, tried for about 20 ms.
bool lock(int fd) {
    for (int i = 0; i < 20; ++i) {
        if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return true;
        ::usleep(1000);
    }
    return false;
}

}  // namespace

// Whether a rename may put a file at `name`: nothing is there, or a file the logger made.
bool LogFile::may_replace(const std::string& name) const {
    struct stat st{};
    if (::fstatat(folder_.fd(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return errno == ENOENT;
    return made_by_us(st);
}

// The log, opened to append to, or made (exclusively, 0600 whatever the umask); empty when
// something the logger did not make holds its name. What is there is looked at before it is
// opened (a device or FIFO is never opened) and again through the descriptor.
os::UniqueFd LogFile::open_ours() const {
    for (int attempt = 0; attempt < 3; ++attempt) {
        struct stat named{};
        if (::fstatat(folder_.fd(), name_.c_str(), &named, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno != ENOENT) return {};
            os::UniqueFd fd(::openat(folder_.fd(), name_.c_str(), kAppend | O_CREAT | O_EXCL, 0600));
            if (fd && ::fchmod(fd.get(), 0600) == 0) return fd;
            if (fd || errno != EEXIST) return {};
            continue;  // another call made it first
        }
        if (!made_by_us(named)) return {};
        os::UniqueFd fd(::openat(folder_.fd(), name_.c_str(), kAppend));
        struct stat st{};
        if (fd && ::fstat(fd.get(), &st) == 0 && made_by_us(st) && same_file(st, named)) return fd;
        if (fd || errno != ENOENT) return {};
    }
    return {};
}

// name.<keep-1> .. name.1 move up one (the oldest is replaced), the log becomes name.1 (with
// keep 0 it is removed), and a new log is started. Each of the names it would replace must be
// free or the logger's, or nothing moves.
os::UniqueFd LogFile::rotate() const {
    for (int n = 1; n <= keep_; ++n)
        if (!may_replace(rotated(n))) return {};
    if (keep_ == 0 && ::unlinkat(folder_.fd(), name_.c_str(), 0) != 0) return {};
    for (int n = keep_; n >= 1; --n) {
        std::string from = n == 1 ? name_ : rotated(n - 1);  // checked above, or the log itself
        if (::renameat(folder_.fd(), from.c_str(), folder_.fd(), rotated(n).c_str()) != 0 && (n == 1 || errno != ENOENT))
            return {};
    }
    return open_ours();
}

void LogFile::append(std::string_view line) const {
    for (int attempt = 0; attempt < 3; ++attempt) {
        os::UniqueFd fd = open_ours();
        if (!fd) return;
        bool locked = lock(fd.get());
        struct stat st{}, named{};
        if (::fstat(fd.get(), &st) != 0) return;
        if (locked && (::fstatat(folder_.fd(), name_.c_str(), &named, AT_SYMLINK_NOFOLLOW) != 0 || !same_file(st, named)))
            continue;  // rotated by another call while this one waited: the new log
        if (locked && st.st_size > 0 && st.st_size + std::int64_t(line.size()) > max_bytes_) {
            fd = rotate();  // the old log's lock is held until the new one is open
            if (!fd) return;
        }
        (void)os::write_all(fd.get(), line);
        return;
    }
}

}  // namespace cni::log
