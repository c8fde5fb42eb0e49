// SPDX-License-Identifier: Apache-2.0
// Idempotent removal of the container's link (see remove.hpp).
#include "core/iface/remove.hpp"

#include "core/ipam/delegate.hpp"
#include "core/nl/link.hpp"
#include "core/os/netns.hpp"

namespace cni::iface {

Status remove_container_link(const std::string& netns_path, const std::string& ifname) {
    if (netns_path.empty()) return {};
    CNI_TRY_ASSIGN(auto ns, os::Netns::open_if_exists(netns_path));
    if (!ns) return {};
    CNI_TRY_ASSIGN(auto container, nl::Socket::open_in(*ns));
    CNI_TRY(nl::delete_link(container, ifname));
    return {};
}

Status release_and_remove(const Context& ctx, std::string_view ipam_type) {
    if (!ipam_type.empty()) CNI_TRY(ipam::delegate_del(ctx, ipam_type, ctx.req.config));
    return remove_container_link(ctx.req.netns, ctx.req.ifname);
}

}  // namespace cni::iface
