// SPDX-License-Identifier: Apache-2.0
// flannel (docs/compatibility.md: flannel): reads flanneld's subnet.env (`subnetFile`, default
// /run/flannel/subnet.env), builds the delegate's config (delegate_config.hpp: bridge + host-local
// by default), saves it as <dataDir>/<containerID> (default /var/lib/cni/flannel) and runs the
// delegate's ADD - in-process when the delegate is one of our applets - printing its result.
// DEL runs the delegate's DEL with the saved config and then removes the file. Beyond the
// reference: when the saved file is missing or torn (a crash, cni-plugin #43), DEL rebuilds the
// delegate's config from subnet.env instead of skipping the cleanup, so the file needs no fsync;
// the file is removed again when the delegate's ADD fails (#426); CHECK runs the delegate's
// CHECK with the saved config; STATUS says whether subnet.env is usable (code 50 when not, e.g.
// before flanneld has written it).
#include <unistd.h>

#include "applets/flannel/delegate_config.hpp"
#include "core/applet.hpp"
#include "core/cni/netconf.hpp"
#include "core/ipam/delegate.hpp"
#include "core/os/errno_error.hpp"
#include "core/os/fs.hpp"

namespace cni::flannel {
namespace {

struct FlannelConf {
    NetConf net;
    std::string subnet_file = "/run/flannel/subnet.env";
    std::string data_dir = "/var/lib/cni/flannel";
};

constexpr std::array kFlannelKeys{
    key<&FlannelConf::subnet_file>("subnetFile", "flanneld's subnet.env; default /run/flannel/subnet.env"),
    key<&FlannelConf::data_dir>("dataDir", "where each container's delegate config is kept; default /var/lib/cni/flannel"),
};

Result<FlannelConf> parse_flannel_conf(const Request& req) {
    CNI_TRY_ASSIGN(auto nc, parse_netconf(req.config, "NetConf"));
    FlannelConf c;
    c.net = std::move(nc);
    CNI_TRY(read_keys(c.net.root(), kFlannelKeys, c, json::Where{"NetConf", ""}));
    if (c.subnet_file.empty()) c.subnet_file = "/run/flannel/subnet.env";
    if (c.data_dir.empty()) c.data_dir = "/var/lib/cni/flannel";
    return c;
}

Result<flannel::SubnetEnv> load_subnet_env(const FlannelConf& c) {
    auto text = os::read_file(c.subnet_file);
    auto env = text ? flannel::parse_subnet_env(*text, c.subnet_file) : cni::Unexpected(text.error());
    if (!env) return fail("failed to load flannel 'subnet.env' file: " + env.error().msg + ". Check the flannel pod log for this node.");
    return env;
}

std::string saved_path(const FlannelConf& c, const Request& r) { return c.data_dir + "/" + r.container_id; }

// No fsync, no rename: DEL rebuilds the delegate's config from subnet.env when the saved one is
// missing or torn (after a crash), so the scratch file never decides whether DEL cleans up.
Status save(const FlannelConf& c, const Request& r, const std::string& config) {
    CNI_TRY(os::mkdir_all(c.data_dir, 0700));
    return os::write_file(saved_path(c, r), config, 0600);
}

Result<CniResult> flannel_add(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_flannel_conf(ctx.req));
    CNI_TRY_ASSIGN(auto env, load_subnet_env(c));
    CNI_TRY_ASSIGN(auto config, flannel::delegate_config(c.net.root(), env));
    CNI_TRY_ASSIGN(auto doc, json::parse(config));
    CNI_TRY(save(c, ctx.req, config));
    auto result = ipam::delegate_add(ctx, flannel::delegate_type(doc), config);
    if (!result) ::unlink(saved_path(c, ctx.req).c_str());  // nothing to undo later: do not leak the file
    return result;
}

// The config ADD saved; when it is missing or unreadable, the one ADD would build now (DELs are
// idempotent, so deleting what was never added is harmless); nullopt when neither exists.
std::optional<std::string> delegate_for_del(const Context& ctx, const FlannelConf& c, const std::string& path) {
    if (auto saved = os::read_state_file(path); saved && *saved && json::parse(**saved)) return **saved;
    auto env = load_subnet_env(c);
    if (!env) return std::nullopt;  // flanneld and the saved config are both gone: nothing to know the delegate by
    auto built = flannel::delegate_config(c.net.root(), *env);
    if (!built) return std::nullopt;
    ctx.warn("flannel: " + path + " is missing or unreadable; deleting with the delegate config built from " + c.subnet_file);
    return *built;
}

Status flannel_del(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_flannel_conf(ctx.req));
    std::string path = saved_path(c, ctx.req);
    auto config = delegate_for_del(ctx, c, path);
    if (!config) return {};
    CNI_TRY_ASSIGN(auto doc, json::parse(*config));
    CNI_TRY(ipam::delegate_del(ctx, flannel::delegate_type(doc), *config));
    ::unlink(path.c_str());
    return {};
}

Status flannel_check(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_flannel_conf(ctx.req));
    std::string path = saved_path(c, ctx.req);
    CNI_TRY_ASSIGN(auto config, os::read_state_file(path));
    if (!config) return os::sys_fail("open", path, ENOENT);
    CNI_TRY_ASSIGN(auto doc, json::parse(*config));
    if (const auto* prev = c.net.member("prevResult"); prev && prev->IsObject())  // the delegate checks against it
        json::set(doc, "prevResult", json::copy(*prev, doc.GetAllocator()), doc.GetAllocator());
    return ipam::delegate_check(ctx, flannel::delegate_type(doc), json::write(doc, json::Style::compact, true));
}

Status flannel_status(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_flannel_conf(ctx.req));
    if (auto env = load_subnet_env(c); !env) return fail(code::plugin_not_available, env.error().msg);
    return {};
}

constexpr auto kFlannelKeyDocs = docs_of(kFlannelKeys);

}  // namespace

extern const Applet flannel_applet{
    .name = "flannel",
    .kind = AppletKind::meta,
    .summary = "delegate to bridge (or another plugin) with flanneld's subnet for this node",
    .keys = kFlannelKeyDocs,
    .help = "delegate is the delegate's config without name and ipam (bridge by default); ipam is the base of the "
            "IPAM config handed on; runtimeConfig is passed on.",
    .versions = kAllVersions,
    .add = flannel_add,
    .del = flannel_del,
    .check = flannel_check,
    .status = flannel_status,
};

}  // namespace cni::flannel
