// SPDX-License-Identifier: Apache-2.0
// vpc-eni-ipam's configuration and reservations (docs/vpc-eni.md). Its ipam keys (nodeFile,
// dataDir); the pool whose verbs it runs in-process: the node file's secondary addresses as one
// range set, each in its ENI's subnet with the VPC router as gateway, after the request's own
// (runtimeConfig ipRanges, requested addresses); and the addresses it holds for a container's
// interface, read from host-local's store under dataDir, which is all vpc-eni's DEL acts on.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "applets/vpc_eni/node_file.hpp"
#include "core/cni/config_keys.hpp"
#include "core/ipam/pool.hpp"

namespace cni::vpc_eni {

struct EniIpamConf {
    std::string node_file;
    std::string data_dir;
};

inline constexpr std::array kEniIpamKeys{
    key<&EniIpamConf::node_file>("nodeFile", "the vpc-eni node file whose ENIs' secondaryIps are handed out; root's own, under /etc/cni/"),
    key<&EniIpamConf::data_dir>("dataDir", "where reservations are kept (host-local's files), per network; default /var/lib/cni/networks"),
};

// The node file's secondary addresses as one range set, each address a range of its own in its
// ENI's subnet, the VPC router its gateway, in the file's order: canonical as built, and with no
// two ranges overlapping (the node file's loader refuses an address listed twice).
ipam::RangeSet node_range_set(const NodeFile& node);

// The request's pool (core/ipam/pool.hpp): with the node file's addresses when `with_node` (ADD,
// CHECK, STATUS), else only what its store needs (DEL and GC work without the node file).
Result<ipam::Pool> pool_for(const Request& req, bool with_node);

// The addresses vpc-eni-ipam holds for the request's container and interface (an empty list when
// it holds none), each owner read again from its file.
Result<std::vector<net::IpAddr>> reserved_for(const Context& ctx);
// Every address it holds, for any container, sorted.
Result<std::vector<net::IpAddr>> reserved_addresses(const Context& ctx);

}  // namespace cni::vpc_eni
