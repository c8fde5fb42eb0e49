// SPDX-License-Identifier: Apache-2.0
// vpc-eni-ipam (docs/vpc-eni.md): hands out the secondary addresses the vpc-eni node file lists
// for the node's ENIs. It is host-local underneath: the verbs of a pool (core/ipam/pool.hpp), run
// in-process over one range set of the node's addresses (vpc_eni/reservations.hpp), so the
// reservations are host-local's own files under dataDir and its locking, order and GC apply
// unchanged; the request's other keys (args, runtimeConfig) count as they do for host-local. DEL
// and GC need only the store, not the node file.
#include "applets/vpc_eni/reservations.hpp"
#include "core/applet.hpp"
#include "core/ipam/pool.hpp"

namespace cni::vpc_eni {
namespace {

Result<ipam::Pool> with_node(const Request& req) { return pool_for(req, true); }
Result<ipam::Pool> store_only(const Request& req) { return pool_for(req, false); }

Status eni_ipam_status(const Context& ctx) {
    auto c = with_node(ctx.req);
    if (!c) return fail(code::plugin_not_available, c.error().msg);
    return ipam::pool_status(ctx, *c);
}

constexpr auto kEniIpamKeyDocs = docs_of(kEniIpamKeys);

}  // namespace

extern const Applet vpc_eni_ipam_applet{
    .name = "vpc-eni-ipam",
    .kind = AppletKind::ipam,
    .summary = "addresses from the vpc-eni node file's ENIs, kept as host-local keeps them",
    .keys = kEniIpamKeyDocs,
    .help = "Hands out the node file's secondaryIps with host-local's store, order and GC, in-process: one "
            "single-address range per address, in its ENI's subnet, the VPC router as gateway.",
    .versions = kAllVersions,
    .add = ipam::verb_of<with_node, ipam::pool_add>,
    .del = ipam::verb_of<store_only, ipam::pool_del>,
    .check = ipam::verb_of<with_node, ipam::pool_check>,
    .status = eni_ipam_status,
    .gc = ipam::verb_of<store_only, ipam::pool_gc>,
};

}  // namespace cni::vpc_eni
