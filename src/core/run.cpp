// SPDX-License-Identifier: Apache-2.0
// Verb execution with version gating (see run.hpp).
#include "core/run.hpp"

#include <algorithm>

#include "core/cni/json.hpp"
#include "core/os/netns.hpp"
#include "core/strings.hpp"

namespace cni {
namespace {

Status require_exact(const Applet& a, const std::string& v) {
    if (version_supported(a.versions, v)) return {};
    std::string list;
    for (auto s : a.versions) list += (list.empty() ? "" : " ") + go_quote(s);
    return fail(code::incompatible_version, "incompatible CNI versions",
                "config is " + go_quote(v) + ", plugin supports [" + list + "]");
}

// CHECK/STATUS/GC: the config must be at least `min`, and some plugin version at least the config's.
Status require_at_least(const Applet& a, const std::string& v, std::string_view min, std::string_view verb) {
    auto ok = version_at_least(v, min);
    if (!ok) return cni::Unexpected(ok.error());
    if (!*ok) return fail(code::incompatible_version, "config version does not allow " + std::string(verb));
    for (auto pv : a.versions) {
        auto ge = version_at_least(pv, v);
        if (!ge) return cni::Unexpected(ge.error());
        if (*ge) return require_exact(a, v);
    }
    return fail(code::incompatible_version, "plugin version does not allow " + std::string(verb));
}

bool override_set(const std::string& s) {
    std::string u = s;
    std::transform(u.begin(), u.end(), u.begin(), [](unsigned char c) { return char(std::toupper(c)); });
    return u == "1" || u == "TRUE";
}

// The verb's Context with CNI_NETNS opened (once for the whole call: an in-process delegate
// keeps its caller's handle), after Go skel's sanity check on that handle: it must not be the
// namespace this process runs in, unless CNI_NETNS_OVERRIDE says so. A path that cannot be
// opened is left to the verb, which reports it (or, on DEL, may not need it).
Result<Context> with_netns(const Context& ctx) {
    Context inner = ctx;
    const Request& r = ctx.req;
    if (!inner.netns && !r.netns.empty())
        if (auto ns = os::Netns::open_if_exists(r.netns); ns && *ns) inner.netns = std::make_shared<const os::Netns>(std::move(**ns));
    if (!inner.netns || override_set(r.netns_override) || ctx.netns) return inner;
    if (auto own = os::Netns::current(); own && own->same_as(*inner.netns))
        return fail(code::invalid_netns, "plugin's netns and netns from CNI_NETNS should not be the same");
    return inner;
}

}  // namespace

Result<os::Netns> container_netns(const Context& ctx) {
    if (ctx.netns) return ctx.netns->dup();
    return os::Netns::open(ctx.req.netns);
}

Result<std::optional<os::Netns>> container_netns_if_exists(const Context& ctx) {
    if (ctx.netns) {
        CNI_TRY_ASSIGN(auto ns, ctx.netns->dup());
        return std::optional<os::Netns>(std::move(ns));
    }
    return os::Netns::open_if_exists(ctx.req.netns);
}

Result<std::string> config_version(std::string_view config) {
    auto doc = json::parse(config);
    if (!doc) return fail(code::decoding_failure, "decoding version from network config: " + doc.error().msg);
    std::string v;
    if (doc->IsObject())
        if (auto st = json::field(*doc, "cniVersion", v, json::Where{"", ""}); !st)
            return fail(code::decoding_failure, "decoding version from network config: " + st.error().msg);
    return v.empty() ? std::string("0.1.0") : v;
}

Result<Outcome> run_verb(const Applet& a, const Context& ctx) {
    const Request& r = ctx.req;
    Outcome out;
    if (r.command == Command::unknown)
        return fail(code::invalid_env, "unknown CNI_COMMAND: " + r.command_text);
    CNI_TRY_ASSIGN(out.conf_version, config_version(r.config));
    const std::string& v = out.conf_version;
    switch (r.command) {
    case Command::add: {
        CNI_TRY(require_exact(a, v));
        CNI_TRY_ASSIGN(auto inner, with_netns(ctx));
        if (!a.add) return fail("ADD is not implemented by " + std::string(a.name));
        CNI_TRY_ASSIGN(out.result, a.add(inner));
        return out;
    }
    case Command::del: {
        CNI_TRY(require_exact(a, v));
        CNI_TRY_ASSIGN(auto inner, with_netns(ctx));
        if (a.del) CNI_TRY(a.del(inner));
        return out;
    }
    case Command::check: {
        CNI_TRY(require_at_least(a, v, "0.4.0", "CHECK"));
        CNI_TRY_ASSIGN(auto inner, with_netns(ctx));
        if (a.check) CNI_TRY(a.check(inner));
        return out;
    }
    case Command::status: {
        CNI_TRY(require_at_least(a, v, "1.1.0", "STATUS"));
        if (a.status) CNI_TRY(a.status(ctx));
        return out;
    }
    case Command::gc: {
        CNI_TRY(require_at_least(a, v, "1.1.0", "GC"));
        if (a.gc) CNI_TRY(a.gc(ctx));
        return out;
    }
    case Command::version:
    case Command::unknown: break;
    }
    return fail(code::invalid_env, "unknown CNI_COMMAND: " + r.command_text);
}

}  // namespace cni
