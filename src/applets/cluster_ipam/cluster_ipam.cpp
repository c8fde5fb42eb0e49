// SPDX-License-Identifier: Apache-2.0
// cluster-ipam (docs/cluster-ipam.md): addresses unique across a cluster, kept in etcd in
// per-node blocks (allocator.hpp), with host-local's ranges. Each verb reads its config, opens
// the store (store.hpp) with the credentials config.hpp read, and runs one allocator call as
// this node; `cni-all cluster-ipam show` and `release --node NODE` are the operator's, over the
// etcd settings of a root-owned config file.
#include <cstdio>
#include <ctime>

#include "applets/cluster_ipam/config.hpp"
#include "core/os/fs.hpp"

namespace cni::cluster_ipam {
namespace {

// A verb's or a command's open store, node and cache.
struct Session {
    std::unique_ptr<Kv> kv;
    std::string node;
    std::optional<NodeCache> cache;
    Call call(const ClusterConf& c) const {
        return Call{*kv, Keys{c.etcd.prefix}, node, std::int64_t(std::time(nullptr)), c.grace, cache ? &*cache : nullptr, c.digest};
    }
};

Result<Session> open_session(const ClusterConf& c, bool with_cache) {
    Session s;
    CNI_TRY_ASSIGN(s.node, node_name(c.node));
    CNI_TRY_ASSIGN(auto settings, etcd_settings(c.etcd));
    CNI_TRY_ASSIGN(s.kv, open_store(settings));
    std::string store_id = c.etcd.prefix;
    for (const auto& e : c.etcd.endpoints) store_id += "\n" + e;
    if (with_cache) s.cache = NodeCache::open_default(store_id, s.node);
    return s;
}

// The debug log's line of what a call cost (the bench reads it): "cluster-ipam: N round trips",
// then its TLS handshakes, full and resumed, when there were any.
std::string traffic(const Kv& kv) {
    std::string out = "cluster-ipam: " + std::to_string(kv.round_trips()) + " round trips";
    if (const auto h = kv.handshakes(); h.full + h.resumed > 0)
        out += ", TLS handshakes: " + std::to_string(h.full) + " full, " + std::to_string(h.resumed) + " resumed";
    return out;
}

std::string handle_of(const Request& req, const ClusterConf& c, const Session& s) {
    return handle_id(s.node, c.pool.name, req.container_id, req.ifname);
}

Result<CniResult> add(const Context& ctx, const ClusterConf& c) {
    CNI_TRY(require_route_dsts(c.routes));
    if (!c.pool.requested.empty())
        return fail(code::invalid_config, "cluster-ipam: requested addresses (CNI_ARGS IP, args.cni.ips, runtimeConfig.ips) "
                                          "are not supported");
    CNI_TRY_ASSIGN(auto s, open_session(c, true));
    CNI_TRY_ASSIGN(auto ips, allocate(s.call(c), c.sets, handle_of(ctx.req, c, s)));
    ctx.step(traffic(*s.kv));
    CniResult r;
    r.ips = std::move(ips);
    r.routes = c.routes;
    return r;
}

Status del(const Context& ctx, const ClusterConf& c) {
    CNI_TRY_ASSIGN(auto s, open_session(c, true));
    CNI_TRY(release(s.call(c), handle_of(ctx.req, c, s)));
    ctx.step(traffic(*s.kv));
    return {};
}

Status check(const Context& ctx, const ClusterConf& c) {
    CNI_TRY_ASSIGN(auto s, open_session(c, false));
    CNI_TRY_ASSIGN(auto h, lookup(s.call(c), handle_of(ctx.req, c, s)));
    if (!h) return fail("cluster-ipam: no address held for container " + ctx.req.container_id + " interface " + ctx.req.ifname);
    return {};
}

Status status(const Context& ctx) {
    auto st = [&]() -> Status {
        CNI_TRY_ASSIGN(auto c, parse_conf(ctx.req));
        CNI_TRY_ASSIGN(auto s, open_session(c, false));
        return check_free(s.call(c), c.sets);
    }();
    if (!st && st.error().code != code::plugin_not_available) return fail(code::plugin_not_available, st.error().msg);
    return st;
}

Status gc(const Context& ctx, const ClusterConf& c) {
    if (!c.pool.valid_attachments) {
        ctx.warn("cluster-ipam: GC without cni.dev/valid-attachments: nothing is released");
        return {};
    }
    CNI_TRY_ASSIGN(auto s, open_session(c, true));
    CNI_TRY_ASSIGN(auto done, collect(s.call(c), c.pool.name, c.sets, *c.pool.valid_attachments));
    ctx.step("cluster-ipam: GC released " + std::to_string(done.released) + " handles");
    if (done.others)
        ctx.warn("cluster-ipam: GC left " + std::to_string(done.others) + " handles of this node alone: another network config "
                 "of the same name made them (docs/cluster-ipam.md, Networks of one name)");
    return {};
}

// The operator's commands: [--config FILE] (default /etc/cni/cluster-ipam/config.json).
struct CommandArgs {
    std::string config = "/etc/cni/cluster-ipam/config.json";
    std::string node;
    bool force = false;
};

Result<CommandArgs> parse_args(std::string_view command, std::span<const std::string> args, bool release) {
    CommandArgs a;
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--config" && i + 1 < args.size()) a.config = args[++i];
        else if (release && args[i] == "--node" && i + 1 < args.size()) a.node = args[++i];
        else if (release && args[i] == "--force") a.force = true;
        else
            return fail("usage: cni-all cluster-ipam " + std::string(command) +
                        (release ? " --node NODE [--force]" : "") + " [--config FILE]: unexpected \"" + args[i] + "\"");
    }
    if (release && a.node.empty()) return fail("usage: cni-all cluster-ipam release --node NODE [--force] [--config FILE]");
    return a;
}

Result<int> run_command(std::span<const std::string> args, bool release) {
    CNI_TRY_ASSIGN(auto a, parse_args(release ? "release" : "show", args, release));
    CNI_TRY_ASSIGN(auto text, os::read_file(a.config));
    auto parsed = parse_operator_file(text);
    if (!parsed) return cni::Unexpected(parsed.error().context(a.config));
    auto& c = *parsed;
    Session s;
    CNI_TRY_ASSIGN(auto settings, etcd_settings(c.etcd));
    CNI_TRY_ASSIGN(s.kv, open_store(settings));
    s.node = "operator";
    CNI_TRY_ASSIGN(auto out, release ? release_node(s.call(c), a.node, a.force) : show(s.call(c)));
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
}

Result<int> show_command(std::span<const std::string> args, const SubcommandWarn&) { return run_command(args, false); }
Result<int> release_command(std::span<const std::string> args, const SubcommandWarn&) { return run_command(args, true); }

constexpr std::array kCommands{Subcommand{"show", show_command}, Subcommand{"release", release_command}};

}  // namespace

