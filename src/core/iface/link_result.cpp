// SPDX-License-Identifier: Apache-2.0
// An ADD's result entries (see link_result.hpp).
#include "core/iface/link_result.hpp"

#include "core/ipam/delegate.hpp"

namespace cni::iface {

Interface container_interface(const Request& r, const std::string& mac) {
    Interface i;
    i.name = r.ifname;
    i.mac = mac;
    i.sandbox = r.netns;
    return i;
}

Interface host_interface(const nl::LinkInfo& link) {
    Interface i;
    i.name = link.name;
    i.mac = link.mac;
    return i;
}

Result<CniResult> link_result(const Context& ctx, const nl::LinkInfo& link, std::string_view ipam_type, Rollback& undo) {
    CniResult result;
    if (!ipam_type.empty()) CNI_TRY_ASSIGN(result, ipam::allocate(ctx, ipam_type, undo));
    result.interfaces = {container_interface(ctx.req, link.mac)};
    for (auto& ip : result.ips) ip.interface = 0;
    return result;
}

}  // namespace cni::iface
