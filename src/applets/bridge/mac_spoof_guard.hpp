// SPDX-License-Identifier: Apache-2.0
// bridge's macspoofchk (docs/compatibility.md: bridge) in nf_tables, object for object as
// the reference's: in `table bridge nat`, the base chain PREROUTING (filter, prerouting,
// priority -300) jumps for frames from the host veth (`iifname`) to `cni-br-iface-<id>`, which
// jumps to `cni-br-iface-<id>-mac`: `ether saddr <container MAC> return`, then `drop`; id is
// "<containerID>-<ifname>" and every rule is commented "macspoofchk-<id>". So a container can
// only send frames with its own MAC. One kind of firewall rules through the one firewall
// interface (core/fw/driver.hpp), in its one driver (mac_spoof_guard_nft.cpp), one nfnetlink
// transaction each way; teardown is keyed by the id alone, finds the reference's rules as well
// as ours, and is fine when nothing is there.
#pragma once

#include <string>

#include "core/fw/driver.hpp"

namespace cni::bridge {

// What the guard is set up for; check and teardown read only the first two.
struct SpoofGuard {
    std::string container_id, ifname, host_veth, mac;
};

const fw::Rules<SpoofGuard>& nftables_mac_spoof_guard();  // mac_spoof_guard_nft.cpp

// The guard's drivers, offered once: nftables alone, as the reference's.
inline const fw::Drivers<SpoofGuard>& mac_spoof_guard() {
    static const fw::Drivers<SpoofGuard> drivers{{fw::Driver::nftables, &nftables_mac_spoof_guard()}};
    return drivers;
}

}  // namespace cni::bridge
