// SPDX-License-Identifier: Apache-2.0
// A gratuitous ARP (an ARP request for our own IPv4 address, broadcast) so neighbours update a
// changed MAC at once, as the reference's arping call does after tuning changes a MAC. Sent
// from the calling thread's network namespace; best effort, as in the reference.
#pragma once

#include <string>

#include "core/net/ip.hpp"
#include "core/result.hpp"

namespace cni::tuning {

Status send_gratuitous_arp(int ifindex, const std::string& mac, const net::IpAddr& ip);

}  // namespace cni::tuning
