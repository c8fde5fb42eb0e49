// SPDX-License-Identifier: Apache-2.0
// Network namespace handles and the namespace guard (see netns.hpp).
#include "core/os/netns.hpp"

#include <fcntl.h>
#include <linux/nsfs.h>
#include <linux/sockios.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <cstdio>
#include <cstdlib>

#include "core/os/errno_error.hpp"

namespace cni::os {
namespace {
constexpr long kNsfsMagic = 0x6e736673;
}

Result<std::optional<Netns>> Netns::open_if_exists(const std::string& path) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) {
        if (errno == ENOENT) return std::optional<Netns>{};
        return fail(code::invalid_netns, "failed to open netns \"" + path + "\": " + errno_text(errno));
    }
    struct statfs sfs{};
    if (::fstatfs(fd.get(), &sfs) != 0)
        return fail(code::invalid_netns, "failed to statfs netns \"" + path + "\": " + errno_text(errno));
    if (sfs.f_type != kNsfsMagic) {
        char magic[32];
        std::snprintf(magic, sizeof magic, "%lx", static_cast<unsigned long>(sfs.f_type));
        return fail(code::invalid_netns, "\"" + path + "\" is not a network namespace (unknown FS magic " + magic + ")");
    }
    int type = ::ioctl(fd.get(), NS_GET_NSTYPE);
    if (type >= 0 && type != CLONE_NEWNET)
        return fail(code::invalid_netns, "\"" + path + "\" is a namespace but not a network namespace");
    return std::optional<Netns>(Netns(std::move(fd), path));
}

Result<Netns> Netns::open(const std::string& path) {
    CNI_TRY_ASSIGN(auto ns, open_if_exists(path));
    if (!ns) return fail(code::invalid_netns, "failed to open netns \"" + path + "\": no such file or directory");
    return std::move(*ns);
}

Result<Netns> Netns::dup() const {
    UniqueFd fd(::fcntl(fd_.get(), F_DUPFD_CLOEXEC, 0));
    if (!fd) return fail(code::invalid_netns, "failed to duplicate the handle of netns \"" + path_ + "\": " + errno_text(errno));
    return Netns(std::move(fd), path_);
}

Result<Netns> Netns::current() { return open("/proc/thread-self/ns/net"); }

Result<Netns> Netns::of_socket(int sock_fd) {
    UniqueFd fd(::ioctl(sock_fd, SIOCGSKNS));  // the kernel opens it close-on-exec
    if (!fd) return fail("finding a socket's network namespace: " + errno_text(errno));
    return Netns(std::move(fd), "(a socket's)");
}

Result<Netns> Netns::create_anonymous() {
    CNI_TRY_ASSIGN(auto here, current());
    if (::unshare(CLONE_NEWNET) != 0) return fail("creating a temporary network namespace: " + errno_text(errno));
    UniqueFd fd(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
    int err = errno;
    if (::setns(here.fd(), CLONE_NEWNET) != 0) {
        std::fputs("cni-all: fatal: cannot return to the original network namespace\n", stderr);
        std::abort();
    }
    if (!fd) return fail("opening the temporary network namespace: " + errno_text(err));
    return Netns(std::move(fd), "(temporary)");
}

bool Netns::same_as(const Netns& other) const {
    struct stat a{}, b{};
    if (::fstat(fd(), &a) != 0 || ::fstat(other.fd(), &b) != 0) return false;
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

Result<NetnsGuard> NetnsGuard::enter(const Netns& target) {
    UniqueFd saved(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
    if (!saved) return fail(code::invalid_netns, "get plugin's netns failed: " + errno_text(errno));
    if (::setns(target.fd(), CLONE_NEWNET) != 0)
        return fail(code::invalid_netns, "failed to enter netns \"" + target.path() + "\": " + errno_text(errno));
    return NetnsGuard(std::move(saved));
}

NetnsGuard::~NetnsGuard() {
    if (!saved_) return;
    if (::setns(saved_.get(), CLONE_NEWNET) != 0) {
        std::fputs("cni-all: fatal: cannot return to the original network namespace\n", stderr);
        std::abort();
    }
}

}  // namespace cni::os
