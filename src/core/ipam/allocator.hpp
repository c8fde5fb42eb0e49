// SPDX-License-Identifier: Apache-2.0
// host-local allocation in one range set (reference IPAllocator.Get): a requested address, or
// the next free one walking round-robin from last_reserved_ip.<set>+1 through the ranges of the
// set, skipping each range's gateway, in exactly the reference's order. The first few candidates
// are probed by name; only when all of them are taken is the index read, once, and the walk goes
// on in memory (so a call reads the index only when the set is nearly full, and its cost grows as
// n log n, not n squared, with the set's ranges and the reservations). The walk passes only taken
// addresses and gateways, so it is bounded even in a huge IPv6 range; has_free_address counts
// instead of walking.
#pragma once

#include <optional>

#include "core/cni/cni_result.hpp"
#include "core/ipam/range.hpp"
#include "core/ipam/store.hpp"

namespace cni::ipam {

Result<IpConfig> allocate(Store& store, const RangeSet& set, int set_index, std::string_view id,
                          std::string_view ifname, std::optional<net::IpAddr> requested);

// Is there at least one address this set could still hand out?
bool has_free_address(Store& store, const RangeSet& set, int set_index);

}  // namespace cni::ipam
