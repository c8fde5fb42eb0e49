// SPDX-License-Identifier: Apache-2.0
// The call log's settings: the node's file, and a network's logLevel over it (see settings.hpp).
#include "core/log/settings.hpp"

#include <algorithm>
#include <optional>

#include "core/cni/json.hpp"
#include "core/os/fs.hpp"
#include "core/strings.hpp"

namespace cni::log {
namespace {

std::optional<Level> level_named(std::string_view s) {
    if (s == "off" || s == "none") return Level::off;
    if (s == "error") return Level::error;
    if (s == "info" || s == "verbose") return Level::info;
    if (s == "debug") return Level::debug;
    return std::nullopt;
}

std::string_view text_of(const json::Value& v) { return {v.GetString(), v.GetStringLength()}; }

// The level `key` of `obj` names; a value of the wrong type or an unknown level is none (logging
// never fails a call).
std::optional<Level> level_at(const json::Value& obj, const char* key) {
    if (const json::Value* v = json::find_exact(obj, key); v && v->IsString()) return level_named(text_of(*v));
    return std::nullopt;
}

// networkLogLevels: {"min": level, "max": level}; a min above the max is the max.
void apply_network_bounds(const json::Value& obj, Settings& s) {
    const json::Value* v = json::find_exact(obj, "networkLogLevels");
    if (!v || !v->IsObject()) return;
    s.network_min = level_at(*v, "min").value_or(s.network_min);
    s.network_max = level_at(*v, "max").value_or(s.network_max);
    s.network_min = std::min(s.network_min, s.network_max);
}

// logFile: "syslog", or an absolute path, which names the folder (opened as the node's own, see
// core/log/log_file.hpp) and the file's name in it.
void apply_target(std::string_view file, Settings& s) {
    if (file == "syslog") {
        s.syslog = true;
        return;
    }
    std::string_view name = file.substr(file.find_last_of('/') + 1);  // all of it without a slash
    const char* why = file.starts_with("syslog:") ? "syslog goes to /dev/log only"
                      : !file.starts_with('/')     ? "not an absolute path"
                      : name.empty() || name == "." || name == ".." ? "names no file"
                                                                    : nullptr;
    if (why) {
        s.problem = "logFile " + std::string(file) + ": " + why;
        return;
    }
    s.folder = file.size() == name.size() + 1 ? "/" : std::string(file.substr(0, file.size() - name.size() - 1));
    s.name = name;
}

void apply_node(const json::Value& obj, Settings& s) {
    s.level = level_at(obj, "logLevel").value_or(s.level);
    apply_network_bounds(obj, s);
    if (const json::Value* v = json::find_exact(obj, "logFile"); v && v->IsString()) apply_target(text_of(*v), s);
    if (const json::Value* v = json::find_exact(obj, "logMaxSize"); v && v->IsInt64())
        s.max_bytes = std::clamp(v->GetInt64(), kMinFileBytes, kMaxFileBytes);
    if (const json::Value* v = json::find_exact(obj, "logKeep"); v && v->IsInt64())
        s.keep = int(std::clamp(v->GetInt64(), std::int64_t(0), std::int64_t(kMaxKeep)));
}

}  // namespace

std::string_view name_of(Level l) {
    switch (l) {
    case Level::error: return "error";
    case Level::info: return "info";
    case Level::debug: return "debug";
    default: return "off";
    }
}

Settings node_settings(std::span<const std::string> environ) {
    Settings s;
    std::string path = env_value(environ, "CNI_ALL_LOG_CONFIG");
    if (path.empty()) path = kNodeSettings;
    auto text = os::read_trusted_file(path, 64 * 1024);
    if (!text) s.problem = text.error().msg;
    if (!text || !*text) return s;
    auto doc = json::parse(**text);
    if (doc && doc->IsObject()) apply_node(*doc, s);
    else s.problem = path + ": not a JSON object";
    return s;
}

CallSettings call_settings(std::span<const std::string> environ, std::string_view config) {
    CallSettings out{node_settings(environ), {}, {}};
    // Most configs say nothing about logging: they are not parsed a second time for it.
    if (config.find("\"log") == std::string_view::npos && config.find("\"networkLogLevels\"") == std::string_view::npos) return out;
    auto doc = json::parse(config);
    if (!doc || !doc->IsObject()) return out;
    if (auto asked = level_at(*doc, "logLevel")) {
        Settings& s = out.settings;
        s.level = std::clamp(*asked, s.network_min, s.network_max);
        if (s.level != *asked)
            out.held = "the network's logLevel \"" + std::string(text_of(*json::find_exact(*doc, "logLevel"))) + "\" is held to \"" +
                       std::string(name_of(s.level)) + "\", the " + (s.level < *asked ? "highest" : "lowest") +
                       " the node's networkLogLevels allow (docs/logging.md)";
    }
    for (const char* key : {"logFile", "logMaxSize", "logKeep", "networkLogLevels"})
        if (json::find_exact(*doc, key)) out.ignored.emplace_back(key);
    return out;
}

}  // namespace cni::log
