// SPDX-License-Identifier: Apache-2.0
// Same-binary detection by device and inode or by the launcher's tag (see in_process.hpp).
#include "in_process.hpp"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "core/os/fs.hpp"
#include "core/os/unique_fd.hpp"
#include "launcher/tag.hpp"
#include "registry.hpp"

namespace cni {

namespace {

bool same_file(const struct stat& a, const std::string& path) {
    struct stat b{};
    return ::stat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// Whether `path` is a launcher `cni-all install` wrote (it carries the tag).
bool is_launcher(const std::string& path) {
    os::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    struct stat st{};
    if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || std::size_t(st.st_size) > launcher::kMaxFileSize) return false;
    auto text = os::read_all(fd.get(), launcher::kMaxFileSize);
    return text && text->find(launcher::kTagText) != std::string::npos;
}

}  // namespace

bool is_self_exe(const std::string& path) {
    // Opened, not stat()ed: the same file natively, and under qemu-user (an arm64 build tested on
    // x86-64) the emulated program rather than the emulator, which only open() is redirected to.
    struct stat self{};
    os::UniqueFd exe(::open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
    if (!exe || ::fstat(exe.get(), &self) != 0) return false;
    if (same_file(self, path)) return true;
    // A launcher runs the cni-all in its own (resolved) folder.
    char real[PATH_MAX];
    if (!::realpath(path.c_str(), real) || !is_launcher(real)) return false;
    std::string dir(real);
    return same_file(self, dir.substr(0, dir.rfind('/')) + "/cni-all");
}

const Applet* in_process_applet(std::string_view type, const std::string& path) {
    const Applet* a = find_applet(type);
    return a && is_self_exe(path) ? a : nullptr;
}

}  // namespace cni
