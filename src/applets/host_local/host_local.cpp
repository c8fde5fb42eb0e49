// SPDX-License-Identifier: Apache-2.0
// host-local IPAM (docs/compatibility.md: host-local): allocates one address per range set from
// <dataDir>/<network> with the reference's keys, request sources (CNI_ARGS IP, args.cni.ips,
// runtimeConfig ips/ipRanges), allocation order, on-disk format and error texts. Beyond the
// reference: GC releases reservations of attachments not in cni.dev/valid-attachments, STATUS
// reports code 50 when a range set has no free address, and calls do not re-read every
// reservation file (store.hpp).
#include "applets/host_local/host_local.hpp"

#include <algorithm>

#include "applets/host_local/allocator.hpp"
#include "applets/host_local/resolv_conf.hpp"
#include "core/cni/cni_args.hpp"

namespace cni::host_local {
namespace {

// runtimeConfig.ips, args.cni.ips and CNI_ARGS IP are pkg/ip.IP values: "ip" or "ip/prefix"
// (Go: []*ip.IP).
Status decode_ips(const json::Value& obj, std::vector<net::IpAddr>& out, const json::Where& w) {
    const json::Value* ips = json::find(obj, "ips");
    if (!ips || ips->IsNull()) return {};
    if (!ips->IsArray()) return cni::Unexpected(json::type_error(*ips, w.at("ips"), "[]*ip.IP"));
    for (const auto& e : ips->GetArray()) {
        if (!e.IsString() && !e.IsNull()) return cni::Unexpected(json::type_error(e, w.at("ips"), "*ip.IP"));
        CNI_TRY_ASSIGN(auto ip, parse_arg_ip(e.IsString() ? std::string_view(e.GetString(), e.GetStringLength()) : ""));
        out.push_back(ip);
    }
    return {};
}

Result<Store> open_store(const Context& ctx, const HostLocalConf& c) { return Store::open(c.data_dir, c.name, ctx.warn); }

}  // namespace

Result<HostLocalConf> request_conf(const Request& req, NetConf& nc) {
    HostLocalConf c{nc.name, nc.cni_version, {}, {}, {}, {}, {}, std::move(nc.valid_attachments)};
    const json::Value& root = nc.root();
    json::Where top{"Net", ""};
    CNI_TRY_ASSIGN(auto rc, json::anonymous_struct(root, "runtimeConfig", top,
                                                   R"(struct { IPRanges []allocator.RangeSet "json:\"ipRanges,omitempty\""; )"
                                                   R"(IPs []*ip.IP "json:\"ips,omitempty\"" })"));
    if (rc.object) CNI_TRY(json::field(*rc.object, "ipRanges", c.ranges, rc.inner));

    // Requested addresses, in the reference's order of precedence.
    std::optional<net::IpAddr> env_ip;
    CniArgField fields[] = {{"IP", [&](std::string_view v) -> Status {
                                 CNI_TRY_ASSIGN(env_ip, parse_arg_ip(v));
                                 return {};
                             }}};
    CNI_TRY(load_cni_args(req.args, fields));
    if (env_ip) c.requested.push_back(*env_ip);
    CNI_TRY_ASSIGN(auto args, json::anonymous_struct(root, "args", top, R"(struct { A *allocator.IPAMArgs "json:\"cni\"" })"));
    CNI_TRY_ASSIGN(auto a, json::struct_member(args.object, "cni", args.inner, "allocator.IPAMArgs"));
    if (a) CNI_TRY(decode_ips(*a, c.requested, args.inner.at("cni").in("IPAMArgs")));
    if (rc.object) CNI_TRY(decode_ips(*rc.object, c.requested, rc.inner));
    return c;
}

