// SPDX-License-Identifier: Apache-2.0
// loopback (docs/compatibility.md: loopback): sets `lo` up inside CNI_NETNS (CNI_IFNAME is ignored)
// and reports it, or passes a prevResult through unchanged. Its result keeps the reference's quirk:
// it is labelled with the config's cniVersion but keeps the 1.x shape (1.3). DEL sets lo down and
// succeeds when the netns is empty or gone; CHECK verifies lo is up.
#include "core/applet.hpp"
#include "core/cni/netconf.hpp"
#include "core/iface/sockets.hpp"
#include "core/nl/addr.hpp"
#include "core/nl/link.hpp"

namespace cni::loopback {
namespace {

constexpr const char* kLo = "lo";

struct LoopbackConf {
    std::string cni_version;
    std::optional<CniResult> prev_result;
};

Result<LoopbackConf> parse_loopback_conf(const Request& req) {
    auto nc = parse_netconf(req.config);
    if (!nc) return fail("failed to parse network config: " + nc.error().msg);
    LoopbackConf c{nc->cni_version, {}};
    CNI_TRY_ASSIGN(c.prev_result, parse_prev_result(*nc, "failed to parse prevResult: "));
    return c;
}

Result<nl::LinkInfo> find_lo(const nl::Socket& s) { return nl::require_link(s, kLo); }

Result<CniResult> loopback_add(const Context& ctx) {
    CNI_TRY_ASSIGN(auto conf, parse_loopback_conf(ctx.req));
    CNI_TRY_ASSIGN(auto io, iface::open_container(ctx));
    const nl::Socket& sock = io.container;
    CNI_TRY_ASSIGN(auto lo, find_lo(sock));
    CNI_TRY(nl::set_link_up(sock, lo, true));
    std::optional<net::IpNet> first[2];  // v4, v6
    int families[2] = {AF_INET, AF_INET6};
    for (int f = 0; f < 2; ++f) {
        CNI_TRY_ASSIGN(auto addrs, nl::list_addrs(sock, lo.index, families[f]));
        if (!addrs.empty()) first[f] = addrs[0].local;
        for (auto& a : addrs)
            if (!a.local.ip.is_loopback())
                return fail("loopback interface found with non-loopback address \"" + a.local.ip.str() + "\"");
    }
    if (conf.prev_result) return std::move(*conf.prev_result);
    CniResult r;
    r.cni_version = conf.cni_version;  // the reference's label quirk
    Interface lo_if;
    lo_if.name = kLo;
    lo_if.mac = "00:00:00:00:00:00";
    lo_if.sandbox = ctx.req.netns;
    r.interfaces.push_back(lo_if);
    for (auto& addr : first)
        if (addr) r.ips.push_back(IpConfig{0, *addr, std::nullopt});
    return r;
}

Status loopback_del(const Context& ctx) {
    CNI_TRY_ASSIGN(auto io, iface::open_container_if_exists(ctx));
    if (!io) return {};
    CNI_TRY_ASSIGN(auto lo, find_lo(io->container));
    return nl::set_link_up(io->container, lo, false);
}

Status loopback_check(const Context& ctx) {
    CNI_TRY_ASSIGN(auto io, iface::open_container(ctx));
    CNI_TRY_ASSIGN(auto lo, find_lo(io.container));
    if (!lo.up()) return fail("loopback interface is down");
    return {};
}

}  // namespace

extern const Applet loopback_applet{
    .name = "loopback",
    .kind = AppletKind::main,
    .summary = "bring up the loopback interface in the container",
    .keys = {},
    .help = "Sets lo up in CNI_NETNS (CNI_IFNAME is ignored); DEL sets it down.\n"
            "A prevResult is passed through unchanged.",
    .versions = kAllVersions,
    .add = loopback_add,
    .del = loopback_del,
    .check = loopback_check,
};

}  // namespace cni::loopback
