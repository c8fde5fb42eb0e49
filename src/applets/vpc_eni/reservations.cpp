// SPDX-License-Identifier: Apache-2.0
// vpc-eni-ipam's configuration and reservations (see reservations.hpp).
#include "applets/vpc_eni/reservations.hpp"

#include "core/ipam/store.hpp"

namespace cni::vpc_eni {

ipam::RangeSet node_range_set(const NodeFile& node) {
    ipam::RangeSet set;
    set.reserve(node.address_count());
    for (auto& eni : node.enis) {
        const net::IpNet subnet = eni.subnet->masked();
        const net::IpAddr gateway = eni.gateway();
        for (auto& ip : eni.secondary_ips) set.push_back(ipam::Range{subnet, ip, ip, gateway});
    }
    return set;
}

namespace {

// The request's config as vpc-eni-ipam reads it: the network's common keys and the ipam section.
struct EniIpamRequest {
    NetConf net;
    EniIpamConf ipam;
};

Result<EniIpamRequest> read_eni_ipam(const Request& req) {
    CNI_TRY_ASSIGN(auto nc, parse_ipam_netconf(req.config, "vpc.Net", "vpc.IPAMConfig"));
    const json::Value* ipam = nc.member("ipam");
    if (!ipam || ipam->IsNull()) return fail("IPAM config missing 'ipam' key");
    json::Where top{"Net", ""};
    CNI_TRY(json::expect_object(*ipam, top.at("ipam"), "vpc.IPAMConfig"));
    EniIpamConf c;
    CNI_TRY(read_keys(*ipam, kEniIpamKeys, c, top.at("ipam").in("IPAMConfig")));
    return EniIpamRequest{std::move(nc), std::move(c)};
}

Result<ipam::Store> open_store(const Context& ctx) {
    CNI_TRY_ASSIGN(auto r, read_eni_ipam(ctx.req));
    return ipam::Store::open(r.ipam.data_dir, r.net.name, ctx.warn);
}

}  // namespace

Result<ipam::Pool> pool_for(const Request& req, bool with_node) {
    CNI_TRY_ASSIGN(auto r, read_eni_ipam(req));
    std::optional<NodeFile> node;
    if (with_node) CNI_TRY_ASSIGN(node, load_configured_node_file(r.ipam.node_file));
    CNI_TRY_ASSIGN(auto c, ipam::request_pool(req, r.net));
    c.data_dir = r.ipam.data_dir;
    if (!node) return c;
    if (node->address_count() == 0) return fail("vpc-eni-ipam: node file " + node->path + " lists no secondaryIps");
    c.ranges.push_back(node_range_set(*node));
    CNI_TRY(ipam::check_ranges(c, c.ranges.size() - 1));
    return c;
}

Result<std::vector<net::IpAddr>> reserved_for(const Context& ctx) {
    CNI_TRY_ASSIGN(auto store, open_store(ctx));
    auto held = store.held_by(ctx.req.container_id, ctx.req.ifname);
    store.flush();  // an index rebuilt on opening is kept
    return held;
}

Result<std::vector<net::IpAddr>> reserved_addresses(const Context& ctx) {
    CNI_TRY_ASSIGN(auto store, open_store(ctx));
    auto held = store.addresses();
    store.flush();
    return held;
}

}  // namespace cni::vpc_eni
