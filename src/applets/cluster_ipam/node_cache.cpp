// SPDX-License-Identifier: Apache-2.0
// The node's block cache file (node_cache.hpp): JSON {key: [mod_revision, value]}, named by a
// hash of the store and the node so two stores or node names never share one.
#include "applets/cluster_ipam/node_cache.hpp"

#include "core/cni/json.hpp"

namespace cni::cluster_ipam {
namespace {

std::string fnv64_hex(const std::string& s) {
    std::uint64_t h = 14695981039346656037ull;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    char buf[17];
    for (int i = 15; i >= 0; --i, h >>= 4) buf[i] = "0123456789abcdef"[h & 15];
    buf[16] = 0;
    return buf;
}

}  // namespace

NodeCache::NodeCache(os::Dir dir, const std::string& store_id, const std::string& node)
    : dir_(std::move(dir)), file_("blocks-" + fnv64_hex(store_id + '\0' + node) + ".json") {}

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
    const json::Value& root = *d;
    for (const auto& m : root.GetObject()) {
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
    for (const auto& [key, kv] : blocks) {
        json::Value e(rapidjson::kArrayType);
        e.PushBack(json::Value(kv.mod_revision), a);
        e.PushBack(json::str(kv.value, a), a);
        json::set(d, key, std::move(e), a);
    }
    (void)dir_.write_atomic(file_, json::write(d, json::Style::compact, false), 0600);
}

}  // namespace cni::cluster_ipam
