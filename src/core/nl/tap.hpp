// SPDX-License-Identifier: Apache-2.0
// Persistent tap devices through the TUN driver's ioctls on /dev/net/tun (what `ip tuntap add`
// does): IFF_TAP|IFF_NO_PI|IFF_VNET_HDR, optionally IFF_MULTI_QUEUE, an owner and a group.
// The device is made in the calling thread's network namespace (enter it with NetnsGuard).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/result.hpp"

namespace cni::nl {

struct TapSpec {
    std::string name;
    bool multi_queue = false;
    std::optional<std::uint32_t> owner, group;
};

Status add_persistent_tap(const TapSpec& spec);

}  // namespace cni::nl
