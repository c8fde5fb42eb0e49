// SPDX-License-Identifier: Apache-2.0
// cluster-ipam's configuration (docs/cluster-ipam.md, Configuration): host-local's range sets
// (core/ipam/range.hpp) plus exclude, the block sizes, the node and the etcd section, read from
// a CNI request or from the operator's file, and the store's settings with the client's
// credentials read from where a tenant's config may name them (docs/cluster-ipam.md, Security).
#pragma once

#include <array>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "applets/cluster_ipam/allocator.hpp"
#include "applets/cluster_ipam/store.hpp"
#include "core/applet.hpp"
#include "core/cni/cni_result.hpp"
#include "core/ipam/pool.hpp"

namespace cni::cluster_ipam {

// The etcd section as written.
struct EtcdConf {
    std::vector<std::string> endpoints;
    std::string ca_file, cert_file, key_file;
    std::string prefix = "/cni-all/ipam/";
    std::int64_t dial_timeout_ms = 5000;
};

struct ClusterConf {
    std::vector<ipam::RangeSet> ranges;
    std::vector<std::string> exclude;  // CIDRs, parsed by parse_conf
    std::int64_t block_size = 26;
    std::int64_t block_size_v6 = 122;
    std::string node;
    std::int64_t grace = 300;
    EtcdConf etcd;
    std::vector<Route> routes;
    ipam::Pool pool;           // the network's name, version, range sets (runtimeConfig's first)
    std::vector<SetPlan> sets;  // each range set's pools
    std::string digest;         // network_digest of the config (layout.hpp)
};

Result<ClusterConf> parse_conf(const Request& req);
// The ipam section of cluster-ipam in an operator's file: a conflist, a network config or the
// ipam object alone.
Result<ClusterConf> parse_operator_file(const std::string& text);

// What root chose for every config of this node (docs/cluster-ipam.md, Security): the base every
// etcd.prefix must lie under (/etc/cni/cluster-ipam/prefix, default /cni-all/) and, when
// /etc/cni/cluster-ipam/endpoints exists (one URL a line), the only endpoints a config may name.
struct NodeStore {
    std::string base_prefix = "/cni-all/";
    std::optional<std::vector<std::string>> endpoints;
};
Result<NodeStore> node_store();
// The etcd section within root's choices: code 7 naming the key and value otherwise.
Status check_store(const EtcdConf& e, const NodeStore& n);

// The store's settings, within node_store() and with the credentials read: each file must be a
// regular file under /etc/cni/ that only root may write, in /etc/cni/cluster-ipam/ or readable by
// all; one refusal names the key and path and never what the file holds.
Result<EtcdSettings> etcd_settings(const EtcdConf& e);

// This node's name: /etc/cni/cluster-ipam/node when it exists (root's), else the host name. A
// config's `node` may only restate it.
Result<std::string> node_name(const std::string& configured);

// The keys --help lists: a table of known size, so that the applet's entry is constant-initialised
// (src/early_version.cpp reads the applet table before any initialiser runs).
inline constexpr std::size_t kKeyDocCount = 12;
extern const std::array<KeyDoc, kKeyDocCount> kKeyDocTable;

}  // namespace cni::cluster_ipam
