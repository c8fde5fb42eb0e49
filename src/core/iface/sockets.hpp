// SPDX-License-Identifier: Apache-2.0
// How a verb that works on links opens the namespaces it works in: the container's (CNI_NETNS,
// the handle run_verb opened: core/applet.hpp) with a netlink socket in it, and for an applet
// that also works on the host (a veth's host end, a master, a bridge) the namespace the verb
// runs in with a socket there. DEL's opening yields nothing when CNI_NETNS is empty or gone (the
// spec: DEL succeeds on partial state). Rollback steps hold references to these sockets: keep the
// value where it was made, declared before the Rollback.
#pragma once

#include <optional>

#include "core/applet.hpp"
#include "core/nl/socket.hpp"
#include "core/os/netns.hpp"

namespace cni::iface {

struct ContainerSockets {
    os::Netns ns;          // CNI_NETNS
    nl::Socket container;  // a socket in it
};

struct HostSockets : ContainerSockets {
    os::Netns host_ns;  // the namespace the verb runs in
    nl::Socket host;    // a socket in it
};

Result<ContainerSockets> open_container(const Context& ctx);
Result<HostSockets> open_host_and_container(const Context& ctx);
// nullopt when CNI_NETNS is empty or no longer exists.
Result<std::optional<ContainerSockets>> open_container_if_exists(const Context& ctx);

}  // namespace cni::iface
