// SPDX-License-Identifier: Apache-2.0
// GC of ipMasq rules and the IPAM delegate (see gc.hpp).
#include "core/iface/gc.hpp"

#include "core/fw/ipmasq.hpp"
#include "core/ipam/delegate.hpp"

namespace cni::iface {

Status gc_masquerade_and_ipam(const Context& ctx, const NetConf& net, bool ip_masq) {
    Failures failures;
    if (ip_masq && net.valid_attachments) failures.add(fw::gc_ipmasq(net.name, *net.valid_attachments));
    if (!net.ipam_type.empty()) failures.add(ipam::delegate_gc(ctx, net.ipam_type, ctx.req.config));
    return failures.status();
}

}  // namespace cni::iface
