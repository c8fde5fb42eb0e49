// SPDX-License-Identifier: Apache-2.0
// How cluster-ipam lays its state out in the store (docs/cluster-ipam.md, Data layout): a pool
// per range subnet, cut into blocks of blockSize; a block's key holds its node and its
// allocations (ordinal -> handle), a handle's key (node, network, container ID, interface) holds
// the addresses it was given and which network config made it. The key names, the JSON of each value, and a range set's geometry:
// which blocks its ranges touch and which ordinals of a block it may hand out.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/cni/cni_result.hpp"
#include "core/ipam/range.hpp"
#include "core/net/ip.hpp"
#include "core/result.hpp"

namespace cni::cluster_ipam {

// A block's value: the node that claimed it, its allocations by ordinal (offset from the block's
// first address), the last ordinal handed out (the next search starts after it) and when its
// node last wrote it (unix seconds; another node's borrow or release leaves it, so that it says
// whether the node is alive and when the block, emptied, goes back to the pool).
struct Block {
    std::string node;
    std::map<std::uint32_t, std::string> allocations;
    std::int64_t last = -1;
    std::int64_t last_write = 0;
};
std::string encode(const Block& b);
Result<Block> decode_block(const std::string& text);

// One address a handle holds: where it sits (block key, ordinal) and what the result says.
struct Held {
    std::string block;  // the block's full key
    std::uint32_t ordinal = 0;
    IpConfig ip;
};
struct Handle {
    std::string node;
    std::vector<Held> addresses;
    std::string config;  // the network digest of the config whose ADD made it (network_digest)
};
std::string encode(const Handle& h);
Result<Handle> decode_handle(const std::string& text);

// A handle's name ("node/network/containerID/ifname"), each piece with '%' and '/' escaped: the
// node is part of it, so the same container ID on two nodes makes two handles (docs/cluster-ipam.md,
// Data layout).
std::string handle_id(std::string_view node, std::string_view network, std::string_view container_id, std::string_view ifname);
std::string escape(std::string_view component);
// The start of the names of one node's handles of one network: "node/network/".
std::string handles_of(std::string_view node, std::string_view network);

// Which network config made a handle, among networks of one name: 32 hex digits of the SHA-512
// of network_identity (core/cni/netconf.hpp), as dhcp's leases keep it.
std::string network_digest(const std::string& config_text);

// Key names under the configured prefix.
struct Keys {
    std::string prefix;
    std::string pools() const { return prefix + "pools/"; }
    std::string pool(const std::string& pool_id) const { return pools() + pool_id + "/"; }
    std::string meta(const std::string& pool_id) const { return pool(pool_id) + "meta"; }
    std::string blocks(const std::string& pool_id) const { return pool(pool_id) + "blocks/"; }
    std::string handles() const { return prefix + "handles/"; }
    std::string node_handles(std::string_view node) const { return handles() + escape(node) + "/"; }
    std::string handle(const std::string& id) const { return handles() + id; }
};

// One pool: a range subnet cut into blocks, and the ranges of a range set inside it.
struct PoolGeometry {
    std::string id;          // "10.1.0.0-16": the subnet, '/' as '-'
    net::IpNet subnet;       // masked
    int block_prefix = 26;
    net::U128 first_block = 0, last_block = 0;  // the block indexes the ranges touch
    std::vector<ipam::Range> ranges;            // canonical, of one set, in this subnet
    std::vector<net::IpNet> exclude;

    std::uint32_t block_size() const { return std::uint32_t(1) << (subnet.mask_bits - block_prefix); }
    net::IpAddr address(net::U128 block, std::uint32_t ordinal) const;
    std::string block_id(net::U128 block) const;  // "10.1.0.64-26"
    std::optional<net::U128> parse_block_id(std::string_view id) const;
    // May this set hand out this ordinal of the block (in a range, no gateway, not excluded)?
    bool usable(net::U128 block, std::uint32_t ordinal) const;
    std::string meta() const;  // the pool's meta value: its block size
};

// Every pool of a range set (its ranges grouped by subnet), with the block prefix for its family
// checked against each subnet: errors name the key, the value and the range.
Result<std::vector<PoolGeometry>> geometry(const ipam::RangeSet& set, int block_v4, int block_v6,
                                           const std::vector<net::IpNet>& exclude);

// The largest block cluster-ipam accepts: 2^12 addresses (a block's value lists its allocations).
inline constexpr int kMaxBlockBits = 12;

}  // namespace cni::cluster_ipam
