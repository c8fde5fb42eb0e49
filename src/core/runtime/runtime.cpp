// SPDX-License-Identifier: Apache-2.0
// libcni's network-list operations (see runtime.hpp).
#include "core/runtime/runtime.hpp"

#include "core/applet.hpp"
#include "core/cni/version.hpp"
#include "core/ipam/delegate.hpp"

namespace cni::runtime {

Result<std::string> list_result_text(const NetworkList& list, const CniResult& r) {
    return encode_result(r, list.cni_version.empty() ? r.cni_version : list.cni_version);
}

namespace {

std::string joined_args(const RuntimeConf& rt) {
    std::string s;
    for (auto& [k, v] : rt.args) s += (s.empty() ? "" : ";") + k + "=" + v;
    return s;
}

// The request a plugin sees: the runtime's environment with the CNI_* variables replaced (Go
// invoke.Args.AsEnv sets all six, empty ones included).
Request request_for(Command cmd, const RuntimeConf& rt, bool attachment) {
    Request r;
    r.command = cmd;
    r.command_text = std::string(command_name(cmd));
    if (attachment) {
        r.container_id = rt.container_id;
        r.netns = rt.netns;
        r.ifname = rt.ifname;
        r.args = joined_args(rt);
    }
    r.path = rt.cni_path;
    for (const auto& kv : rt.environ)
        if (!kv.starts_with("CNI_")) r.environ.push_back(kv);
    for (auto [k, v] : {std::pair<std::string_view, const std::string*>{"CNI_COMMAND", &r.command_text},
                        {"CNI_CONTAINERID", &r.container_id}, {"CNI_NETNS", &r.netns},
                        {"CNI_ARGS", &r.args}, {"CNI_IFNAME", &r.ifname}, {"CNI_PATH", &r.path}})
        r.environ.push_back(std::string(k) + "=" + *v);
    return r;
}

Result<std::optional<CniResult>> run_plugin(const NetworkList& list, std::size_t i, Command cmd, const RuntimeConf& rt,
                                            const std::string& config, const Warn& warn) {
    Request req = request_for(cmd, rt, cmd != Command::gc && cmd != Command::status);
    Context ctx{req, [&](std::string_view line) { warn(line); }, nullptr, {}, rt.in_process};
    return ipam::invoke(ctx, cmd, list.types[i], config);
}

Result<bool> at_least(const NetworkList& list, std::string_view v) { return version_at_least(list.cni_version, v); }

// The cached result converted to the list's version; nullopt without a cache file.
Result<std::optional<CniResult>> cached_result(const NetworkList& list, const RuntimeConf& rt) {
    CNI_TRY_ASSIGN(auto cached, read_cache(cache_path(rt.cache_dir, list.name, rt.container_id, rt.ifname)));
    if (!cached || cached->result.empty()) return std::optional<CniResult>{};
    CNI_TRY_ASSIGN(auto doc, json::parse(cached->result));
    std::string version;
    if (const json::Value* v = json::find_exact(doc, "cniVersion"); v && v->IsString()) version = v->GetString();
    CNI_TRY_ASSIGN(auto r, decode_result(doc, version));
    auto converted = round_trip(r, list.cni_version);
    if (!converted) return fail("failed to convert cached result to config version \"" + list.cni_version + "\": " + converted.error().msg);
    return std::optional<CniResult>(std::move(*converted));
}

// DEL of the first `count` plugins, last first. libcni stops at the first failure; the clean-up
// after a failed ADD (`keep_going`) tries every plugin and reports each failure.
Status del_all(const NetworkList& list, const RuntimeConf& rt, const std::optional<CniResult>& prev, std::size_t count,
               const Warn& warn, bool keep_going = false) {
    for (std::size_t i = count; i-- > 0;) {
        auto config = plugin_config(list, i, rt, prev);
        auto st = config ? run_plugin(list, i, Command::del, rt, *config, warn) : cni::Unexpected(config.error());
        if (st) continue;
        if (!keep_going) return cni::Unexpected(st.error().context("plugin " + list.descriptions[i] + " failed (delete)"));
        warn("cleaning up after the failed ADD: plugin " + list.descriptions[i] + " DEL: " + st.error().msg);
    }
    return {};
}

// Names and versions only (STATUS, GC), plus `extra` members.
Result<std::string> plain_config(const NetworkList& list, std::size_t i, const std::function<void(json::Document&)>& extra) {
    CNI_TRY_ASSIGN(auto doc, json::parse(list.plugins[i]));
    auto& a = doc.GetAllocator();
    doc.RemoveMember("name");
    doc.RemoveMember("cniVersion");
    json::set(doc, "name", json::str(list.name, a), a);
    json::set(doc, "cniVersion", json::str(list.cni_version, a), a);
    if (extra) extra(doc);
    return json::write(doc, json::Style::compact, true);
}

}  // namespace


Result<std::string> plugin_config(const NetworkList& list, std::size_t i, const RuntimeConf& rt, const std::optional<CniResult>& prev) {
    CNI_TRY_ASSIGN(auto caps, rt.capability_args.empty() ? json::parse("{}") : json::parse(rt.capability_args));
    std::optional<json::Document> prev_doc;
    if (prev) {
        CNI_TRY_ASSIGN(auto text, list_result_text(list, *prev));
        CNI_TRY_ASSIGN(prev_doc, json::parse(text));
    }
    return plain_config(list, i, [&](json::Document& doc) {
        auto& a = doc.GetAllocator();
        json::Value rc(rapidjson::kObjectType);
        if (const json::Value* declared = json::find_exact(doc, "capabilities"); declared && declared->IsObject() && caps.IsObject())
            for (const auto& m : declared->GetObject()) {
                if (!m.value.IsBool() || !m.value.GetBool()) continue;
                std::string_view name(m.name.GetString(), m.name.GetStringLength());
                if (const json::Value* v = json::find_exact(caps, name))  // an interface{} in libcni, as CAP_ARGS is
                    json::set(rc, name, json::go_interface_round_trip(*v, a), a);
            }
        if (rc.MemberCount() > 0) {
            doc.RemoveMember("runtimeConfig");
            json::set(doc, "runtimeConfig", std::move(rc), a);
        }
        if (prev_doc) {
            doc.RemoveMember("prevResult");
            json::set(doc, "prevResult", json::copy(*prev_doc, a), a);
        }
    });
}

Result<CniResult> add_network_list(const NetworkList& list, const RuntimeConf& rt, const Warn& warn) {
    // The spec forbids a second ADD of an attachment without a DEL between; the clean-up of its
    // failure would tear the first one down. An unreadable cache entry does not count.
    std::string cached = cache_path(rt.cache_dir, list.name, rt.container_id, rt.ifname);
    if (auto entry = read_cache(cached); entry && *entry)
        return fail("network \"" + list.name + "\" is already attached to container \"" + rt.container_id + "\" as " +
                    rt.ifname + " (" + cached + "): DEL it first");
    std::optional<CniResult> prev;
    for (std::size_t i = 0; i < list.plugins.size(); ++i) {
        auto config = plugin_config(list, i, rt, prev);
        auto r = config ? run_plugin(list, i, Command::add, rt, *config, warn) : cni::Unexpected(config.error());
        if (!r) {
            (void)del_all(list, rt, std::nullopt, i + 1, warn, true);
            return cni::Unexpected(r.error().context("plugin " + list.descriptions[i] + " failed (add)"));
        }
        if (!*r) return fail("plugin " + list.descriptions[i] + " returned no result");
        prev = std::move(**r);
    }
    CNI_TRY_ASSIGN(auto text, list_result_text(list, *prev));
    CachedAttachment c{rt.container_id, rt.ifname, list.name, rt.netns, list.bytes, rt.args, rt.capability_args, text};
    CNI_TRY(write_cache(rt.cache_dir, c));
    return *prev;
}

Status check_network_list(const NetworkList& list, const RuntimeConf& rt, const Warn& warn) {
    CNI_TRY_ASSIGN(bool supported, at_least(list, "0.4.0"));
    if (!supported) return fail("configuration version \"" + list.cni_version + "\" does not support the CHECK command");
    if (list.disable_check) return {};
    auto prev = cached_result(list, rt);
    if (!prev) return fail("failed to get network \"" + list.name + "\" cached result: " + prev.error().msg);
    for (std::size_t i = 0; i < list.plugins.size(); ++i) {
        CNI_TRY_ASSIGN(auto config, plugin_config(list, i, rt, *prev));
        CNI_TRY(run_plugin(list, i, Command::check, rt, config, warn));
    }
    return {};
}

Status del_network_list(const NetworkList& list, const RuntimeConf& rt, const Warn& warn) {
    std::optional<CniResult> prev;
    CNI_TRY_ASSIGN(bool cached, at_least(list, "0.4.0"));
    if (cached) {
        auto r = cached_result(list, rt);
        if (r) prev = std::move(*r);  // an unreadable cache is dropped, as libcni does
    }
    CNI_TRY(del_all(list, rt, prev, list.plugins.size(), warn));
    remove_cache(rt.cache_dir, list.name, rt.container_id, rt.ifname);
    return {};
}

Status gc_network_list(const NetworkList& list, const RuntimeConf& rt, const std::vector<net::Attachment>& valid, const Warn& warn) {
    if (list.disable_gc) return {};
    Failures failures;
    for (auto& c : cached_attachments(rt.cache_dir, list.name)) {
        if (std::find(valid.begin(), valid.end(), net::Attachment{c.container_id, c.ifname}) != valid.end()) continue;
        RuntimeConf stale = rt;
        stale.container_id = c.container_id;
        stale.ifname = c.ifname;
        stale.netns = c.netns;
        stale.args = c.cni_args;
        stale.capability_args = c.capability_args;
        failures.add(del_network_list(list, stale, warn));
    }
    CNI_TRY(failures.status());
    CNI_TRY_ASSIGN(bool supported, at_least(list, "1.1.0"));
    if (!supported) return {};
    for (std::size_t i = 0; i < list.plugins.size(); ++i) {
        CNI_TRY_ASSIGN(auto config, plain_config(list, i, [&](json::Document& doc) {
            auto& a = doc.GetAllocator();
            json::Value arr(rapidjson::kArrayType);
            for (auto& v : valid) {
                json::Value o(rapidjson::kObjectType);
                json::set(o, "containerID", json::str(v.container_id, a), a);
                json::set(o, "ifname", json::str(v.ifname, a), a);
                arr.PushBack(std::move(o), a);
            }
            doc.RemoveMember("cni.dev/valid-attachments");
            json::set(doc, "cni.dev/valid-attachments", std::move(arr), a);
        }));
        auto st = run_plugin(list, i, Command::gc, rt, config, warn);
        failures.add(st ? st : cni::Unexpected(st.error().context("failed to GC plugin " + list.types[i])));
    }
    return failures.status();
}

Status status_network_list(const NetworkList& list, const RuntimeConf& rt, const Warn& warn) {
    CNI_TRY_ASSIGN(bool supported, at_least(list, "1.1.0"));
    if (!supported) return {};
    for (std::size_t i = 0; i < list.plugins.size(); ++i) {
        CNI_TRY_ASSIGN(auto config, plain_config(list, i, nullptr));
        CNI_TRY(run_plugin(list, i, Command::status, rt, config, warn));
    }
    return {};
}

}  // namespace cni::runtime
