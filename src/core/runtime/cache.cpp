// SPDX-License-Identifier: Apache-2.0
// libcni's cniCacheV1 files (see cache.hpp).
#include "core/runtime/cache.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>

#include "core/cni/json.hpp"
#include "core/os/fs.hpp"

namespace cni::runtime {
namespace {

constexpr std::string_view kKind = "cniCacheV1";
constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string string_of(const json::Value& obj, std::string_view key) {
    const json::Value* v = json::find_exact(obj, key);
    return v && v->IsString() ? std::string(v->GetString(), v->GetStringLength()) : std::string();
}

}  // namespace

std::string base64_encode(std::string_view in) {
    std::string out;
    std::size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
        unsigned v = unsigned(std::uint8_t(in[i])) << 16 | unsigned(std::uint8_t(in[i + 1])) << 8 | std::uint8_t(in[i + 2]);
        for (int k = 18; k >= 0; k -= 6) out += kAlphabet[(v >> k) & 63];
    }
    if (std::size_t rest = in.size() - i) {
        unsigned v = unsigned(std::uint8_t(in[i])) << 16 | (rest == 2 ? unsigned(std::uint8_t(in[i + 1])) << 8 : 0u);
        out += kAlphabet[(v >> 18) & 63];
        out += kAlphabet[(v >> 12) & 63];
        out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

std::optional<std::string> base64_decode(std::string_view in) {
    if (in.size() % 4) return std::nullopt;
    std::string out;
    for (std::size_t i = 0; i < in.size(); i += 4) {
        unsigned v = 0;
        int pad = 0;
        for (std::size_t k = 0; k < 4; ++k) {
            char c = in[i + k];
            v <<= 6;
            if (c == '=' && i + 4 == in.size() && k >= 2) {
                ++pad;
                continue;
            }
            const char* p = std::find(kAlphabet, kAlphabet + 64, c);
            if (p == kAlphabet + 64 || pad) return std::nullopt;
            v |= unsigned(p - kAlphabet);
        }
        out += char(v >> 16);
        if (pad < 2) out += char((v >> 8) & 255);
        if (pad < 1) out += char(v & 255);
    }
    return out;
}

std::string cache_path(const std::string& cache_dir, const std::string& network, const std::string& container_id,
                       const std::string& ifname) {
    return cache_dir + "/results/" + network + "-" + container_id + "-" + ifname;
}

Status write_cache(const std::string& cache_dir, const CachedAttachment& c) {
    json::Document d(rapidjson::kObjectType);
    auto& a = d.GetAllocator();
    json::set(d, "kind", json::str(kKind, a), a);
    json::set(d, "containerId", json::str(c.container_id, a), a);
    json::set(d, "config", json::str(base64_encode(c.config), a), a);
    json::set(d, "ifName", json::str(c.ifname, a), a);
    json::set(d, "networkName", json::str(c.network, a), a);
    if (!c.netns.empty()) json::set(d, "netns", json::str(c.netns, a), a);
    if (!c.cni_args.empty()) {
        json::Value args(rapidjson::kArrayType);
        for (auto& [k, v] : c.cni_args) {
            json::Value pair(rapidjson::kArrayType);
            pair.PushBack(json::str(k, a), a);
            pair.PushBack(json::str(v, a), a);
            args.PushBack(std::move(pair), a);
        }
        json::set(d, "cniArgs", std::move(args), a);
    }
    for (auto [key, text] : {std::pair{"capabilityArgs", &c.capability_args}, std::pair{"result", &c.result}}) {
        if (text->empty()) continue;
        CNI_TRY_ASSIGN(auto v, json::parse(*text));
        if (v.IsObject() && v.MemberCount() > 0) json::set(d, key, json::copy(v, a), a);
    }
    std::string path = cache_path(cache_dir, c.network, c.container_id, c.ifname);
    CNI_TRY(os::mkdir_all(cache_dir + "/results", 0700));
    return os::write_file_atomic(path, json::write(d, json::Style::compact, false), 0600);
}

Result<std::optional<CachedAttachment>> read_cache(const std::string& path) {
    CNI_TRY_ASSIGN(auto text, os::read_state_file(path));
    if (!text) return std::optional<CachedAttachment>{};
    auto d = json::parse(*text);
    if (!d || !d->IsObject()) return fail(code::decoding_failure, "failed to unmarshal cached network \"" + path + "\" config");
    if (string_of(*d, "kind") != kKind) return fail(code::decoding_failure, "read cached network \"" + path + "\" config has wrong kind");
    CachedAttachment c;
    c.container_id = string_of(*d, "containerId");
    c.ifname = string_of(*d, "ifName");
    c.network = string_of(*d, "networkName");
    c.netns = string_of(*d, "netns");
    auto config = base64_decode(string_of(*d, "config"));
    if (!config) return fail(code::decoding_failure, "cached network \"" + path + "\" has a malformed config");
    c.config = std::move(*config);
    if (const json::Value* args = json::find_exact(*d, "cniArgs"); args && args->IsArray())
        for (const auto& p : args->GetArray())
            if (p.IsArray() && p.Size() == 2 && p[0].IsString() && p[1].IsString())
                c.cni_args.emplace_back(p[0].GetString(), p[1].GetString());
    if (const json::Value* caps = json::find_exact(*d, "capabilityArgs"); caps && caps->IsObject())
        c.capability_args = json::write(*caps, json::Style::compact, false);
    if (const json::Value* r = json::find_exact(*d, "result"); r && r->IsObject()) c.result = json::write(*r, json::Style::compact, false);
    return std::optional<CachedAttachment>(std::move(c));
}

void remove_cache(const std::string& cache_dir, const std::string& network, const std::string& container_id,
                  const std::string& ifname) {
    ::unlink(cache_path(cache_dir, network, container_id, ifname).c_str());
}

std::vector<CachedAttachment> cached_attachments(const std::string& cache_dir, const std::string& network) {
    std::vector<CachedAttachment> out;
    std::string dir = cache_dir + "/results";
    DIR* d = ::opendir(dir.c_str());
    if (!d) return out;
    while (dirent* e = ::readdir(d)) {
        std::string name = e->d_name;
        if (!name.starts_with(network + "-")) continue;
        auto c = read_cache(dir + "/" + name);
        if (c && *c && (*c)->network == network) out.push_back(std::move(**c));
    }
    ::closedir(d);
    return out;
}

}  // namespace cni::runtime
