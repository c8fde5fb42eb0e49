// SPDX-License-Identifier: Apache-2.0
// vpc-eni-ipam (docs/vpc-eni.md): hands out the secondary addresses the vpc-eni node file lists
// for the node's ENIs. It is host-local underneath, run in-process with one single-address range
// per secondary address (in the ENI's subnet, its gateway the VPC router), so the reservations
// are host-local's own files under dataDir and its locking, order and GC apply unchanged; the
// other keys of the config (args, runtimeConfig, prevResult) go to it as they are.
#include "applets/vpc_eni/node_file.hpp"
#include "core/applet.hpp"
#include "core/cni/netconf.hpp"
#include "core/ipam/delegate.hpp"

namespace cni {
namespace {

struct EniIpamConf {
    std::string node_file;
    std::string data_dir;
};

constexpr std::array kEniIpamKeys{
    key<&EniIpamConf::node_file>("nodeFile", "the vpc-eni node file whose ENIs' secondaryIps are handed out"),
    key<&EniIpamConf::data_dir>("dataDir", "where reservations are kept (host-local's files), per network; default /var/lib/cni/networks"),
};

// The request's config with its ipam section replaced by host-local's over the node's addresses.
Result<std::string> host_local_config(const Request& req) {
    CNI_TRY_ASSIGN(auto nc, parse_ipam_netconf(req.config, "vpc.Net", "vpc.IPAMConfig"));
    const json::Value* ipam = nc.member("ipam");
    if (!ipam || ipam->IsNull()) return fail("IPAM config missing 'ipam' key");
    json::Where top{"Net", ""};
    CNI_TRY(json::expect_object(*ipam, top.at("ipam"), "vpc.IPAMConfig"));
    EniIpamConf c;
    CNI_TRY(read_keys(*ipam, kEniIpamKeys, c, top.at("ipam").in("IPAMConfig")));
    CNI_TRY_ASSIGN(auto node, vpc::load_node_file(c.node_file));
    CNI_TRY_ASSIGN(auto doc, json::parse(req.config));
    auto& a = doc.GetAllocator();
    json::Value set(rapidjson::kArrayType);
    for (auto& eni : node.enis)
        for (auto& ip : eni.secondary_ips) {
            json::Value range(rapidjson::kObjectType);
            json::set(range, "subnet", json::str(eni.subnet->masked().str(), a), a);
            json::set(range, "rangeStart", json::str(ip.str(), a), a);
            json::set(range, "rangeEnd", json::str(ip.str(), a), a);
            json::set(range, "gateway", json::str(eni.gateway().str(), a), a);
            set.PushBack(std::move(range), a);
        }
    if (set.Empty()) return fail("vpc-eni-ipam: node file " + node.path + " lists no secondaryIps");
    json::Value ranges(rapidjson::kArrayType);
    ranges.PushBack(std::move(set), a);
    json::Value hl(rapidjson::kObjectType);
    json::set(hl, "type", json::str("host-local", a), a);
    if (!c.data_dir.empty()) json::set(hl, "dataDir", json::str(c.data_dir, a), a);
    json::set(hl, "ranges", std::move(ranges), a);
    doc["ipam"] = std::move(hl);
    return json::write(doc, json::Style::compact, false);
}

Result<CniResult> eni_ipam_add(const Context& ctx) {
    CNI_TRY_ASSIGN(auto config, host_local_config(ctx.req));
    return ipam::delegate_add(ctx, "host-local", config);
}
Status eni_ipam_del(const Context& ctx) {
    CNI_TRY_ASSIGN(auto config, host_local_config(ctx.req));
    return ipam::delegate_del(ctx, "host-local", config);
}
Status eni_ipam_check(const Context& ctx) {
    CNI_TRY_ASSIGN(auto config, host_local_config(ctx.req));
    return ipam::delegate_check(ctx, "host-local", config);
}
Status eni_ipam_status(const Context& ctx) {
    auto config = host_local_config(ctx.req);
    if (!config) return fail(code::plugin_not_available, config.error().msg);
    return ipam::delegate_status(ctx, "host-local", *config);
}
Status eni_ipam_gc(const Context& ctx) {
    CNI_TRY_ASSIGN(auto config, host_local_config(ctx.req));
    return ipam::delegate_gc(ctx, "host-local", config);
}

constexpr auto kEniIpamKeyDocs = docs_of(kEniIpamKeys);

}  // namespace

extern const Applet vpc_eni_ipam_applet{
    .name = "vpc-eni-ipam",
    .kind = AppletKind::ipam,
    .summary = "addresses from the vpc-eni node file's ENIs, kept as host-local keeps them",
    .keys = kEniIpamKeyDocs,
    .help = "Hands out the node file's secondaryIps through host-local (found in CNI_PATH, in-process when it is "
            "cni-all's): one single-address range per address, in its ENI's subnet, the VPC router as gateway.",
    .versions = kAllVersions,
    .add = eni_ipam_add,
    .del = eni_ipam_del,
    .check = eni_ipam_check,
    .status = eni_ipam_status,
    .gc = eni_ipam_gc,
};

}  // namespace cni
