// SPDX-License-Identifier: Apache-2.0
// Interface addresses (rtnetlink RTM_*ADDR) as plain values, in the kernel's dump order. New
// IPv4 addresses get a broadcast address (prefix < 31) like Go netlink's AddrAdd, so kernel
// state matches the reference's.
#pragma once

#include <sys/socket.h>

#include <vector>

#include "core/net/ip.hpp"
#include "core/nl/socket.hpp"

namespace cni::nl {

struct AddrInfo {
    net::IpNet local;         // address with its prefix length
    int scope = 0;
    unsigned flags = 0;  // IFA_F_*
};

// Addresses on link `ifindex` of `family` (AF_INET, AF_INET6, or AF_UNSPEC for both).
Result<std::vector<AddrInfo>> list_addrs(const Socket& s, int ifindex, int family = AF_UNSPEC);
// `replace`: an address already there is updated instead of failing with EEXIST.
Status add_addr(const Socket& s, int ifindex, const std::string& ifname, const net::IpNet& addr, unsigned flags = 0,
                bool replace = false);
Result<bool> del_addr(const Socket& s, int ifindex, const std::string& ifname, const net::IpNet& addr);

}  // namespace cni::nl
