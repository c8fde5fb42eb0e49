// SPDX-License-Identifier: Apache-2.0
// What a DHCPACK means as a CNI result (docs/compatibility.md: dhcp): the address is
// yiaddr with the subnet mask option (an ACK without one is an error), the gateway is the first
// router; routes are the classless routes (121) alone when present, on-link ones with scope link,
// otherwise the static routes (33) plus a default route via the router. `priority` becomes every
// route's metric. No DNS, as in the reference.
#pragma once

#include "applets/dhcp/message.hpp"
#include "core/cni/cni_result.hpp"

namespace cni::dhcp {

Result<CniResult> lease_result(const Message& ack, std::int64_t priority);

}  // namespace cni::dhcp
