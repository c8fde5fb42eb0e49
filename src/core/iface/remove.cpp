// SPDX-License-Identifier: Apache-2.0
// Idempotent removal of the container's link (see remove.hpp).
#include "core/iface/remove.hpp"

#include "core/iface/sockets.hpp"
#include "core/ipam/delegate.hpp"
#include "core/nl/link.hpp"

namespace cni::iface {

Status remove_container_link(const Context& ctx) {
    CNI_TRY_ASSIGN(auto io, open_container_if_exists(ctx));
    if (io) CNI_TRY(nl::delete_link(io->container, ctx.req.ifname));
    return {};
}

Status release_and_remove(const Context& ctx, std::string_view ipam_type) {
    if (!ipam_type.empty()) CNI_TRY(ipam::delegate_del(ctx, ipam_type, ctx.req.config));
    return remove_container_link(ctx);
}

}  // namespace cni::iface
