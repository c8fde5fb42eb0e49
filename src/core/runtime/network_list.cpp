// SPDX-License-Identifier: Apache-2.0
// Loading conflists and single configs by network name (see network_list.hpp).
#include "core/runtime/network_list.hpp"

#include <dirent.h>

#include <algorithm>

#include "core/cni/json.hpp"
#include "core/os/fs.hpp"
#include "core/strings.hpp"

namespace cni::runtime {
namespace {

// libcni accepts a boolean or the strings "true"/"false" for disableCheck/disableGC.
Result<bool> flag(const json::Value& list, std::string_view key) {
    const json::Value* v = json::find_exact(list, key);
    if (!v || v->IsNull()) return false;
    if (v->IsBool()) return v->GetBool();
    if (v->IsString()) {
        std::string_view s(v->GetString(), v->GetStringLength());
        if (s == "true") return true;
        if (s == "false") return false;
    }
    return fail(code::invalid_config, "error parsing configuration list: invalid " + std::string(key) + " value");
}

Result<std::string> plugin_type(const json::Value& plugin) {
    const json::Value* t = json::find(plugin, "type");
    if (!t || !t->IsString() || t->GetStringLength() == 0) return fail(code::invalid_config, "error parsing configuration: missing 'type'");
    return std::string(t->GetString(), t->GetStringLength());
}

std::vector<std::string> files_with(const std::string& dir, std::initializer_list<std::string_view> exts) {
    std::vector<std::string> out;
    DIR* d = ::opendir(dir.c_str());
    if (!d) return out;
    while (dirent* e = ::readdir(d)) {
        std::string name = e->d_name;
        if (e->d_type == DT_DIR) continue;
        for (auto ext : exts)
            if (name.size() > ext.size() && name.ends_with(ext)) out.push_back(dir + "/" + name);
    }
    ::closedir(d);
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

Result<NetworkList> parse_conflist(std::string_view bytes) {
    auto doc = json::parse(bytes);
    if (!doc) return fail(code::decoding_failure, "error parsing configuration list: " + doc.error().msg);
    if (!doc->IsObject()) return fail(code::decoding_failure, "error parsing configuration list: not a JSON object");
    NetworkList l;
    l.bytes = bytes;
    const json::Value* name = json::find_exact(*doc, "name");
    if (!name || !name->IsString() || name->GetStringLength() == 0) return fail(code::invalid_config, "error parsing configuration list: no name");
    l.name.assign(name->GetString(), name->GetStringLength());
    if (const json::Value* v = json::find_exact(*doc, "cniVersion"); v && v->IsString()) l.cni_version.assign(v->GetString(), v->GetStringLength());
    CNI_TRY_ASSIGN(l.disable_check, flag(*doc, "disableCheck"));
    CNI_TRY_ASSIGN(l.disable_gc, flag(*doc, "disableGC"));
    const json::Value* plugins = json::find_exact(*doc, "plugins");
    if (!plugins) return fail(code::invalid_config, "error parsing configuration list: no 'plugins' key");
    if (!plugins->IsArray()) return fail(code::invalid_config, "error parsing configuration list: invalid 'plugins' type " + std::string(json::kind(*plugins)));
    if (plugins->Empty()) return fail(code::invalid_config, "error parsing configuration list: no plugins in list");
    for (const auto& p : plugins->GetArray()) {
        if (!p.IsObject()) return fail(code::invalid_config, "failed to parse plugin config: not a JSON object");
        CNI_TRY_ASSIGN(auto type, plugin_type(p));
        std::string description = "type=" + go_quote(type);
        if (const json::Value* n = json::find_exact(p, "name"); n && n->IsString() && n->GetStringLength() > 0)
            description += " name=" + go_quote(std::string_view(n->GetString(), n->GetStringLength()));
        l.descriptions.push_back(std::move(description));
        l.types.push_back(std::move(type));
        // libcni hands each plugin json.Marshal of its interface{} value: numbers through
        // float64 (a "mtu": 1500.0 reaches the plugin as 1500), keys sorted, last duplicate kept.
        l.plugins.push_back(json::write(json::go_interface_round_trip(p, doc->GetAllocator()), json::Style::compact, false));
    }
    return l;
}

Result<NetworkList> conflist_from_conf(std::string_view bytes) {
    auto doc = json::parse(bytes);
    if (!doc) return fail(code::decoding_failure, "error parsing configuration: " + doc.error().msg);
    if (!doc->IsObject()) return fail(code::decoding_failure, "error parsing configuration: not a JSON object");
    CNI_TRY(plugin_type(*doc));
    json::Document list(rapidjson::kObjectType);
    auto& a = list.GetAllocator();
    for (std::string_view key : {"cniVersion", "name"})
        if (const json::Value* v = json::find_exact(*doc, key)) json::set(list, key, json::copy(*v, a), a);
    json::Value plugins(rapidjson::kArrayType);
    plugins.PushBack(json::copy(*doc, a), a);
    json::set(list, "plugins", std::move(plugins), a);
    return parse_conflist(json::write(list, json::Style::compact, false));
}

Result<NetworkList> load_network(const std::string& dir, const std::string& name) {
    for (const auto& path : files_with(dir, {".conflist"})) {
        CNI_TRY_ASSIGN(auto text, os::read_file(path));
        auto l = parse_conflist(text);
        if (!l) return cni::Unexpected(l.error().context(path));
        if (l->name == name) return l;
    }
    for (const auto& path : files_with(dir, {".conf", ".json"})) {
        CNI_TRY_ASSIGN(auto text, os::read_file(path));
        auto doc = json::parse(text);
        if (!doc || !doc->IsObject()) return fail(code::decoding_failure, path + ": error parsing configuration");
        const json::Value* n = json::find_exact(*doc, "name");
        if (n && n->IsString() && std::string_view(n->GetString(), n->GetStringLength()) == name) {
            auto l = conflist_from_conf(text);
            if (!l) return cni::Unexpected(l.error().context(path));
            return l;
        }
    }
    return fail(code::invalid_config, "no net configuration with name \"" + name + "\" in " + dir);
}

}  // namespace cni::runtime
