// SPDX-License-Identifier: Apache-2.0
// ipMasq for bridge and ptp, and their GC (see masquerade.hpp).
#include "core/iface/masquerade.hpp"

#include "core/fw/ipmasq.hpp"
#include "core/ipam/delegate.hpp"

namespace cni::iface {
namespace {

fw::Masquerade masquerade_of(const Context& ctx, const NetConf& net, std::vector<net::IpNet> nets = {}) {
    return fw::Masquerade{net.name, ctx.req.container_id, ctx.req.ifname, std::move(nets)};
}

}  // namespace

Status masquerade_add(const Context& ctx, const NetConf& net, std::string_view backend, const std::vector<IpConfig>& ips,
                      Rollback& undo) {
    std::vector<net::IpNet> nets;
    for (auto& ip : ips) nets.push_back(ip.address);
    const auto& drivers = fw::masquerade();
    return drivers.setup(drivers.choose(fw::driver_named(backend)), masquerade_of(ctx, net, std::move(nets)), undo);
}

Status masquerade_check(const Context& ctx, const NetConf& net, std::string_view backend, const std::vector<net::IpNet>& nets) {
    const auto& drivers = fw::masquerade();
    return drivers.check(drivers.choose(fw::driver_named(backend)), masquerade_of(ctx, net, nets));
}

Status masquerade_del(const Context& ctx, const NetConf& net) { return fw::masquerade().teardown_all(masquerade_of(ctx, net)); }

Status masquerade_and_ipam_status(const Context& ctx, const NetConf& net, bool ip_masq, std::string_view backend) {
    if (ip_masq) CNI_TRY(fw::driver_status(fw::masquerade().choose(fw::driver_named(backend))));
    return ipam::status_of_optional_ipam(ctx, net.ipam_type);
}

Status gc_masquerade_and_ipam(const Context& ctx, const NetConf& net, bool ip_masq) {
    Failures failures;
    if (ip_masq && net.valid_attachments) failures.add(fw::masquerade().gc_all(net.name, *net.valid_attachments));
    if (!net.ipam_type.empty()) failures.add(ipam::delegate_gc(ctx, net.ipam_type, ctx.req.config));
    return failures.status();
}

}  // namespace cni::iface
