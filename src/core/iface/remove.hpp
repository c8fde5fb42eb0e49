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

// That DEL as an applet's verb: its config read by `Read` (a Result<Conf>(const Request&), Conf
// holding its NetConf as `net`), then release_and_remove.
template <auto Read>
Status del_link(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, Read(ctx.req));
    return release_and_remove(ctx, c.net.ipam_type);
}

}  // namespace cni::iface
