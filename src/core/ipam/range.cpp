// SPDX-License-Identifier: Apache-2.0
// Range canonicalisation and set operations (see range.hpp).
#include "core/ipam/range.hpp"

#include <algorithm>

namespace cni::ipam {
namespace {
// A canonical range (start <= end, both in its subnet) as numbers, and the index of the set, or
// of the range, it stands for. Two ranges overlap, as the reference decides by testing whether
// either holds an end of the other, exactly when they are of one family and their [start, end]
// intervals meet.
struct Span {
    net::U128 start, end;
    std::uint32_t owner;
    bool v4;
    Span(const Range& r, std::size_t o)
        : start(r.range_start->value()), end(r.range_end->value()), owner(std::uint32_t(o)), v4(r.range_start->is_v4()) {}
};
bool meet(const Span& a, const Span& b) { return a.v4 == b.v4 && a.start <= b.end && b.start <= a.end; }

// The first pair (i, j), i < j, in the order of a loop over i and then j, of owners with
// overlapping spans, where spans of one owner never overlap: in O(n log n), not by testing every
// pair. The first i is the smallest owner that overlaps anything (what overlaps it has a larger
// index, or that one would be smaller); j is then the smallest owner overlapping one of its spans.
std::optional<std::pair<std::size_t, std::size_t>> first_overlap(std::vector<Span> spans) {
    std::ranges::sort(spans, [](const Span& a, const Span& b) { return a.v4 != b.v4 ? a.v4 : a.start < b.start; });
    // In that order a span overlaps an earlier one when it starts before the latest end of those
    // of its family, and a later one when the next of its family starts before its own end.
    std::optional<std::size_t> first;
    const Span* latest = nullptr;  // the span with the latest end so far, in this family
    for (std::size_t p = 0; p < spans.size(); ++p) {
        const Span& s = spans[p];
        if (latest && latest->v4 != s.v4) latest = nullptr;
        bool overlaps = (latest && meet(*latest, s)) || (p + 1 < spans.size() && meet(s, spans[p + 1]));
        if (overlaps && (!first || s.owner < *first)) first = s.owner;
        if (!latest || latest->end < s.end) latest = &s;
    }
    if (!first) return std::nullopt;
    std::vector<const Span*> mine;  // the first owner's spans, disjoint and sorted by start (and so by end)
    for (auto& s : spans)
        if (s.owner == *first) mine.push_back(&s);
    std::optional<std::size_t> second;
    for (auto& s : spans) {
        if (s.owner == *first || (second && *second < s.owner)) continue;
        auto it = std::ranges::lower_bound(mine, s.start, std::less{}, [](const Span* m) { return m->end; });
        if (it != mine.end() && meet(**it, s)) second = s.owner;
    }
    return std::pair{*first, *second};
}
}  // namespace

Status Range::canonicalize() {
    if (!subnet) return fail("IP <nil> not v4 nor v6");
    int ones = subnet->prefix, bits = subnet->mask_bits;
    if (ones > bits - 2) return fail("Network " + subnet->str() + " too small to allocate from");
    if (!subnet->family_matches()) return fail("IPNet IP and Mask version mismatch");
    net::IpAddr network = subnet->network();
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

bool Range::contains(const net::IpAddr& a) const {
    if (!subnet || a.is_v4() != subnet->ip.is_v4()) return false;
    if (!subnet->contains(a)) return false;
    if (range_start && a < *range_start) return false;
    if (range_end && a > *range_end) return false;
    return true;
}

std::string Range::str() const { return range_start->str() + "-" + range_end->str(); }

Status canonicalize(RangeSet& set) {
    if (set.empty()) return fail("empty range set");
    for (std::size_t i = 0; i < set.size(); ++i) {
        CNI_TRY(set[i].canonicalize());
        if (i > 0 && set[i].range_start->is_v4() != set[0].range_start->is_v4()) return fail("mixed address families");
    }
    std::vector<Span> spans;
    spans.reserve(set.size());
    for (std::size_t i = 0; i < set.size(); ++i) spans.emplace_back(set[i], i);
    if (auto pair = first_overlap(std::move(spans)))
        return fail("subnets " + set[pair->first].str() + " and " + set[pair->second].str() + " overlap");
    return {};
}

bool contains(const RangeSet& set, const net::IpAddr& a) { return range_for(set, a) != nullptr; }

const Range* range_for(const RangeSet& set, const net::IpAddr& a) {
    for (auto& r : set)
        if (r.contains(a)) return &r;
    return nullptr;
}

std::optional<std::pair<std::size_t, std::size_t>> first_overlapping_sets(const std::vector<RangeSet>& sets) {
    if (sets.size() < 2) return std::nullopt;
    std::vector<Span> spans;
    for (std::size_t i = 0; i < sets.size(); ++i)
        for (auto& r : sets[i]) spans.emplace_back(r, i);
    return first_overlap(std::move(spans));
}

std::string str(const RangeSet& set) {
    std::string s;
    for (auto& r : set) s += (s.empty() ? "" : ",") + r.str();
    return s;
}

net::U128 size(const RangeSet& set) {
    net::U128 n = 0;
    for (auto& r : set) n += r.range_end->value() - r.range_start->value() + 1;
    return n;
}

Status decode(const json::Value& v, Range& out, const json::Where& w) {
    CNI_TRY(json::expect_object(v, w, json::go_type_name<Range>()));
    auto rw = w.in("Range");
    return read_keys(v, kRangeKeys, out, rw);
}

}  // namespace cni::ipam
