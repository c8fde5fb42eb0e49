// SPDX-License-Identifier: Apache-2.0
// dhcp IPAM (docs/compatibility.md: dhcp): the client half. It validates the ipam keys, then asks
// the daemon (`dhcp daemon`, daemon.hpp beside this file) over daemonSocketPath, which runs the
// DHCP client in the container's namespace and keeps the lease renewed. ADD returns the lease as a
// result; DEL releases it; CHECK asks whether the lease is held (the reference re-allocates, and so
// may acquire a lease on CHECK); GC releases the leases this network's config made whose
// attachments are not in cni.dev/valid-attachments; STATUS fails with code 50 while the daemon cannot be reached.
// CNI_NETNS is made absolute first, as the reference does.

#include "applets/dhcp/config.hpp"
#include "applets/dhcp/daemon.hpp"
#include "applets/dhcp/protocol.hpp"
#include "core/applet.hpp"
#include "core/os/fs.hpp"

namespace cni::dhcp {
namespace {

dhcp::DaemonReply ask(const Context& ctx, dhcp::Op op, int unreachable_code = code::internal) {
    CNI_TRY_ASSIGN(auto conf, dhcp::parse_dhcp_conf(ctx.req.config, ctx.req.args));
    const auto& r = ctx.req;
    dhcp::DaemonRequest q{op, r.container_id, os::absolute_path(r.netns), r.ifname, r.args, r.path, r.config};
    return dhcp::call_daemon(conf.socket_path, q, unreachable_code);
}

Status done(const dhcp::DaemonReply& r) {
    if (!r) return cni::Unexpected(r.error());
    return {};
}

Result<CniResult> dhcp_add(const Context& ctx) {
    CNI_TRY_ASSIGN(auto reply, ask(ctx, dhcp::Op::add));
    if (!reply) return fail("the DHCP daemon answered ADD without a result");
    return *reply;
}

Status dhcp_del(const Context& ctx) { return done(ask(ctx, dhcp::Op::del)); }
Status dhcp_check(const Context& ctx) { return done(ask(ctx, dhcp::Op::check)); }
Status dhcp_gc(const Context& ctx) { return done(ask(ctx, dhcp::Op::gc)); }
Status dhcp_status(const Context& ctx) { return done(ask(ctx, dhcp::Op::status, code::plugin_not_available)); }

Result<int> dhcp_daemon(std::span<const std::string> args, const SubcommandWarn&) { return dhcp::run_daemon(args); }
constexpr std::array kDhcpCommands{Subcommand{"daemon", dhcp_daemon}};

constexpr auto kDhcpKeyDocs = docs_of(dhcp::kDhcpKeys);

}  // namespace

extern const Applet dhcp_applet{
    .name = "dhcp",
    .kind = AppletKind::ipam,
    .summary = "addresses from a DHCP server, kept renewed by `dhcp daemon`",
    .keys = kDhcpKeyDocs,
    .help = "Addresses from a DHCP server, through the lease daemon. Options by name (dhcp-client-identifier, "
            "subnet-mask, routers, host-name, user-class, vendor-class-identifier) or code 0-255.\n"
            "The daemon: `dhcp daemon [-socketpath P] [-hostprefix P] [-pidfile F] [-leasedir D] [-broadcast] "
            "[-timeout 10s] [-resendmax 62s] [-resendtimeout 208s]`; it keeps leases renewed and on disk (under "
            "-leasedir), so a restarted daemon goes on renewing them.",
    .versions = kAllVersions,
    .add = dhcp_add,
    .del = dhcp_del,
    .check = dhcp_check,
    .status = dhcp_status,
    .gc = dhcp_gc,
    .subcommands = kDhcpCommands,
};

}  // namespace cni::dhcp
