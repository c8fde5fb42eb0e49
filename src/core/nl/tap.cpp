// SPDX-License-Identifier: Apache-2.0
// Persistent tap devices (see tap.hpp).
#include "core/nl/tap.hpp"

#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <cstring>

#include "core/os/errno_error.hpp"
#include "core/os/exec.hpp"
#include "core/os/unique_fd.hpp"
#include "core/strings.hpp"

namespace cni::nl {

Status add_persistent_tap(const TapSpec& spec) {
    os::UniqueFd tun(::open("/dev/net/tun", O_RDWR | O_CLOEXEC));
    if (!tun) return os::sys_fail("open", "/dev/net/tun");
    const std::string& name = spec.name;
    ifreq req{};
    std::strncpy(req.ifr_name, name.c_str(), IFNAMSIZ - 1);
    req.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | (spec.multi_queue ? IFF_MULTI_QUEUE : 0);
    if (::ioctl(tun.get(), TUNSETIFF, &req) != 0) return fail("failed to create tap " + name + ": " + os::errno_text(errno));
    if (spec.owner && ::ioctl(tun.get(), TUNSETOWNER, static_cast<unsigned long>(*spec.owner)) != 0)
        return fail("failed to set the owner of tap " + name + ": " + os::errno_text(errno));
    if (spec.group && ::ioctl(tun.get(), TUNSETGROUP, static_cast<unsigned long>(*spec.group)) != 0)
        return fail("failed to set the group of tap " + name + ": " + os::errno_text(errno));
    if (::ioctl(tun.get(), TUNSETPERSIST, 1) != 0) return fail("failed to make tap " + name + " persistent: " + os::errno_text(errno));
    return {};
}

Status add_labelled_tap(const TapSpec& spec, const std::string& selinux_label, std::span<const std::string> environ) {
    auto ip = os::look_path("ip", env_value(environ, "PATH"));
    if (!ip) return fail("failed to run command : " + ip.error().msg);
    os::Program p{*ip, {"tuntap", "add", "mode", "tap", "name", spec.name}, {environ.begin(), environ.end()}, {}, selinux_label};
    if (spec.multi_queue) p.args.emplace_back("multi_queue");
    if (spec.owner) p.args.insert(p.args.end(), {"user", std::to_string(*spec.owner)});
    if (spec.group) p.args.insert(p.args.end(), {"group", std::to_string(*spec.group)});
    CNI_TRY_ASSIGN(auto res, os::run_program(p));
    if (!res.ok()) return fail("failed to run command " + res.out + res.err + ": " + res.status_text());
    return {};
}

}  // namespace cni::nl