Status check_ranges(HostLocalConf& c, std::size_t canonical) {
    if (c.ranges.empty()) return fail("no IP ranges specified");
    int v4 = 0, v6 = 0;
    for (std::size_t i = 0; i < c.ranges.size(); ++i) {
        if (i >= canonical) {
            auto& set = c.ranges[i];
            if (set.empty()) return fail("invalid range set " + std::to_string(i) + ": empty range set");
            const bool v4 = set[0].range_start->is_v4();
            if (std::ranges::any_of(set, [&](const Range& r) { return r.range_start->is_v4() != v4; }))
                return fail("invalid range set " + std::to_string(i) + ": mixed address families");
        } else if (auto st = canonicalize(c.ranges[i]); !st) {
            return fail("invalid range set " + std::to_string(i) + ": " + st.error().msg);
        }
        (c.ranges[i][0].range_start->is_v4() ? v4 : v6)++;
    }
    if (v4 > 1 || v6 > 1) {
        auto ok = version_at_least(c.cni_version, "0.3.0");
        if (!ok || !*ok) return fail("CNI version " + c.cni_version + " does not support more than 1 address per family");
    }
    if (auto pair = first_overlapping_sets(c.ranges))
        return fail("range set " + std::to_string(pair->first) + " overlaps with " + std::to_string(pair->second));
    return {};
}

Result<CniResult> add(const Context& ctx, const HostLocalConf& c) {
    CNI_TRY(require_route_dsts(c.routes));
    CniResult result;
    if (!c.resolv_conf.empty()) {
        CNI_TRY_ASSIGN(result.dns, parse_resolv_conf(c.resolv_conf));
    }
    CNI_TRY_ASSIGN(auto store, open_store(ctx, c));

    // Requested addresses keyed by their text, like the reference's map; kept in request order.
    std::vector<net::IpAddr> requested;
    for (auto& ip : c.requested)
        if (std::find(requested.begin(), requested.end(), ip) == requested.end()) requested.push_back(ip);

    const std::string& id = ctx.req.container_id;
    const std::string& ifname = ctx.req.ifname;
    auto undo = [&] {
        if (!result.ips.empty()) (void)store.release_by_id(id, ifname);
        store.flush();
    };
    for (std::size_t idx = 0; idx < c.ranges.size(); ++idx) {
        std::optional<net::IpAddr> want;
        for (auto it = requested.begin(); it != requested.end(); ++it)
            if (contains(c.ranges[idx], *it)) {
                want = *it;
                requested.erase(it);
                break;
            }
        auto ip = allocate(store, c.ranges[idx], int(idx), id, ifname, want);
        if (!ip) {
            undo();
            return fail("failed to allocate for range " + std::to_string(idx) + ": " + ip.error().msg);
        }
        result.ips.push_back(*ip);
    }
    if (!requested.empty()) {
        undo();
        std::string msg = "failed to allocate all requested IPs:";
        for (auto& ip : requested) msg += " " + ip.str();
        return fail(msg);
    }
    store.flush();
    result.routes = c.routes;
    return result;
}

Status del(const Context& ctx, const HostLocalConf& c) {
    CNI_TRY_ASSIGN(auto store, open_store(ctx, c));
    auto st = store.release_by_id(ctx.req.container_id, ctx.req.ifname);
    store.flush();
    return st;
}

Status check(const Context& ctx, const HostLocalConf& c) {
    CNI_TRY_ASSIGN(auto store, open_store(ctx, c));
    store.flush();
    if (!store.has_id(ctx.req.container_id, ctx.req.ifname))
        return fail("host-local: Failed to find address added by container " + ctx.req.container_id);
    return {};
}

Status status(const Context& ctx, const HostLocalConf& c) {
    auto store = open_store(ctx, c);
    if (!store) return fail(code::plugin_not_available, "host-local: " + store.error().msg);
    store->flush();
    for (std::size_t idx = 0; idx < c.ranges.size(); ++idx)
        if (auto& set = c.ranges[idx]; !has_free_address(*store, set, int(idx)))
            return fail(code::plugin_not_available, "no IP addresses available in range set: " + str(set));
    return {};
}

