// SPDX-License-Identifier: Apache-2.0
// The idempotent DEL of every single-link main plugin (dummy, macvlan, ipvlan, vlan, tap): the
// IPAM allocation released (when the config has IPAM), then CNI_IFNAME removed from the
// container namespace, with nothing to do when CNI_NETNS is empty, already gone, or no longer
// holds the link (spec: DEL must succeed on partial state).
#pragma once

#include <string_view>

#include "core/applet.hpp"

namespace cni::iface {

// CNI_IFNAME removed from CNI_NETNS.
Status remove_container_link(const Context& ctx);
// IPAM DEL through `ipam_type` ("" for none), then remove_container_link.
Status release_and_remove(const Context& ctx, std::string_view ipam_type);

}  // namespace cni::iface
