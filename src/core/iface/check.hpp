// SPDX-License-Identifier: Apache-2.0
// CHECK helpers shared by the veth-based applets (reference ValidateExpectedInterfaceIPs and
// ValidateExpectedRoute, plus the container-interface test every CHECK starts with).
#pragma once

#include <string>
#include <vector>

#include "core/cni/cni_result.hpp"
#include "core/nl/link.hpp"

namespace cni::iface {

// The container's interface from prevResult (name == ifname, sandbox == netns) must exist in the
// container with the expected kind and MAC. Returns the link.
Result<nl::LinkInfo> check_container_link(const nl::Socket& container, const CniResult& prev, const std::string& ifname,
                                          const std::string& netns, std::string_view kind);

// Every address prevResult gives `ifname` is on the link, and every route exists (dst, and gw
// when given). Returns the addresses found (for ipMasq checks).
Result<std::vector<net::IpNet>> check_addresses_and_routes(const nl::Socket& container, const nl::LinkInfo& link,
                                                           const CniResult& prev, const std::string& ifname);

// skipIPv6LinkLocal (configure.hpp): when prevResult gives the link no IPv6 address, it has no
// IPv6 link-local address either.
Status check_no_ipv6_link_local(const nl::Socket& container, const nl::LinkInfo& link, const CniResult& prev);

}  // namespace cni::iface
