// SPDX-License-Identifier: Apache-2.0
// Range canonicalisation and set operations (see range.hpp).
#include "applets/host_local/range.hpp"

namespace cni::ipam {
namespace {
U128 as_u128(const IpAddr& a) {
    U128 v = 0;
    for (auto b : a.bytes()) v = (v << 8) | b;
    return v;
}
}  // namespace

Status Range::canonicalize() {
    if (!subnet) return fail("IP <nil> not v4 nor v6");
    int ones = subnet->prefix, bits = subnet->mask_bits;
    if (ones > bits - 2) return fail("Network " + subnet->str() + " too small to allocate from");
    if (!subnet->family_matches()) return fail("IPNet IP and Mask version mismatch");
    IpAddr network = subnet->network();
    if (network != subnet->ip)
        return fail("Network has host bits set. For a subnet mask of length " + std::to_string(ones) +
                    " the network address is " + network.str());
    if (!gateway) gateway = network.next();
    if (range_start) {
        if (!contains(*range_start))
            return fail("RangeStart " + range_start->str() + " not in network " + subnet->str());
    } else {
        range_start = network.next();
    }
    if (range_end) {
        if (!contains(*range_end)) return fail("RangeEnd " + range_end->str() + " not in network " + subnet->str());
    } else {
        range_end = subnet->last();
        if (range_end->is_v4()) range_end = range_end->prev();
    }
    return {};
}

bool Range::contains(const IpAddr& a) const {
    if (!subnet || a.is_v4() != subnet->ip.is_v4()) return false;
    if (!subnet->contains(a)) return false;
    if (range_start && a < *range_start) return false;
    if (range_end && a > *range_end) return false;
    return true;
}

bool Range::overlaps(const Range& o) const {
    if (range_start->is_v4() != o.range_start->is_v4()) return false;
    return contains(*o.range_start) || contains(*o.range_end) || o.contains(*range_start) || o.contains(*range_end);
}

std::string Range::str() const { return range_start->str() + "-" + range_end->str(); }

Status canonicalize(RangeSet& set) {
    if (set.empty()) return fail("empty range set");
    for (std::size_t i = 0; i < set.size(); ++i) {
        CNI_TRY(set[i].canonicalize());
        if (i > 0 && set[i].range_start->is_v4() != set[0].range_start->is_v4()) return fail("mixed address families");
    }
    for (std::size_t i = 0; i + 1 < set.size(); ++i)
        for (std::size_t j = i + 1; j < set.size(); ++j)
            if (set[i].overlaps(set[j])) return fail("subnets " + set[i].str() + " and " + set[j].str() + " overlap");
    return {};
}

bool contains(const RangeSet& set, const IpAddr& a) { return range_for(set, a) != nullptr; }

const Range* range_for(const RangeSet& set, const IpAddr& a) {
    for (auto& r : set)
        if (r.contains(a)) return &r;
    return nullptr;
}

bool overlaps(const RangeSet& a, const RangeSet& b) {
    for (auto& x : a)
        for (auto& y : b)
            if (x.overlaps(y)) return true;
    return false;
}

std::string str(const RangeSet& set) {
    std::string s;
    for (auto& r : set) s += (s.empty() ? "" : ",") + r.str();
    return s;
}

U128 size(const RangeSet& set) {
    U128 n = 0;
    for (auto& r : set) n += as_u128(*r.range_end) - as_u128(*r.range_start) + 1;
    return n;
}

Status decode(const json::Value& v, Range& out, const json::Where& w) {
    CNI_TRY(json::expect_object(v, w, json::go_type_name<Range>()));
    auto rw = w.in("Range");
    return read_keys(v, kRangeKeys, out, rw);
}

}  // namespace cni::ipam
