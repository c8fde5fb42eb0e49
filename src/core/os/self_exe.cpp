// SPDX-License-Identifier: Apache-2.0
// Same-binary detection by device and inode, and the binary's directory (see self_exe.hpp).
#include "core/os/self_exe.hpp"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "core/os/fs.hpp"
#include "core/os/unique_fd.hpp"
#include "launcher/tag.hpp"

namespace cni::os {

namespace {

bool same_file(const struct stat& a, const std::string& path) {
    struct stat b{};
    return ::stat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// Whether `path` is a launcher `cni-all install` wrote (it carries the tag).
bool is_launcher(const std::string& path) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    struct stat st{};
    if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || std::size_t(st.st_size) > launcher::kMaxFileSize) return false;
    auto text = read_all(fd.get(), launcher::kMaxFileSize);
    return text && text->find(launcher::kTagText) != std::string::npos;
}

}  // namespace

bool is_self_exe(const std::string& path) {
    // Opened, not stat()ed: the same file natively, and under qemu-user (an arm64 build tested on
    // x86-64) the emulated program rather than the emulator, which only open() is redirected to.
    struct stat self{};
    UniqueFd exe(::open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
    if (!exe || ::fstat(exe.get(), &self) != 0) return false;
    if (same_file(self, path)) return true;
    // A launcher runs the cni-all in its own (resolved) folder.
    char real[PATH_MAX];
    if (!::realpath(path.c_str(), real) || !is_launcher(real)) return false;
    std::string dir(real);
    return same_file(self, dir.substr(0, dir.rfind('/')) + "/cni-all");
}

std::string self_exe_dir() {
    char buf[4096];
    ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return {};
    std::string path(buf, std::size_t(n));
    return path.substr(0, path.rfind('/'));
}

}  // namespace cni::os
