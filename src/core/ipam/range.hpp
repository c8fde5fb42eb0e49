// SPDX-License-Identifier: Apache-2.0
// host-local ranges and range sets (docs/compatibility.md: host-local): a subnet with an inclusive
// rangeStart..rangeEnd and a gateway, canonicalised with the reference's defaults (start =
// subnet+1, end = broadcast-1 for IPv4 and the last address for IPv6, gateway = subnet+1) and
// its validation messages; a range set is one address family with no overlaps.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/cni/config_keys.hpp"
#include "core/cni/json.hpp"
#include "core/net/ip.hpp"
#include "core/result.hpp"

namespace cni::ipam {

struct Range {
    std::optional<net::IpNet> subnet;
    std::optional<net::IpAddr> range_start, range_end, gateway;

    Status canonicalize();
    bool contains(const net::IpAddr& a) const;
    std::string str() const;  // "start-end"
    net::IpNet with_prefix(const net::IpAddr& a) const { return net::IpNet{a, subnet->prefix, subnet->mask_bits}; }
};

using RangeSet = std::vector<Range>;

Status canonicalize(RangeSet& set);
bool contains(const RangeSet& set, const net::IpAddr& a);
const Range* range_for(const RangeSet& set, const net::IpAddr& a);
// Of canonical sets, the first pair (i, j), i < j, with overlapping ranges, as a loop over i and
// then j would find it.
std::optional<std::pair<std::size_t, std::size_t>> first_overlapping_sets(const std::vector<RangeSet>& sets);
std::string str(const RangeSet& set);  // "r1,r2"
net::U128 size(const RangeSet& set);  // number of addresses in the ranges

// A range's keys: each entry of "ranges", and the single legacy range at the ipam level.
inline constexpr std::array kRangeKeys{
    key<&Range::range_start>("rangeStart", "the first address handed out; default: the subnet's second"),
    key<&Range::range_end>("rangeEnd", "the last; default: the subnet's last but one (IPv4) or last (IPv6)"),
    key<&Range::subnet>("subnet", "the range's subnet, a CIDR (one legacy range; else in each \"ranges\" entry)"),
    key<&Range::gateway>("gateway", "the gateway; default: the subnet's first address"),
};
Status decode(const json::Value& v, Range& out, const json::Where& w);

}  // namespace cni::ipam

template <>
struct cni::json::GoName<cni::ipam::Range> {
    static constexpr std::string_view value = "allocator.Range";
};
template <>
struct cni::json::GoName<cni::ipam::RangeSet> {
    static constexpr std::string_view value = "allocator.RangeSet";
};
