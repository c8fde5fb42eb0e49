// SPDX-License-Identifier: Apache-2.0
// host-local allocation in one range set (reference IPAllocator.Get): a requested address, or
// the next free one walking round-robin from last_reserved_ip.<set>+1 through the ranges of the
// set, skipping each range's gateway, in exactly the reference's order. Exhaustion is decided
// up front: the first few candidates are probed by name, and only when all of them are taken are
// the reservations counted (so the walk is bounded even in a huge IPv6 range, and a call reads
// the index only when the set is nearly full).
#pragma once

#include <optional>

#include "applets/host_local/range.hpp"
#include "applets/host_local/store.hpp"
#include "core/cni/cni_result.hpp"

namespace cni::ipam {

Result<IpConfig> allocate(Store& store, const RangeSet& set, int set_index, std::string_view id,
                          std::string_view ifname, std::optional<IpAddr> requested);

// Is there at least one address this set could still hand out?
bool has_free_address(Store& store, const RangeSet& set, int set_index);

}  // namespace cni::ipam
