// SPDX-License-Identifier: Apache-2.0
// Installing the binary and its applet symlinks into a plugin directory (see install.hpp).
#include "install.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "core/os/errno_error.hpp"
#include "core/os/self_exe.hpp"
#include "core/os/unique_fd.hpp"
#include "registry.hpp"

namespace cni {
namespace {

constexpr const char* kBinaryName = "cni-all";

Status copy_self(const std::string& dest) {
    os::UniqueFd in(::open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
    if (!in) return os::sys_fail("open", "/proc/self/exe");
    std::string tmp = dest + ".tmp-install";
    os::UniqueFd outfd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755));
    if (!outfd) return os::sys_fail("open", tmp);
    char buf[1 << 16];
    ssize_t n;
    while ((n = ::read(in.get(), buf, sizeof buf)) > 0)
        if (::write(outfd.get(), buf, std::size_t(n)) != n) return os::sys_fail("write", tmp);
    if (n < 0) return os::sys_fail("read", "/proc/self/exe");
    if (::fsync(outfd.get()) != 0) return os::sys_fail("fsync", tmp);
    outfd.reset();
    if (::rename(tmp.c_str(), dest.c_str()) != 0) return os::sys_fail("rename", tmp);
    return {};
}

std::string read_link(const std::string& path) {
    std::vector<char> buf(4096);
    ssize_t n = ::readlink(path.c_str(), buf.data(), buf.size());
    return n > 0 ? std::string(buf.data(), std::size_t(n)) : std::string();
}

}  // namespace

int install_applets(const std::string& dir, bool force, std::FILE* out, std::FILE* err) {
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
        std::fprintf(err, "cni-all install: mkdir %s: %s\n", dir.c_str(), os::errno_text(errno).c_str());
        return 1;
    }
    int rc = 0;
    std::string binary = dir + "/" + kBinaryName;
    if (os::is_self_exe(binary)) {
        std::fprintf(out, "unchanged %s (this binary)\n", binary.c_str());
    } else if (auto st = copy_self(binary); !st) {
        std::fprintf(err, "cni-all install: %s\n", st.error().msg.c_str());
        return 1;
    } else {
        std::fprintf(out, "installed %s\n", binary.c_str());
    }
    for (const Applet* a : all_applets()) {
        std::string path = dir + "/" + std::string(a->name);
        struct stat st{};
        bool exists = ::lstat(path.c_str(), &st) == 0;
        if (exists && S_ISLNK(st.st_mode) && read_link(path) == kBinaryName) {
            std::fprintf(out, "unchanged %s -> %s\n", path.c_str(), kBinaryName);
            continue;
        }
        if (exists && !S_ISLNK(st.st_mode) && !force) {
            std::fprintf(err, "cni-all install: refusing to replace %s: not a symlink (use --force)\n", path.c_str());
            rc = 1;
            continue;
        }
        std::string tmp = path + ".tmp-install";
        ::unlink(tmp.c_str());
        if (::symlink(kBinaryName, tmp.c_str()) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
            std::fprintf(err, "cni-all install: linking %s: %s\n", path.c_str(), os::errno_text(errno).c_str());
            ::unlink(tmp.c_str());
            rc = 1;
            continue;
        }
        std::fprintf(out, "%s %s -> %s\n", exists ? "replaced" : "created", path.c_str(), kBinaryName);
    }
    return rc;
}

}  // namespace cni
