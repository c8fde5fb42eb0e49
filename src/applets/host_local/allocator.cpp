// SPDX-License-Identifier: Apache-2.0
// Range-set allocation in the reference's order (see allocator.hpp).
#include "applets/host_local/allocator.hpp"

namespace cni::ipam {
namespace {

// The reference RangeIter: starts after the last reserved address (or at the first range's
// start), wraps around the set, and ends when it comes back to where it started.
class RangeIter {
public:
    RangeIter(const RangeSet& set, std::optional<IpAddr> last) : set_(set) {
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

    std::optional<std::pair<IpAddr, const Range*>> next() {
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
    std::optional<IpAddr> cur_, start_;
};

}  // namespace

// How many candidates are probed by name before the reservations are counted.
constexpr int kProbes = 64;

bool has_free_address(Store& store, const RangeSet& set, int set_index) {
    RangeIter it(set, store.last_reserved(set_index));
    for (int i = 0; i < kProbes; ++i) {
        auto cand = it.next();
        if (!cand) return false;  // the whole set, every address taken
        if (!store.taken(cand->first)) return true;
    }
    U128 unusable = 0;  // ranges in a set do not overlap, so counting per range counts each once
    for (auto& r : set) {
        unusable += store.count_taken_between(*r.range_start, *r.range_end);
        if (r.contains(*r.gateway) && !store.taken(*r.gateway)) ++unusable;
    }
    return size(set) > unusable;
}

Result<IpConfig> allocate(Store& store, const RangeSet& set, int set_index, std::string_view id,
                          std::string_view ifname, std::optional<IpAddr> requested) {
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
    if (has_free_address(store, set, set_index)) {
        RangeIter it(set, store.last_reserved(set_index));
        while (auto cand = it.next()) {
            if (store.taken(cand->first)) continue;
            CNI_TRY_ASSIGN(bool ok, store.reserve(cand->first, id, ifname, set_index));
            if (ok) return IpConfig{std::nullopt, cand->second->with_prefix(cand->first), *cand->second->gateway};
        }
    }
    return fail("no IP addresses available in range set: " + str(set));
}

}  // namespace cni::ipam
