// SPDX-License-Identifier: Apache-2.0
// Persistent tap devices through the TUN driver's ioctls on /dev/net/tun (what `ip tuntap add`
// does): IFF_TAP|IFF_NO_PI|IFF_VNET_HDR, optionally IFF_MULTI_QUEUE, an owner and a group.
// The device is made in the calling thread's network namespace (enter it with NetnsGuard).
// With an SELinux label, it is made the reference's way instead: `ip tuntap add` run under that
// label, because the TUN driver gives the device the context of the process that creates it, and
// only a process of that context (a VM launcher's, e.g. container_t) may then attach to it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "core/result.hpp"

namespace cni::nl {

struct TapSpec {
    std::string name;
    bool multi_queue = false;
    std::optional<std::uint32_t> owner, group;
};

Status add_persistent_tap(const TapSpec& spec);

// `ip tuntap add mode tap name NAME [multi_queue] [user N] [group N]`, `ip` found in the PATH of
// `environ`, run under `selinux_label` (so without IFF_VNET_HDR, as `ip` makes it). Errors as the
// reference's: "failed to run command OUTPUT: exit status N".
Status add_labelled_tap(const TapSpec& spec, const std::string& selinux_label, std::span<const std::string> environ);

}  // namespace cni::nl
