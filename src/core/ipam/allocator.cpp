// SPDX-License-Identifier: Apache-2.0
// Range-set allocation in the reference's order (see allocator.hpp).
#include "core/ipam/allocator.hpp"

#include <algorithm>

namespace cni::ipam {
namespace {

// The reference RangeIter: starts after the last reserved address (or at the first range's
// start), wraps around the set, and ends when it comes back to where it started.
class RangeIter {
public:
    RangeIter(const RangeSet& set, std::optional<net::IpAddr> last) : set_(set) {
        if (last && contains(set, *last)) {
            for (std::size_t i = 0; i < set.size(); ++i)
                if (set[i].contains(*last)) {
                    idx_ = i;
                    cur_ = *last;
                    break;
                }
        } else {
            start_ = *set[0].range_start;
        }
    }

    std::optional<std::pair<net::IpAddr, const Range*>> next() {
        while (true) {
            const Range* r = &set_[idx_];
            if (!cur_) {
                cur_ = *r->range_start;
                start_ = cur_;
                if (*cur_ == *r->gateway) continue;
                return std::pair{*cur_, r};
            }
            if (*cur_ == *r->range_end) {
                idx_ = (idx_ + 1) % set_.size();
                r = &set_[idx_];
                cur_ = *r->range_start;
            } else {
                cur_ = cur_->next();
            }
            if (!start_) start_ = cur_;
            else if (*cur_ == *start_) return std::nullopt;
            if (*cur_ == *r->gateway) continue;
            return std::pair{*cur_, r};
        }
    }

private:
    const RangeSet& set_;
    std::size_t idx_ = 0;
    std::optional<net::IpAddr> cur_, start_;
};

// How many candidates are probed by name before the index is read.
constexpr int kProbes = 64;

// Whether a candidate is taken: the first kProbes asked of the directory by name (a call on a
// set with room reads no index), then looked up among every reserved address, read once and
// sorted, so a long walk costs memory lookups, not a system call each.
class Taken {
public:
    explicit Taken(Store& store) : store_(store) {}
    bool operator()(const net::IpAddr& ip) {
        if (probes_ < kProbes) {
            ++probes_;
            return store_.taken(ip);
        }
        return std::ranges::binary_search(all(), ip);
    }
    const std::vector<net::IpAddr>& all() {
        if (!all_) all_ = store_.addresses();
        return *all_;
    }

private:
    Store& store_;
    int probes_ = 0;
    std::optional<std::vector<net::IpAddr>> all_;
};

}  // namespace

bool has_free_address(Store& store, const RangeSet& set, int set_index) {
    Taken taken(store);
    RangeIter it(set, store.last_reserved(set_index));
    for (int i = 0; i < kProbes; ++i) {
        auto cand = it.next();
        if (!cand) return false;  // the whole set, every address taken
        if (!taken(cand->first)) return true;
    }
    // Counted, not walked (a huge IPv6 range): ranges in a set do not overlap, so counting per
    // range counts each reservation once.
    const auto& all = taken.all();
    net::U128 unusable = 0;
    for (auto& r : set) {
        unusable += std::ranges::upper_bound(all, *r.range_end) - std::ranges::lower_bound(all, *r.range_start);
        if (r.contains(*r.gateway) && !std::ranges::binary_search(all, *r.gateway)) ++unusable;
    }
    return size(set) > unusable;
}

Result<IpConfig> allocate(Store& store, const RangeSet& set, int set_index, std::string_view id,
                          std::string_view ifname, std::optional<net::IpAddr> requested) {
    if (requested) {
        const Range* r = range_for(set, *requested);
        if (!r) return fail(requested->str() + " not in range set " + str(set));
        if (*requested == *r->gateway) return fail("requested ip " + requested->str() + " is subnet's gateway");
        CNI_TRY_ASSIGN(bool ok, store.reserve(*requested, id, ifname, set_index));
        if (!ok) return fail("requested IP address " + requested->str() + " is not available in range set " + str(set));
        return IpConfig{std::nullopt, r->with_prefix(*requested), *r->gateway};
    }
    for (auto& ip : store.find_by_id(id, ifname))
        if (range_for(set, ip))
            return fail(ip.str() + " has been allocated to " + std::string(id) + ", duplicate allocation is not allowed");
    // The walk passes only taken addresses and gateways, so even in a huge IPv6 range it ends
    // within one step more than there are reservations and ranges.
    Taken taken(store);
    RangeIter it(set, store.last_reserved(set_index));
    while (auto cand = it.next()) {
        if (taken(cand->first)) continue;
        CNI_TRY_ASSIGN(bool ok, store.reserve(cand->first, id, ifname, set_index));
        if (ok) return IpConfig{std::nullopt, cand->second->with_prefix(cand->first), *cand->second->gateway};
    }
    return fail("no IP addresses available in range set: " + str(set));
}

}  // namespace cni::ipam
