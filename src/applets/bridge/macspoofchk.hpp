// SPDX-License-Identifier: Apache-2.0
// bridge's macspoofchk (docs/compatibility.md: bridge) in nf_tables, object for object as
// the reference's: in `table bridge nat`, the base chain PREROUTING (filter, prerouting,
// priority -300) jumps for frames from the host veth (`iifname`) to `cni-br-iface-<id>`, which
// jumps to `cni-br-iface-<id>-mac`: `ether saddr <container MAC> return`, then `drop`; id is
// "<containerID>-<ifname>" and every rule is commented "macspoofchk-<id>". So a container can
// only send frames with its own MAC. One nfnetlink transaction each way, through the firewall
// interface (fw::Rules, core/fw/driver.hpp); teardown is keyed by the id alone, finds the
// reference's rules as well as ours, and is fine when nothing is there.
#pragma once

#include <string>

#include "core/fw/driver.hpp"

namespace cni::bridge {

// What the guard is set up for; check and teardown read only the first two.
struct SpoofGuard {
    std::string container_id, ifname, host_veth, mac;
};

// The guard's drivers: nftables alone, as the reference's.
const fw::Drivers<SpoofGuard>& mac_spoof_guard();

}  // namespace cni::bridge