Status gc(const Context& ctx, const HostLocalConf& c) {
    if (!c.valid_attachments) {
        ctx.warn("host-local: GC without cni.dev/valid-attachments: nothing is released");
        return {};
    }
    const auto& valid = *c.valid_attachments;
    auto is_valid = [&](const Owner& o) {
        for (auto& a : valid) {
            if (o.kind == Owner::Kind::current && o.matches(a.container_id, a.ifname)) return true;
            if (o.kind == Owner::Kind::legacy && o.matches_legacy(a.container_id)) return true;
        }
        return o.kind == Owner::Kind::foreign;  // never ours to release
    };
    CNI_TRY_ASSIGN(auto store, open_store(ctx, c));
    Failures failures;
    for (auto& [ip, owner] : store.reservations()) {
        if (is_valid(owner)) continue;
        failures.add(store.release_if(ip, [&](const Owner& now) { return !is_valid(now); }));
    }
    store.flush();
    return failures.status("host-local GC: ");
}

namespace {

constexpr std::array kHostLocalKeys{
    key<&HostLocalConf::ranges>("ranges", "[]allocator.RangeSet", "range sets: [[{subnet, rangeStart, rangeEnd, gateway}]], one per address"),
    key_with<&HostLocalConf::routes, decode_routes>("routes", "[]*types.Route", "[{\"dst\": CIDR, \"gw\": IP}]"),
    key<&HostLocalConf::data_dir>("dataDir", "where reservations are kept, per network; default /var/lib/cni/networks"),
    key<&HostLocalConf::resolv_conf>("resolvConf", "a resolv.conf whose nameservers, domain and search the result gets"),
};

Result<HostLocalConf> parse_host_local_conf(const Request& req) {
    CNI_TRY_ASSIGN(auto nc, parse_ipam_netconf(req.config, "allocator.Net", "allocator.IPAMConfig"));
    json::Where top{"Net", ""};
    const json::Value* ipam = json::find(nc.root(), "ipam");
    if (!ipam || ipam->IsNull()) return fail("IPAM config missing 'ipam' key");
    CNI_TRY(json::expect_object(*ipam, top.at("ipam"), "allocator.IPAMConfig"));
    Range legacy;
    CNI_TRY(decode(*ipam, legacy, top.at("ipam")));
    HostLocalConf own;
    CNI_TRY(read_keys(*ipam, kHostLocalKeys, own, top.at("ipam").in("IPAMConfig")));
    CNI_TRY_ASSIGN(auto c, request_conf(req, nc));
    // Range sets: runtimeConfig ipRanges, then the legacy ipam-level range, then ipam.ranges.
    if (legacy.subnet) c.ranges.push_back(RangeSet{legacy});
    c.ranges.insert(c.ranges.end(), own.ranges.begin(), own.ranges.end());
    c.routes = std::move(own.routes);
    c.data_dir = std::move(own.data_dir);
    c.resolv_conf = std::move(own.resolv_conf);
    CNI_TRY(check_ranges(c));
    return c;
}

constexpr auto kHostLocalKeyDocs = join(docs_of(kHostLocalKeys), docs_of(kRangeKeys));

}  // namespace

extern const Applet host_local_applet{
    .name = "host-local",
    .kind = AppletKind::ipam,
    .summary = "allocate IP addresses from local ranges, state on disk",
    .keys = kHostLocalKeyDocs,
    .help = "Allocates addresses from local ranges; state in <dataDir>/<network name>. Requests: CNI_ARGS IP, "
            "args.cni.ips, runtimeConfig ips; runtimeConfig ipRanges adds range sets. GC releases reservations whose "
            "(containerID, ifname) is not in cni.dev/valid-attachments. STATUS fails with code 50 when a range set has "
            "no free address.",
    .versions = kAllVersions,
    .add = verb_of<parse_host_local_conf, add>,
    .del = verb_of<parse_host_local_conf, del>,
    .check = verb_of<parse_host_local_conf, check>,
    .status = verb_of<parse_host_local_conf, status>,
    .gc = verb_of<parse_host_local_conf, gc>,
};

}  // namespace cni::host_local