extern const Applet cluster_ipam_applet{
    .name = "cluster-ipam",
    .kind = AppletKind::ipam,
    .summary = "addresses unique across a cluster, in per-node blocks kept in etcd",
    .keys = kKeyDocTable,
    .help = "Hands out host-local's ranges across every node of a cluster: each node claims blocks of blockSize in etcd and "
            "allocates inside them with one compare-and-swap txn (the handle node/network/containerID/ifname written in the same "
            "txn), borrowing from other nodes' blocks when none is free. DEL needs no prevResult. GC releases this node's "
            "addresses that this network config made whose attachments are not in cni.dev/valid-attachments; STATUS fails with code 50 when etcd cannot be "
            "reached or a range set is exhausted. `cni-all cluster-ipam show [--config FILE]` lists pools and blocks per node; "
            "`cni-all cluster-ipam release --node NODE [--force] [--config FILE]` releases a node that is gone (FILE: a conflist, "
            "network config or ipam object naming the store; default /etc/cni/cluster-ipam/config.json).",
    .versions = kAllVersions,
    .add = ipam::verb_of<parse_conf, add>,
    .del = ipam::verb_of<parse_conf, del>,
    .check = ipam::verb_of<parse_conf, check>,
    .status = status,
    .gc = ipam::verb_of<parse_conf, gc>,
    .subcommands = kCommands,
};

}  // namespace cni::cluster_ipam
