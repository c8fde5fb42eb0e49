// SPDX-License-Identifier: Apache-2.0
// A verb's namespaces and sockets (see sockets.hpp).
#include "core/iface/sockets.hpp"

namespace cni::iface {

Result<ContainerSockets> open_container(const Context& ctx) {
    CNI_TRY_ASSIGN(auto ns, container_netns(ctx));
    CNI_TRY_ASSIGN(auto container, nl::Socket::open_in(ns));
    return ContainerSockets{std::move(ns), std::move(container)};
}

Result<HostSockets> open_host_and_container(const Context& ctx) {
    CNI_TRY_ASSIGN(auto in_container, open_container(ctx));
    CNI_TRY_ASSIGN(auto host_ns, os::Netns::current());
    CNI_TRY_ASSIGN(auto host, nl::Socket::open());
    return HostSockets{std::move(in_container), std::move(host_ns), std::move(host)};
}

Result<std::optional<ContainerSockets>> open_container_if_exists(const Context& ctx) {
    if (ctx.req.netns.empty()) return std::optional<ContainerSockets>{};
    CNI_TRY_ASSIGN(auto ns, container_netns_if_exists(ctx));
    if (!ns) return std::optional<ContainerSockets>{};
    CNI_TRY_ASSIGN(auto container, nl::Socket::open_in(*ns));
    return std::optional<ContainerSockets>(ContainerSockets{std::move(*ns), std::move(container)});
}

}  // namespace cni::iface
