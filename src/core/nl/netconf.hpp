// SPDX-License-Identifier: Apache-2.0
// A namespace's forwarding switch read over rtnetlink (RTM_GETNETCONF for "all"), which needs
// no /proc/sys lookup: those walk one entry per network namespace on the node (os::SysctlDir).
#pragma once

#include "core/nl/socket.hpp"

namespace cni::nl {

// net.ipv4.ip_forward (AF_INET) or net.ipv6.conf.all.forwarding (AF_INET6) of the socket's namespace.
Result<bool> forwarding_enabled(const Socket& s, int family);

}  // namespace cni::nl
