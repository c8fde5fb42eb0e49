// SPDX-License-Identifier: Apache-2.0
// host-local's verbs over a configuration already read: host_local.cpp reads one from its ipam
// section, and vpc-eni-ipam builds its range set from the vpc-eni node file and runs the same
// verbs in-process, so its reservations are host-local's files, with host-local's locking, order
// and GC, without a config of one range per address written and parsed again on every call.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "applets/host_local/range.hpp"
#include "core/applet.hpp"
#include "core/cni/cni_result.hpp"
#include "core/cni/netconf.hpp"

namespace cni::host_local {

struct HostLocalConf {
    std::string name;
    std::string cni_version;
    std::vector<RangeSet> ranges;
    std::vector<Route> routes;
    std::string data_dir;
    std::string resolv_conf;
    std::vector<net::IpAddr> requested;  // CNI_ARGS IP, then args.cni.ips, then runtimeConfig ips
    std::optional<std::vector<net::Attachment>> valid_attachments;
};

// What the request adds beside the ipam section, in the reference's order: the network's name,
// version and valid attachments from `nc`, runtimeConfig's ipRanges as the first range sets
// (an ipam section's own follow them), and the requested addresses.
Result<HostLocalConf> request_conf(const Request& req, NetConf& nc);

// Canonicalises every range set and refuses none at all, more than one per family before CNI
// 0.3.0, and overlapping sets; in n log n of the ranges. The sets from `canonical` on were built
// canonical, with no overlap within each (vpc-eni-ipam's, from a node file whose addresses its
// loader proved distinct): only how they overlap the others is checked.
Status check_ranges(HostLocalConf& c, std::size_t canonical = SIZE_MAX);

Result<CniResult> add(const Context& ctx, const HostLocalConf& c);
Status del(const Context& ctx, const HostLocalConf& c);
Status check(const Context& ctx, const HostLocalConf& c);
Status status(const Context& ctx, const HostLocalConf& c);
Status gc(const Context& ctx, const HostLocalConf& c);

// An applet's verb: its configuration read by `Read` (a Result<HostLocalConf>(const Request&)),
// then host-local's `Verb` run on it.
template <auto Read, auto Verb>
auto verb_of(const Context& ctx) -> decltype(Verb(ctx, std::declval<const HostLocalConf&>())) {
    CNI_TRY_ASSIGN(auto c, Read(ctx.req));
    return Verb(ctx, c);
}

}  // namespace cni::host_local
