// SPDX-License-Identifier: Apache-2.0
// The key-value store cluster-ipam keeps its blocks and handles in (docs/cluster-ipam.md): the
// part of etcd's v3 KV API it uses, as an interface, so the allocator is written and unit-tested
// against an in-memory store and runs against etcd (etcd_client.*) unchanged. Keys and values
// are bytes; revisions are etcd's (a key's mod_revision changes on every write of it, and is 0
// for a key that does not exist), so a compare-and-swap is a txn comparing mod_revision.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace cni::cluster_ipam {

struct KeyValue {
    std::string key;
    std::string value;
    std::int64_t create_revision = 0;
    std::int64_t mod_revision = 0;
    std::int64_t lease = 0;
};

// One comparison of a txn: the key's mod_revision (or its value) equal to the one given. A
// mod_revision of 0 asks that the key does not exist.
struct Compare {
    enum class Target { mod_revision, value };
    std::string key;
    Target target = Target::mod_revision;
    std::int64_t mod_revision = 0;
    std::string value;
};

// One operation of a txn: a put (with an optional lease), a delete of one key, or a range read
// of [key, range_end) (range_end empty: the key alone).
struct Op {
    enum class Kind { put, del, range };
    Kind kind = Kind::put;
    std::string key;
    std::string value;      // put
    std::string range_end;  // range
    std::int64_t lease = 0; // put
};

struct TxnResult {
    bool succeeded = false;
    std::int64_t revision = 0;                   // the store's revision after the txn
    std::vector<std::vector<KeyValue>> ranges;   // one per range Op of the branch that ran
};

// Every call fails with code::try_again_later, naming the endpoints, when the store cannot be
// reached in time, so the runtime retries the CNI call.
class Kv {
public:
    virtual ~Kv() = default;
    // The keys in [key, range_end) (range_end empty: the key alone), at most `limit` (0: all),
    // in key order.
    virtual Result<std::vector<KeyValue>> range(const std::string& key, const std::string& range_end,
                                                std::int64_t limit = 0) = 0;
    // If every compare holds, the success ops, else the failure ops, atomically.
    virtual Result<TxnResult> txn(const std::vector<Compare>& compares, const std::vector<Op>& success,
                                  const std::vector<Op>& failure) = 0;
    // How many round trips to the store this object has made (the bench counts them per call).
    virtual std::uint64_t round_trips() const = 0;
    // The TLS handshakes this object has made: full ones and resumed ones (none without TLS).
    struct Handshakes {
        std::uint64_t full = 0, resumed = 0;
    };
    virtual Handshakes handshakes() const { return {}; }
};

// The range_end that makes [prefix, range_end) every key starting with prefix (etcd's rule: the
// prefix with its last byte below 0xff incremented, the rest dropped; "\0" for an all-0xff one).
std::string prefix_end(const std::string& prefix);

}  // namespace cni::cluster_ipam
