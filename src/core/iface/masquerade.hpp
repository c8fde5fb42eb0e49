// SPDX-License-Identifier: Apache-2.0
// ipMasq for the main applets that offer it (bridge, ptp), through the one firewall interface
// (fw::masquerade(), core/fw/ipmasq.hpp): ADD and CHECK in the driver ipMasqBackend names or the
// node's choice; DEL in every driver, by the attachment's identity alone; GC of this network's
// rules of attachments not in `cni.dev/valid-attachments`, then the IPAM delegate's GC (every
// step tried, their errors joined: CNI spec, GC).
#pragma once

#include <string_view>
#include <vector>

#include "core/applet.hpp"
#include "core/cni/netconf.hpp"
#include "core/rollback.hpp"

namespace cni::iface {

// Masquerades what the addresses of `ips` send off their subnets; `undo` takes it back.
Status masquerade_add(const Context& ctx, const NetConf& net, std::string_view backend, const std::vector<IpConfig>& ips,
                      Rollback& undo);
Status masquerade_check(const Context& ctx, const NetConf& net, std::string_view backend, const std::vector<net::IpNet>& nets);
Status masquerade_del(const Context& ctx, const NetConf& net);
// STATUS of a main applet with ipMasq: code 50 when the backend ADD would choose cannot work,
// else its IPAM's STATUS (none asked when the config names no IPAM).
Status masquerade_and_ipam_status(const Context& ctx, const NetConf& net, bool ip_masq, std::string_view backend);
Status gc_masquerade_and_ipam(const Context& ctx, const NetConf& net, bool ip_masq);

}  // namespace cni::iface
