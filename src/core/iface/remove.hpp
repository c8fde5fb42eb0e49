// SPDX-License-Identifier: Apache-2.0
// The idempotent DEL every single-link main plugin ends with (dummy, macvlan, ipvlan, vlan,
// tap): CNI_IFNAME removed from the container namespace, and nothing to do when CNI_NETNS is
// empty, already gone, or no longer holds the link (spec: DEL must succeed on partial state).
#pragma once

#include <string>

#include "core/applet.hpp"

namespace cni::iface {

Status remove_container_link(const std::string& netns_path, const std::string& ifname);

}  // namespace cni::iface
