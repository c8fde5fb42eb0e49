// SPDX-License-Identifier: Apache-2.0
// vpc-eni-ipam (docs/vpc-eni.md): hands out the secondary addresses the vpc-eni node file lists
// for the node's ENIs, and the addresses of their delegated /28 prefixes (prefix mode). It is host-local underneath: a pool's ADD and STATUS (core/ipam/pool.hpp),
// run in-process over one range set of the node's addresses, in the node's one store for that
// file (vpc_eni/reservations.hpp): host-local's files, locking and order, shared by every network
// naming the file, so no two networks get one address; each network records its own, and its
// DEL, CHECK and GC act only on those. The request's other keys (args, runtimeConfig) count as
// they do for host-local.
#include "applets/vpc_eni/reservations.hpp"
#include "core/applet.hpp"
#include "core/ipam/pool.hpp"

namespace cni::vpc_eni {
namespace {

Result<CniResult> eni_ipam_add(const Context& ctx) {
    CNI_TRY_ASSIGN(auto r, read_eni_ipam(ctx.req));
    if (!r.ipam.data_dir.empty())
        ctx.warn("vpc-eni-ipam: ipam.dataDir is ignored: the reservations are the node's, in its node file's ipamDir");
    CNI_TRY_ASSIGN(auto node, load_configured_node_file(r.ipam.node_file));
    CNI_TRY_ASSIGN(auto pool, pool_for(ctx.req, r, node));
    const Claim claim = claim_of(ctx.req, r.net);
    CNI_TRY_ASSIGN(auto held, Reservations::open(node, r.net.name, ctx.warn));
    auto result = [&]() -> Result<CniResult> {
        CNI_TRY(held.admit(claim));
        return ipam::pool_add(ctx, pool, held.store());
    }();
    if (!result) {
        auto error = explain_exhaustion(std::move(result).error(), pool, node, held.store());
        held.drop_empty();
        return cni::Unexpected(std::move(error));
    }
    std::vector<net::IpAddr> ips;
    for (auto& ip : result->ips) ips.push_back(ip.address.ip);
    CNI_TRY(held.record(ips, claim));
    return result;
}

Status eni_ipam_del(const Context& ctx) {
    CNI_TRY_ASSIGN(auto r, read_eni_ipam(ctx.req));
    return release_for(ctx, r.ipam.node_file, r.net.name);
}

Status eni_ipam_check(const Context& ctx) {
    CNI_TRY_ASSIGN(auto r, read_eni_ipam(ctx.req));
    CNI_TRY_ASSIGN(auto ips, reserved_for(ctx, r.ipam.node_file, r.net.name));
    if (ips.empty()) return fail("vpc-eni-ipam: Failed to find address added by container " + ctx.req.container_id);
    return {};
}

Status eni_ipam_status(const Context& ctx) {
    auto status = [&]() -> Status {
        CNI_TRY_ASSIGN(auto r, read_eni_ipam(ctx.req));
        CNI_TRY_ASSIGN(auto node, load_configured_node_file(r.ipam.node_file));
        CNI_TRY_ASSIGN(auto pool, pool_for(ctx.req, r, node));
        return node_status(ctx, pool, node);
    }();
    if (!status && status.error().code != code::plugin_not_available) return fail(code::plugin_not_available, status.error().msg);
    return status;
}

// GC: the network's records of attachments not among the valid ones, made under this config,
// then the reservations no network records (an ADD that died before its record).
Status eni_ipam_gc(const Context& ctx) {
    CNI_TRY_ASSIGN(auto r, read_eni_ipam(ctx.req));
    if (!r.net.valid_attachments) {
        ctx.warn("vpc-eni-ipam: GC without cni.dev/valid-attachments: nothing is released");
        return {};
    }
    {
        CNI_TRY_ASSIGN(auto held, reservations_of(ctx, r.ipam.node_file, r.net.name));  // its lock held in this scope
        if (held) CNI_TRY(held->release_stale(*r.net.valid_attachments, claim_of(ctx.req, r.net).digest));
    }
    auto node = load_configured_node_file(r.ipam.node_file);
    return node ? release_unrecorded(*node, ctx.warn) : Status{};
}

constexpr auto kEniIpamKeyDocs = docs_of(kEniIpamKeys);

}  // namespace

extern const Applet vpc_eni_ipam_applet{
    .name = "vpc-eni-ipam",
    .kind = AppletKind::ipam,
    .summary = "addresses from the vpc-eni node file's ENIs, kept as host-local keeps them, node-wide",
    .keys = kEniIpamKeyDocs,
    .help = "Hands out the node file's secondaryIps and ipv4Prefixes with host-local's store, order and locking, "
            "in-process: ENI by ENI, one single-address range per secondary address, then one range of 16 per /28 "
            "prefix (all its addresses), in its ENI's subnet, the VPC router as gateway. One store per "
            "ipamDir, for every network whose node file names it; a network's DEL, CHECK and GC act only on its own, GC "
            "only on what its own config made. The node file's maxAddressesPerNamespace caps what the pods of one "
            "Kubernetes namespace may hold.",
    .versions = kAllVersions,
    .add = eni_ipam_add,
    .del = eni_ipam_del,
    .check = eni_ipam_check,
    .status = eni_ipam_status,
    .gc = eni_ipam_gc,
};

}  // namespace cni::vpc_eni
