// SPDX-License-Identifier: Apache-2.0
// vpc-eni-ipam (docs/vpc-eni.md): hands out the secondary addresses the vpc-eni node file lists
// for the node's ENIs. It is host-local underneath, run in-process over one range set of the
// node's addresses (vpc_eni/reservations.hpp), so the reservations are host-local's own files
// under dataDir and its locking, order and GC apply unchanged; the request's other keys (args,
// runtimeConfig) count as they do for host-local. DEL and GC need only the store, not the node file.
#include "applets/host_local/host_local.hpp"
#include "applets/vpc_eni/reservations.hpp"
#include "core/applet.hpp"

namespace cni::vpc_eni {
namespace {

Result<host_local::HostLocalConf> with_node(const Request& req) { return host_local_conf(req, true); }
Result<host_local::HostLocalConf> store_only(const Request& req) { return host_local_conf(req, false); }

Status eni_ipam_status(const Context& ctx) {
    auto c = with_node(ctx.req);
    if (!c) return fail(code::plugin_not_available, c.error().msg);
    return host_local::status(ctx, *c);
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
    .add = host_local::verb_of<with_node, host_local::add>,
    .del = host_local::verb_of<store_only, host_local::del>,
    .check = host_local::verb_of<with_node, host_local::check>,
    .status = eni_ipam_status,
    .gc = host_local::verb_of<store_only, host_local::gc>,
};

}  // namespace cni::vpc_eni
