// SPDX-License-Identifier: Apache-2.0
// A pool of addresses kept as host-local keeps them (docs/compatibility.md: host-local): range
// sets whose reservations are host-local's files under <dataDir>/<network> (store.hpp), handed
// out in the reference's order (allocator.hpp), and the IPAM verbs over it. host-local reads a
// pool from its ipam section and adds its routes and DNS; vpc-eni-ipam builds one from the
// vpc-eni node file and runs its ADD (in the node's store, which it opens) and STATUS
// in-process, so the two share locking, order and on-disk format, without a config of one range
// per address written and parsed on every call.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/applet.hpp"
#include "core/cni/cni_result.hpp"
#include "core/cni/netconf.hpp"
#include "core/ipam/range.hpp"
#include "core/ipam/store.hpp"

namespace cni::ipam {

struct Pool {
    std::string name;  // the network's: the store's folder under data_dir
    std::string cni_version;
    std::vector<RangeSet> ranges;  // one address from each
    std::string data_dir;          // empty: kDefaultDataDir
    std::vector<net::IpAddr> requested;  // CNI_ARGS IP, then args.cni.ips, then runtimeConfig ips
    std::optional<std::vector<net::Attachment>> valid_attachments;
};

// What the request adds beside the ipam section, in the reference's order: the network's name,
// version and valid attachments from `nc`, runtimeConfig's ipRanges as the first range sets
// (an ipam section's own follow them), and the requested addresses.
Result<Pool> request_pool(const Request& req, NetConf& nc);

// A host-local-style ipam section (host-local, cluster-ipam): the request's pool whose range
// sets are runtimeConfig's ipRanges, then the legacy ipam-level range, then the ranges `own`
// returns after decoding the applet's own keys from the ipam object (at `w`), checked by
// check_ranges.
using OwnKeys = std::function<Result<std::vector<RangeSet>>(const json::Value& ipam, const json::Where& w)>;
Result<Pool> read_range_pool(const Request& req, const OwnKeys& own);

// Canonicalises every range set and refuses none at all, more than one per family before CNI
// 0.3.0, and overlapping sets; in n log n of the ranges. The sets from `canonical` on were built
// canonical, with no overlap within each (vpc-eni-ipam's, from a node file whose addresses its
// loader proved distinct): only how they overlap the others is checked.
Status check_ranges(Pool& p, std::size_t canonical = SIZE_MAX);

// ADD: one address from each range set, a requested one where a set holds it; the result has
// only the addresses (host-local adds its routes and DNS). The others as host-local's verbs.
Result<CniResult> pool_add(const Context& ctx, const Pool& p);
// The same in a store the caller has open (and so locked), for one that records more under the
// same lock (vpc-eni-ipam); `p`'s data_dir and name are not used.
Result<CniResult> pool_add(const Context& ctx, const Pool& p, Store& store);
Status pool_del(const Context& ctx, const Pool& p);
Status pool_check(const Context& ctx, const Pool& p);
Status pool_status(const Context& ctx, const Pool& p);
Status pool_status_in(const Context& ctx, const Pool& p, Store& store);  // in a store the caller has open
Status pool_gc(const Context& ctx, const Pool& p);

// An applet's verb: its configuration read by `Read` (a Result<Conf>(const Request&)), then
// `Verb` (a verb over a const Conf&) run on it.
template <auto Read, auto Verb>
auto verb_of(const Context& ctx) -> decltype(Verb(ctx, *Read(ctx.req))) {
    CNI_TRY_ASSIGN(auto c, Read(ctx.req));
    return Verb(ctx, c);
}

}  // namespace cni::ipam
