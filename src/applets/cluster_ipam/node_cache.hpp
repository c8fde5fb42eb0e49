// SPDX-License-Identifier: Apache-2.0
// What this node last knew of its own blocks (docs/cluster-ipam.md, Round trips): each block
// key with its value and mod_revision, in one file the node's calls rewrite whole (O_EXCL
// temporary, rename) after each write they make. It is only a guess: an ADD compares each
// block's cached mod_revision in its one txn, and a stale entry only makes that txn fail and
// return the block's current value. Only root writes the folder (no config key chooses it), but
// a tenant's config chooses the store, so the file is named by a SHA-512 of the store and node
// and holds them whole: a file of another store is never read as this one's.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "applets/cluster_ipam/kv.hpp"
#include "core/os/fs.hpp"

namespace cni::cluster_ipam {

inline constexpr const char* kCacheDir = "/var/lib/cni/cluster-ipam";
// Where etcd's client keeps its TLS sessions (open_store.cpp): each file holds a session's
// master secret, so they live on tmpfs, out of backups and node images, gone at reboot.
inline constexpr const char* kTlsTicketDir = "/run/cni/cluster-ipam-tls";

class NodeCache {
public:
    // The cache of one store (its endpoints and prefix, as text) and node, in `dir`.
    NodeCache(os::Dir dir, const std::string& store_id, const std::string& node);
    // In kCacheDir (made 0700 when missing): nothing when it cannot be opened safely.
    static std::optional<NodeCache> open_default(const std::string& store_id, const std::string& node);

    // Empty when missing, unreadable, or of another store or node; the caller checks each entry.
    std::map<std::string, KeyValue> load() const;
    void save(const std::map<std::string, KeyValue>& blocks) const;  // best effort

private:
    os::Dir dir_;
    std::string store_id_, node_, file_;
};

}  // namespace cni::cluster_ipam
