// SPDX-License-Identifier: Apache-2.0
// CHECK helpers shared by the veth-based applets (reference ValidateExpectedInterfaceIPs and
// ValidateExpectedRoute, plus the container-interface test every CHECK starts with).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/cni/cni_result.hpp"
#include "core/cni/request.hpp"
#include "core/nl/link.hpp"

namespace cni::iface {

// The container's interface from prevResult (name == ifname, sandbox == netns) must exist in the
// container with the expected kind ("": any) and MAC. Returns the link.
Result<nl::LinkInfo> check_container_link(const nl::Socket& container, const CniResult& prev, const std::string& ifname,
                                          const std::string& netns, std::string_view kind);

// Every address prevResult gives `ifname` is on the link, and every route exists (dst, and gw
// when given). Returns the addresses found (for ipMasq checks).
Result<std::vector<net::IpNet>> check_addresses_and_routes(const nl::Socket& container, const nl::LinkInfo& link,
                                                           const CniResult& prev, const std::string& ifname);

// skipIPv6LinkLocal (configure.hpp): when prevResult gives the link no IPv6 address, it has no
// IPv6 link-local address either.
Status check_no_ipv6_link_local(const nl::Socket& container, const nl::LinkInfo& link, const CniResult& prev);

// The CHECK of an applet that made one container interface, in that order: the interface
// prevResult gives CNI_IFNAME (check_container_link), the applet's own `attributes` of it (a mode,
// a VLAN id, a master; none when empty), its addresses and routes, and with
// `skip_ipv6_link_local` its lack of an IPv6 link-local address. Returns its addresses.
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
