// SPDX-License-Identifier: Apache-2.0
// The result of an ADD that made links (CNI spec, "Success"): the entry of the container's
// interface (CNI_IFNAME with its MAC, in CNI_NETNS) and of a host link (its name and MAC), and
// for an applet that made one container interface, that interface with its IPAM's result on it.
#pragma once

#include <string_view>

#include "core/applet.hpp"
#include "core/nl/link.hpp"
#include "core/rollback.hpp"

namespace cni::iface {

Interface container_interface(const Request& r, const std::string& mac);
Interface host_interface(const nl::LinkInfo& link);

// `link` as the result's only interface and, when `ipam_type` names an IPAM, that IPAM's result
// (ipam::allocate: released by `undo` when ADD fails) with every address on it, interface 0.
Result<CniResult> link_result(const Context& ctx, const nl::LinkInfo& link, std::string_view ipam_type, Rollback& undo);

}  // namespace cni::iface
