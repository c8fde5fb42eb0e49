// SPDX-License-Identifier: Apache-2.0
// ipMasq's nftables backend (docs/compatibility.md: ipMasq), object for object as the reference's:
// table `inet cni_plugins_masquerade`, its regular chain `masq_checks` and the base chain
// `postrouting` (nat, postrouting, srcnat), refilled on every ADD with the multicast returns
// and `goto masq_checks`; per address `ip saddr == IP ip daddr != NET masquerade` commented
// "<H(net)[:16]>-<H(ifname:id)[:16]>, net: N, if: I, id: C". The hash prefix is how DEL, CHECK
// and GC find an attachment's rules, so either implementation removes the other's.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/cni/netconf.hpp"
#include "core/net/ip.hpp"
#include "core/result.hpp"

namespace cni::fw {

struct MasqOwner {
    std::string_view network, container_id, ifname;
};

namespace nft_masq {

Status setup(const std::vector<IpNet>& ips, const MasqOwner& owner);
Status teardown(const MasqOwner& owner);  // nothing there (or no nf_tables) is fine
Status check(const std::vector<IpNet>& ips, const MasqOwner& owner);
Status gc(std::string_view network, const std::vector<Attachment>& keep);

// The rule comment, exported for the tests.
std::string comment_for(const MasqOwner& owner);

}  // namespace nft_masq
}  // namespace cni::fw
