// SPDX-License-Identifier: Apache-2.0
// The node's block cache file (node_cache.hpp): JSON {"store": S, "node": N, "blocks": {key:
// [mod_revision, value]}}, named by a SHA-512 of the store and the node, so two stores or node
// names never share one, and read only when its store and node are this call's.
#include "applets/cluster_ipam/node_cache.hpp"

#include "core/cni/json.hpp"
#include "core/fw/sha512.hpp"

namespace cni::cluster_ipam {

NodeCache::NodeCache(os::Dir dir, const std::string& store_id, const std::string& node)
    : dir_(std::move(dir)), store_id_(store_id), node_(node),
      file_("blocks-" + fw::sha512_hex(store_id + '\0' + node).substr(0, 64) + ".json") {}

std::optional<NodeCache> NodeCache::open_default(const std::string& store_id, const std::string& node) {
    auto dir = os::Dir::open_trusted(kCacheDir, 0700);
    if (!dir) return std::nullopt;
    return NodeCache(std::move(*dir), store_id, node);
}

std::map<std::string, KeyValue> NodeCache::load() const {
    std::map<std::string, KeyValue> out;
    auto text = dir_.read_if_exists(file_, 1 << 22);
    if (!text || !*text) return out;
    auto d = json::parse(**text);
    if (!d || !d->IsObject()) return out;
    auto text_of = [&](const char* key) {
        const auto* v = json::find_exact(*d, key);
        return v && v->IsString() ? std::string(v->GetString(), v->GetStringLength()) : std::string();
    };
    const auto* blocks = json::find_exact(*d, "blocks");
    if (text_of("store") != store_id_ || text_of("node") != node_ || !blocks || !blocks->IsObject()) return out;
    for (const auto& m : blocks->GetObject()) {
        const auto& v = m.value;
        if (!v.IsArray() || v.Size() != 2 || !v[0].IsInt64() || !v[1].IsString()) return {};
        KeyValue kv{std::string(m.name.GetString(), m.name.GetStringLength()),
                    std::string(v[1].GetString(), v[1].GetStringLength()), 0, v[0].GetInt64(), 0};
        out[kv.key] = std::move(kv);
    }
    return out;
}

void NodeCache::save(const std::map<std::string, KeyValue>& blocks) const {
    json::Document d(rapidjson::kObjectType);
    auto& a = d.GetAllocator();
    json::set(d, "store", json::str(store_id_, a), a);
    json::set(d, "node", json::str(node_, a), a);
    json::Value list(rapidjson::kObjectType);
    for (const auto& [key, kv] : blocks) {
        json::Value e(rapidjson::kArrayType);
        e.PushBack(json::Value(kv.mod_revision), a);
        e.PushBack(json::str(kv.value, a), a);
        json::set(list, key, std::move(e), a);
    }
    json::set(d, "blocks", std::move(list), a);
    (void)dir_.write_atomic(file_, json::write(d, json::Style::compact, false), 0600);
}

}  // namespace cni::cluster_ipam
