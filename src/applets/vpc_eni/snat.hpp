// SPDX-License-Identifier: Apache-2.0
// The SNAT of pod traffic leaving the VPC, through the firewall driver chosen for the node: the
// reference agent's iptables chains, or the same decisions in a native nftables table. New connections from the pod veths to
// destinations outside the VPC CIDRs get connmark 0x80, restored onto every packet from a pod
// veth before routing, so the fwmark rule sends them through the main table and out of the
// primary ENI; there, traffic to anything outside the VPC CIDRs and not local is SNATed to the
// primary ENI's address (with random-fully ports). Without the mark, a secondary ENI's pod would
// leave through its own ENI carrying the primary's address, and the VPC's source check would
// drop it. With node-port support, a connection that arrives on the primary ENI for one of the
// node's addresses (a NodePort's DNAT to a pod) gets connmark 0x80 too, so the pod's reply, its
// mark restored, also leaves through the primary ENI, where the DNAT is undone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/fw/driver.hpp"
#include "core/net/ip.hpp"

namespace cni::vpc_eni {

inline constexpr std::uint32_t kOutboundMark = 0x80;

struct SnatSpec {
    std::vector<net::IpNet> vpc_cidrs;
    net::IpAddr primary_ip;
    std::string veth_prefix;  // the pod veths are "<prefix>+"
    std::string primary_interface;
    bool node_port = false;  // the primary ENI's connmark (nodePortSupport)
    // The iptables-nft tables and built-in chains node-setup made ("nat", "nat/POSTROUTING"), as
    // its record says: teardown removes those that hold nothing then.
    std::vector<std::string> nft_made;
};

const fw::Rules<SnatSpec>& iptables_snat();  // snat_iptables.cpp
const fw::Rules<SnatSpec>& nftables_snat();  // snat_nft.cpp

// What of iptables-nft's tables and built-in chains the iptables rules use is not there yet, on
// a node whose variant is nft (none on a legacy node): what node-setup records before it sets
// the rules up, for SnatSpec::nft_made.
Result<std::vector<std::string>> iptables_nft_absent();

// The SNAT rules in both drivers, offered once: node-setup uses snat().choose(firewallBackend),
// node-teardown every driver (teardown_all).
inline const fw::Drivers<SnatSpec>& snat() {
    static const fw::Drivers<SnatSpec> drivers{{fw::Driver::iptables, &iptables_snat()},
                                               {fw::Driver::nftables, &nftables_snat()}};
    return drivers;
}

}  // namespace cni::vpc_eni
