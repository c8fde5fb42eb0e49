// SPDX-License-Identifier: Apache-2.0
// How bandwidth shapes one direction on one device (docs/compatibility.md: bandwidth), in the
// netlink terms of core/nl/tc. Without subnet lists, the reference's token bucket filter as the
// root qdisc: rate/8 bytes per second, the burst as the bucket, limit = 25 ms at the rate plus
// the burst. With unshapedSubnets or shapedSubnets, an HTB root instead: class 1:30 shaped (the
// rate, the burst as its buffer), class 1:1 unshaped (100 Gbit/s), each with a pfifo of its own,
// the one for the traffic not listed the default, and u32 filters on the remote address sending
// the listed subnets to the other. Egress is shaped on an IFB device named after the attachment,
// which the host veth's ingress redirects everything to.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/net/ip.hpp"
#include "core/nl/socket.hpp"
#include "core/result.hpp"

namespace cni::bandwidth {

// One direction's limit on one device.
struct Shaping {
    std::uint64_t rate = 0;   // bits per second
    std::uint64_t burst = 0;  // bits
    std::vector<net::IpNet> subnets;  // from unshapedSubnets or shapedSubnets; none: all of it shaped
    bool subnets_shaped = false;      // shapedSubnets (the rest runs free) or unshapedSubnets
    // Match the packet's source address (on the veth: traffic to the container comes from the
    // remote address), else its destination (on the IFB: the container's traffic goes to it).
    bool match_source = false;
};

// Makes the device's root qdisc.
Status shape(const nl::Socket& s, int ifindex, const Shaping& shaping);
// Passes when the root qdisc of the device (`name`) is what shape() makes, comparing a TBF in
// the kernel's terms as the reference does (rate, limit and the bucket in scheduler ticks,
// exactly), an HTB by its default class, shaped rate and filters; the error says what differs.
Status check_shaped(const nl::Socket& s, int ifindex, const std::string& name, const Shaping& shaping);

// The attachment's IFB device: "bwp" and the start of sha512(network + container ID), 15
// characters.
std::string ifb_name(std::string_view network, std::string_view container_id);

}  // namespace cni::bandwidth
