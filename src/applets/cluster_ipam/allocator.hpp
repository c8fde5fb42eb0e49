// SPDX-License-Identifier: Apache-2.0
// cluster-ipam's allocation over a Kv (docs/cluster-ipam.md): per-node blocks claimed by a txn
// that creates the block key only when absent, addresses taken in them by compare-and-swap on
// the block's mod_revision with the handle written in the same txn, borrowing from other nodes'
// blocks when no block is free, and release, GC, STATUS and the operator's show and release
// over the same keys. Every write is one txn, so no call leaves half of a change behind.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "applets/cluster_ipam/kv.hpp"
#include "applets/cluster_ipam/layout.hpp"
#include "applets/cluster_ipam/node_cache.hpp"
#include "core/net/attachment.hpp"

namespace cni::cluster_ipam {

// One range set of a config: its pools, and its name for errors ("start-end,...").
struct SetPlan {
    std::string name;
    std::vector<PoolGeometry> pools;
};

// What one call works with: the store, its keys, this node, the time, the grace period of an
// empty block (seconds), the node's cache (null: none) and the network digest of the call's
// config (network_digest), which the handles it makes keep.
struct Call {
    Kv& kv;
    Keys keys;
    std::string node;
    std::int64_t now = 0;
    std::int64_t grace = 300;
    const NodeCache* cache = nullptr;
    std::string config;
};

// One address from each set for the handle, or the ones it already holds.
Result<std::vector<IpConfig>> allocate(const Call& c, const std::vector<SetPlan>& sets, const std::string& handle);
// Releases what the handle holds; nothing held is success.
Status release(const Call& c, const std::string& handle);
// The handle's addresses, when it holds any.
Result<std::optional<Handle>> lookup(const Call& c, const std::string& handle);
// What a GC did: the handles it released, and those of this node and network it left because
// another network config of the same name made them (docs/cluster-ipam.md, Networks of one name).
struct Collected {
    int released = 0;
    int others = 0;
};
// GC of one network on this node: its handles of attachments not in `valid` that this config
// made (its digest, every address in its ranges), its allocations in this node's blocks without
// a handle, and this node's blocks empty for the grace period.
Result<Collected> collect(const Call& c, const std::string& network, const std::vector<SetPlan>& sets,
                          const std::vector<net::Attachment>& valid);
// STATUS: an error (code 50) naming the first set with no address left to hand out.
Status check_free(const Call& c, const std::vector<SetPlan>& sets);

// The operator's view: every pool, its blocks per node, used and unallocated addresses.
Result<std::string> show(const Call& c);
// Releases everything `node` holds (its handles, then its empty blocks); refuses a node that
// wrote within the grace period unless `force`. Returns a line saying what went.
Result<std::string> release_node(const Call& c, const std::string& node, bool force);

}  // namespace cni::cluster_ipam
