// SPDX-License-Identifier: Apache-2.0
// The flannel CNI plugin's logic without I/O (docs/compatibility.md: flannel): reading flanneld's
// subnet.env and turning the flannel config into the delegate's config (bridge + host-local by
// default) exactly as flannel-io/cni-plugin does: name and cniVersion from the flannel config,
// ipMasq = !FLANNEL_IPMASQ and mtu = FLANNEL_MTU unless the delegate sets them, isGateway for a
// bridge, IPAM ranges from the node's subnets and routes to the whole flannel networks, and
// runtimeConfig passed through.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/cni/json.hpp"
#include "core/net/ip.hpp"
#include "core/result.hpp"

namespace cni::flannel {

struct SubnetEnv {
    std::vector<net::IpNet> networks, ipv6_networks;  // FLANNEL_NETWORK, FLANNEL_IPV6_NETWORK (network addresses)
    std::optional<net::IpNet> subnet, ipv6_subnet;     // FLANNEL_SUBNET, FLANNEL_IPV6_SUBNET (network addresses)
    std::optional<unsigned> mtu;
    std::optional<bool> ipmasq;
};

// `path` names the file in the "is missing ..." error.
Result<SubnetEnv> parse_subnet_env(std::string_view text, std::string_view path);

// The delegate's config, compact JSON with sorted keys (as Go marshals a map), from the flannel
// config document. Errors: a delegate with "name" or "ipam", a non-string delegate type.
Result<std::string> delegate_config(const json::Value& flannel_conf, const SubnetEnv& env);

// The delegate's type from its config ("bridge" when absent).
std::string delegate_type(const json::Value& delegate_conf);

}  // namespace cni::flannel
