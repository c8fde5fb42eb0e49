// SPDX-License-Identifier: Apache-2.0
// The help lines of the keys several main applets share (config_keys.hpp), so each is worded
// once: a child link's MTU, linkInContainer, and cni-all's skipIPv6LinkLocal
// (docs/compatibility.md: skipIPv6LinkLocal).
#pragma once

#include <string_view>

namespace cni::iface {

inline constexpr std::string_view kChildMtuDoc = "0 (the master's) up to the master's MTU";
inline constexpr std::string_view kLinkInContainerDoc = "the master is in the container's namespace, not the host's";
inline constexpr std::string_view kSkipIpv6LinkLocalDoc =
    "cni-all only: no IPv6 link-local address unless the result has an IPv6 address";
inline constexpr std::string_view kMacDoc = "the container MAC; CNI_ARGS MAC, then runtimeConfig mac, win over it";

}  // namespace cni::iface
