// SPDX-License-Identifier: Apache-2.0
// The SNAT of pod traffic leaving the VPC, through the firewall driver chosen for the node (the
// reference's agent writes it with iptables). New connections from the pod veths to
// destinations outside the VPC CIDRs get connmark 0x80, restored onto every packet from a pod
// veth before routing, so the fwmark rule sends them through the main table and out of the
// primary ENI; there, traffic to anything outside the VPC CIDRs and not local is SNATed to the
// primary ENI's address (with random-fully ports). Without the mark, a secondary ENI's pod would
// leave through its own ENI carrying the primary's address, and the VPC's source check would
// drop it.
#pragma once

#include <string>
#include <vector>

#include "core/fw/driver.hpp"
#include "core/net/ip.hpp"

namespace cni::vpc {

inline constexpr std::uint32_t kOutboundMark = 0x80;

struct SnatSpec {
    std::vector<IpNet> vpc_cidrs;
    IpAddr primary_ip;
    std::string veth_prefix;  // the pod veths are "<prefix>+"
};

// The kinds of SNAT rules by driver.
const fw::Drivers<SnatSpec>& snat();

}  // namespace cni::vpc
