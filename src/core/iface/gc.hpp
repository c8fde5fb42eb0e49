// SPDX-License-Identifier: Apache-2.0
// GC for the main applets that masquerade (bridge, ptp): this network's ipMasq rules of
// attachments not in `cni.dev/valid-attachments`, then the IPAM delegate's GC. Every step is
// tried; their errors are joined (CNI spec, GC: continue on errors).
#pragma once

#include "core/applet.hpp"
#include "core/cni/netconf.hpp"

namespace cni::iface {

Status gc_masquerade_and_ipam(const Context& ctx, const NetConf& net, bool ip_masq);

}  // namespace cni::iface
