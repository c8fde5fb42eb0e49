// SPDX-License-Identifier: Apache-2.0
// The CHECK shared by the applets that make one container interface (reference
// ValidateExpectedInterfaceIPs and ValidateExpectedRoute, after the container-interface test
// every such CHECK starts with).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/cni/cni_result.hpp"
#include "core/cni/request.hpp"
#include "core/nl/link.hpp"

namespace cni::iface {

// In this order: the interface prevResult gives CNI_IFNAME, in CNI_NETNS, exists in the
// container with kind `kind` ("": any) and prevResult's MAC; the applet's own `attributes` of it
// (a mode, a VLAN id, a master; none when empty); every address prevResult gives it is on it and
// every route exists (dst, and gw when given); with `skip_ipv6_link_local` (configure.hpp), when
// prevResult gives it no IPv6 address, it has no IPv6 link-local address either. Returns its
// addresses (for ipMasq).
struct InterfaceCheck {
    using Attributes = std::function<Status(const nl::LinkInfo&)>;
    InterfaceCheck(std::string_view kind, bool skip_ipv6_link_local = false, Attributes attributes = {})
        : kind(kind), skip_ipv6_link_local(skip_ipv6_link_local), attributes(std::move(attributes)) {}
    std::string_view kind;
    bool skip_ipv6_link_local;
    Attributes attributes;
};
Result<std::vector<net::IpNet>> check_interface(const nl::Socket& container, const Request& r, const CniResult& prev,
                                                const InterfaceCheck& want);

}  // namespace cni::iface
