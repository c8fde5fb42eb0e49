// SPDX-License-Identifier: Apache-2.0
// host-local IPAM (docs/compatibility.md: host-local): allocates one address per range set from
// <dataDir>/<network> with the reference's keys, request sources (CNI_ARGS IP, args.cni.ips,
// runtimeConfig ips/ipRanges), allocation order, on-disk format and error texts. Its ipam keys
// make a pool (core/ipam/pool.hpp, shared with vpc-eni-ipam), whose verbs it runs; ADD adds the
// configured routes and the DNS of resolvConf. Beyond the reference: GC releases reservations of
// attachments not in cni.dev/valid-attachments, STATUS reports code 50 when a range set has no
// free address, and calls do not re-read every reservation file (core/ipam/store.hpp).
#include "applets/host_local/resolv_conf.hpp"
#include "core/ipam/pool.hpp"

namespace cni::host_local {
namespace {

// host-local's ipam keys; the ranges and dataDir become its pool's.
struct HostLocalConf {
    std::vector<ipam::RangeSet> ranges;
    std::vector<Route> routes;
    std::string data_dir;
    std::string resolv_conf;
    ipam::Pool pool;
};

constexpr std::array kHostLocalKeys{
    key<&HostLocalConf::ranges>("ranges", "[]allocator.RangeSet", "range sets: [[{subnet, rangeStart, rangeEnd, gateway}]], one per address"),
    key_with<&HostLocalConf::routes, decode_routes>("routes", "[]*types.Route", "[{\"dst\": CIDR, \"gw\": IP}]"),
    key<&HostLocalConf::data_dir>("dataDir", "where reservations are kept, per network; default /var/lib/cni/networks"),
    key<&HostLocalConf::resolv_conf>("resolvConf", "a resolv.conf whose nameservers, domain and search the result gets"),
};

Result<HostLocalConf> parse_host_local_conf(const Request& req) {
    HostLocalConf c;
    CNI_TRY_ASSIGN(c.pool, ipam::read_range_pool(req, [&](const json::Value& ipam, const json::Where& w) -> Result<std::vector<ipam::RangeSet>> {
        CNI_TRY(read_keys(ipam, kHostLocalKeys, c, w));
        return c.ranges;
    }));
    c.pool.data_dir = std::move(c.data_dir);
    return c;
}

Result<ipam::Pool> parse_pool(const Request& req) {
    CNI_TRY_ASSIGN(auto c, parse_host_local_conf(req));
    return std::move(c.pool);
}

// The pool's addresses, with the configured routes and resolvConf's DNS, which are checked first.
Result<CniResult> host_local_add(const Context& ctx, const HostLocalConf& c) {
    CNI_TRY(require_route_dsts(c.routes));
    Dns dns;
    if (!c.resolv_conf.empty()) CNI_TRY_ASSIGN(dns, parse_resolv_conf(c.resolv_conf));
    CNI_TRY_ASSIGN(auto result, ipam::pool_add(ctx, c.pool));
    result.routes = c.routes;
    result.dns = std::move(dns);
    return result;
}

constexpr auto kHostLocalKeyDocs = join(docs_of(kHostLocalKeys), docs_of(ipam::kRangeKeys));

}  // namespace

extern const Applet host_local_applet{
    .name = "host-local",
    .kind = AppletKind::ipam,
    .summary = "allocate IP addresses from local ranges, state on disk",
    .keys = kHostLocalKeyDocs,
    .help = "Allocates addresses from local ranges; state in <dataDir>/<network name>. Requests: CNI_ARGS IP, "
            "args.cni.ips, runtimeConfig ips; runtimeConfig ipRanges adds range sets. GC releases reservations whose "
            "(containerID, ifname) is not in cni.dev/valid-attachments. STATUS fails with code 50 when a range set has "
            "no free address.",
    .versions = kAllVersions,
    .add = ipam::verb_of<parse_host_local_conf, host_local_add>,
    .del = ipam::verb_of<parse_pool, ipam::pool_del>,
    .check = ipam::verb_of<parse_pool, ipam::pool_check>,
    .status = ipam::verb_of<parse_pool, ipam::pool_status>,
    .gc = ipam::verb_of<parse_pool, ipam::pool_gc>,
};

}  // namespace cni::host_local
