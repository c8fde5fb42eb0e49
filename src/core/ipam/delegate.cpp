// SPDX-License-Identifier: Apache-2.0
// Plugin delegation, in-process or by exec (see delegate.hpp).
#include "core/ipam/delegate.hpp"

#include <sys/stat.h>

#include "core/os/exec.hpp"
#include "core/run.hpp"
#include "core/strings.hpp"

namespace cni::ipam {
namespace {

Result<std::optional<CniResult>> run_in_process(const Applet& a, const Context& ctx, Command cmd, std::string_view config) {
    Request derived = ctx.req.with_command(cmd);
    auto req = read_request(derived.environ, [&](std::size_t) { return Result<std::string>(std::string(config)); });
    if (!req) return cni::Unexpected(req.error().error);
    Context inner{*req, ctx.warn, req->netns == ctx.req.netns ? ctx.netns : nullptr, ctx.debug, ctx.in_process};
    ctx.step(std::string(command_name(cmd)) + " " + std::string(a.name) + ", in-process: " + std::string(config));
    CNI_TRY_ASSIGN(auto outcome, run_verb(a, inner));
    if (!outcome.result) return std::optional<CniResult>{};
    // What the caller would have parsed from the delegate's stdout.
    CNI_TRY_ASSIGN(auto parsed, round_trip(*outcome.result, outcome.conf_version));
    return std::optional<CniResult>(std::move(parsed));
}

// Go RawExec.pluginErr: the delegate's error JSON, or a description of its failure.
Error plugin_error(const os::ExecOutput& res) {
    if (res.out.empty()) {
        if (res.err.empty()) return Error{0, "netplugin failed with no error message: " + res.status_text(), {}};
        return Error{0, "netplugin failed: " + go_quote(res.err), {}};
    }
    auto doc = json::parse(res.out);
    if (!doc)
        return Error{0, "netplugin failed but error parsing its diagnostic message " + go_quote(res.out) + ": " + doc.error().msg, {}};
    return decode_error(*doc);
}

Result<std::optional<CniResult>> run_exec(const std::string& path, const Context& ctx, Command cmd, std::string_view config) {
    Request derived = ctx.req.with_command(cmd);
    ctx.step(std::string(command_name(cmd)) + " " + path + ": " + std::string(config));
    CNI_TRY_ASSIGN(auto res, os::run_process(path, derived.environ, config));
    ctx.step(path + " answered " + res.status_text() + ": " + res.out);
    if (!res.ok()) return cni::Unexpected(plugin_error(res));
    if (!res.err.empty()) {
        std::string_view e = res.err;
        if (e.back() == '\n') e.remove_suffix(1);
        ctx.warn(e);
    }
    if (cmd != Command::add) return std::optional<CniResult>{};
    // invoke.fixupResultVersion: the result's own cniVersion, else the config's.
    CNI_TRY_ASSIGN(auto conf_version, config_version(config));
    auto doc = json::parse(res.out);
    if (!doc) return fail("failed to unmarshal raw result: " + doc.error().msg);
    if (doc->IsNull()) return fail("plugin output was empty");
    std::string label = conf_version;
    if (const auto* v = json::find_exact(*doc, "cniVersion"); v && v->IsString() && v->GetStringLength() > 0)
        label.assign(v->GetString(), v->GetStringLength());
    CNI_TRY_ASSIGN(auto result, decode_result(*doc, label, label));
    return std::optional<CniResult>(std::move(result));
}

}  // namespace

Result<std::optional<CniResult>> invoke(const Context& ctx, Command cmd, std::string_view type, std::string_view config) {
    CNI_TRY_ASSIGN(auto path, find_in_path(type, ctx.req.path));
    if (const Applet* a = ctx.in_process ? ctx.in_process(type, path) : nullptr) return run_in_process(*a, ctx, cmd, config);
    return run_exec(path, ctx, cmd, config);
}

Result<std::string> find_in_path(std::string_view plugin, std::string_view cni_path) {
    if (plugin.empty()) return fail("no plugin name provided");
    if (plugin.find('/') != std::string_view::npos) return fail("invalid plugin name: " + std::string(plugin));
    if (cni_path.empty()) return fail("no paths provided");  // Go filepath.SplitList("") is empty
    std::vector<std::string> dirs;
    for (auto d : split(cni_path, ':')) dirs.emplace_back(d);
    for (auto& d : dirs) {
        if (!d.starts_with('/')) continue;  // an empty or relative entry would find the working directory's files
        std::string full = (d.back() == '/' ? d : d + "/") + std::string(plugin);
        struct stat st{};
        if (::stat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return full;
    }
    std::string list = "[";
    for (std::size_t i = 0; i < dirs.size(); ++i) list += (i ? " " : "") + dirs[i];
    return fail("failed to find plugin " + go_quote(plugin) + " in path " + list + "]");
}

Result<CniResult> delegate_add(const Context& ctx, std::string_view type, std::string_view config) {
    CNI_TRY_ASSIGN(auto r, invoke(ctx, Command::add, type, config));
    if (!r) return fail("delegate " + std::string(type) + " returned no result");
    // A result no plugin can configure: the delegate allocated, so it is released here (the
    // caller's rollback only knows about delegates that returned a usable result).
    if (auto usable = require_addresses_and_routes(*r); !usable) {
        (void)delegate_del(ctx, type, config);
        return cni::Unexpected(usable.error());
    }
    return std::move(*r);
}

#define CNI_DELEGATE_VOID(fn, cmd)                                                                   \
    Status fn(const Context& ctx, std::string_view type, std::string_view config) {                \
        CNI_TRY(invoke(ctx, cmd, type, config));                                                  \
        return {};                                                                                  \
    }
CNI_DELEGATE_VOID(delegate_del, Command::del)
CNI_DELEGATE_VOID(delegate_check, Command::check)
CNI_DELEGATE_VOID(delegate_status, Command::status)
CNI_DELEGATE_VOID(delegate_gc, Command::gc)
#undef CNI_DELEGATE_VOID

Result<CniResult> allocate(const Context& ctx, std::string_view type, Rollback& undo, std::string_view error_prefix) {
    auto added = delegate_add(ctx, type, ctx.req.config);
    if (!added && !error_prefix.empty()) return fail(std::string(error_prefix) + added.error().msg);
    CNI_TRY_ASSIGN(auto result, std::move(added));
    undo.push([&ctx, type = std::string(type)] { (void)delegate_del(ctx, type, ctx.req.config); });
    if (result.ips.empty()) return fail("IPAM plugin returned missing IP config");
    return result;
}

Status check_of_optional_ipam(const Context& ctx, std::string_view type) {
    return type.empty() ? Status{} : delegate_check(ctx, type, ctx.req.config);
}

Status status_of_optional_ipam(const Context& ctx, std::string_view type) {
    return type.empty() ? Status{} : delegate_status(ctx, type, ctx.req.config);
}

}  // namespace cni::ipam
