// SPDX-License-Identifier: Apache-2.0
// ipMasq for bridge and ptp (docs/compatibility.md: ipMasq) in its two drivers, through the one
// firewall interface (driver.hpp). iptables (ipmasq_iptables.cpp): a nat chain
// CNI-<hash(network+containerID)> holding "-d <net> -j ACCEPT" and "! -d <multicast> -j
// MASQUERADE", and a POSTROUTING jump "-s <ip> -j CNI-..."; every rule commented
// `name: "<net>" id: "<id>"`; one lock, one commit per family per call. nftables
// (ipmasq_nft.cpp), object for object as the reference's: table `inet cni_plugins_masquerade`,
// its regular chain `masq_checks` and the base chain `postrouting` (nat, postrouting, srcnat),
// refilled on every ADD with the multicast returns and `goto masq_checks`; per address `ip saddr
// == IP ip daddr != NET masquerade` commented "<H(net)[:16]>-<H(ifname:id)[:16]>, net: N, if: I,
// id: C". Teardown needs only the attachment's identity (the chain name, the hash prefix), so a
// DEL whose link or addresses are already gone still removes the rules (the reference leaks the
// iptables ones then), and either implementation removes the other's.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/fw/driver.hpp"
#include "core/net/ip.hpp"
#include "core/result.hpp"

namespace cni::fw {

// What ipMasq sets up for an attachment; teardown reads only the first three.
struct Masquerade {
    std::string network, container_id, ifname;
    std::vector<net::IpNet> ips;
};

// "", "iptables" or "nftables"; anything else is the reference's "unknown ipmasq backend".
Status validate_ipmasq_backend(std::string_view backend);

const Rules<Masquerade>& iptables_masquerade();  // ipmasq_iptables.cpp
const Rules<Masquerade>& nftables_masquerade();  // ipmasq_nft.cpp

// ipMasq in both drivers, offered once: ADD and CHECK use
// masquerade().choose(driver_named(ipMasqBackend)); DEL and GC go through every driver
// (teardown_all, gc_all). iptables' CHECK passes when either iptables variant holds the rules
// (check_either_variant); GC finds an attachment's rules through the iptables chains' comments
// in both variants and the nft rules' hashes, so rules written by the reference count too.
inline const Drivers<Masquerade>& masquerade() {
    static const Drivers<Masquerade> drivers{{Driver::iptables, &iptables_masquerade()},
                                             {Driver::nftables, &nftables_masquerade()}};
    return drivers;
}

// The nft rule comment, exported for the tests.
std::string nft_masq_comment(const Masquerade& owner);

}  // namespace cni::fw
