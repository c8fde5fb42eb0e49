// SPDX-License-Identifier: Apache-2.0
// A pool's request sources and verbs (see pool.hpp): the reference host-local's allocation,
// release, CHECK, and beyond it GC by cni.dev/valid-attachments and STATUS with code 50 when a
// range set has no free address. Error texts are host-local's, whose store this is.
#include "core/ipam/pool.hpp"

#include <algorithm>

#include "core/cni/cni_args.hpp"
#include "core/ipam/allocator.hpp"

namespace cni::ipam {
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

Result<Store> open_store(const Context& ctx, const Pool& p) { return Store::open(p.data_dir, p.name, ctx.warn); }

}  // namespace

Result<Pool> request_pool(const Request& req, NetConf& nc) {
    Pool p{nc.name, nc.cni_version, {}, {}, {}, std::move(nc.valid_attachments)};
    const json::Value& root = nc.root();
    json::Where top{"Net", ""};
    CNI_TRY_ASSIGN(auto rc, json::anonymous_struct(root, "runtimeConfig", top,
                                                   R"(struct { IPRanges []allocator.RangeSet "json:\"ipRanges,omitempty\""; )"
                                                   R"(IPs []*ip.IP "json:\"ips,omitempty\"" })"));
    if (rc.object) CNI_TRY(json::field(*rc.object, "ipRanges", p.ranges, rc.inner));

    // Requested addresses, in the reference's order of precedence.
    std::optional<net::IpAddr> env_ip;
    CniArgField fields[] = {{"IP", [&](std::string_view v) -> Status {
                                 CNI_TRY_ASSIGN(env_ip, parse_arg_ip(v));
                                 return {};
                             }}};
    CNI_TRY(load_cni_args(req.args, fields));
    if (env_ip) p.requested.push_back(*env_ip);
    CNI_TRY_ASSIGN(auto args, json::anonymous_struct(root, "args", top, R"(struct { A *allocator.IPAMArgs "json:\"cni\"" })"));
    CNI_TRY_ASSIGN(auto a, json::struct_member(args.object, "cni", args.inner, "allocator.IPAMArgs"));
    if (a) CNI_TRY(decode_ips(*a, p.requested, args.inner.at("cni").in("IPAMArgs")));
    if (rc.object) CNI_TRY(decode_ips(*rc.object, p.requested, rc.inner));
    return p;
}

Result<Pool> read_range_pool(const Request& req, const OwnKeys& own) {
    CNI_TRY_ASSIGN(auto nc, parse_ipam_netconf(req.config, "allocator.Net", "allocator.IPAMConfig"));
    json::Where top{"Net", ""};
    const json::Value* ipam = json::find(nc.root(), "ipam");
    if (!ipam || ipam->IsNull()) return fail("IPAM config missing 'ipam' key");
    CNI_TRY(json::expect_object(*ipam, top.at("ipam"), "allocator.IPAMConfig"));
    Range legacy;
    CNI_TRY(decode(*ipam, legacy, top.at("ipam")));
    CNI_TRY_ASSIGN(auto ranges, own(*ipam, top.at("ipam").in("IPAMConfig")));
    CNI_TRY_ASSIGN(auto p, request_pool(req, nc));
    if (legacy.subnet) p.ranges.push_back(RangeSet{legacy});
    p.ranges.insert(p.ranges.end(), ranges.begin(), ranges.end());
    CNI_TRY(check_ranges(p));
    return p;
}

Status check_ranges(Pool& p, std::size_t canonical) {
    if (p.ranges.empty()) return fail("no IP ranges specified");
    int v4 = 0, v6 = 0;
    for (std::size_t i = 0; i < p.ranges.size(); ++i) {
        if (i >= canonical) {
            auto& set = p.ranges[i];
            if (set.empty()) return fail("invalid range set " + std::to_string(i) + ": empty range set");
            const bool v4 = set[0].range_start->is_v4();
            if (std::ranges::any_of(set, [&](const Range& r) { return r.range_start->is_v4() != v4; }))
                return fail("invalid range set " + std::to_string(i) + ": mixed address families");
        } else if (auto st = canonicalize(p.ranges[i]); !st) {
            return fail("invalid range set " + std::to_string(i) + ": " + st.error().msg);
        }
        (p.ranges[i][0].range_start->is_v4() ? v4 : v6)++;
    }
    if (v4 > 1 || v6 > 1) {
        auto ok = version_at_least(p.cni_version, "0.3.0");
        if (!ok || !*ok) return fail("CNI version " + p.cni_version + " does not support more than 1 address per family");
    }
    if (auto pair = first_overlapping_sets(p.ranges))
        return fail("range set " + std::to_string(pair->first) + " overlaps with " + std::to_string(pair->second));
    return {};
}

Result<CniResult> pool_add(const Context& ctx, const Pool& p) {
    CNI_TRY_ASSIGN(auto store, open_store(ctx, p));
    return pool_add(ctx, p, store);
}

Result<CniResult> pool_add(const Context& ctx, const Pool& p, Store& store) {
    CniResult result;

    // Requested addresses keyed by their text, like the reference's map; kept in request order.
    std::vector<net::IpAddr> requested;
    for (auto& ip : p.requested)
        if (std::find(requested.begin(), requested.end(), ip) == requested.end()) requested.push_back(ip);

    const std::string& id = ctx.req.container_id;
    const std::string& ifname = ctx.req.ifname;
    auto undo = [&] {
        if (!result.ips.empty()) (void)store.release_by_id(id, ifname);
        store.flush();
    };
    for (std::size_t idx = 0; idx < p.ranges.size(); ++idx) {
        std::optional<net::IpAddr> want;
        for (auto it = requested.begin(); it != requested.end(); ++it)
            if (contains(p.ranges[idx], *it)) {
                want = *it;
                requested.erase(it);
                break;
            }
        auto ip = allocate(store, p.ranges[idx], int(idx), id, ifname, want);
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
    return result;
}

Status pool_del(const Context& ctx, const Pool& p) {
    CNI_TRY_ASSIGN(auto store, open_store(ctx, p));
    auto st = store.release_by_id(ctx.req.container_id, ctx.req.ifname);
    store.flush();
    return st;
}

Status pool_check(const Context& ctx, const Pool& p) {
    CNI_TRY_ASSIGN(auto store, open_store(ctx, p));
    store.flush();
    if (!store.has_id(ctx.req.container_id, ctx.req.ifname))
        return fail("host-local: Failed to find address added by container " + ctx.req.container_id);
    return {};
}

Status pool_status(const Context& ctx, const Pool& p) {
    auto store = open_store(ctx, p);
    if (!store) return fail(code::plugin_not_available, "host-local: " + store.error().msg);
    return pool_status_in(ctx, p, *store);
}

Status pool_status_in(const Context&, const Pool& p, Store& store) {
    store.flush();
    for (std::size_t idx = 0; idx < p.ranges.size(); ++idx)
        if (auto& set = p.ranges[idx]; !has_free_address(store, set, int(idx)))
            return fail(code::plugin_not_available, "no IP addresses available in range set: " + str(set));
    return {};
}

Status pool_gc(const Context& ctx, const Pool& p) {
    if (!p.valid_attachments) {
        ctx.warn("host-local: GC without cni.dev/valid-attachments: nothing is released");
        return {};
    }
    const auto& valid = *p.valid_attachments;
    auto is_valid = [&](const Owner& o) {
        for (auto& a : valid) {
            if (o.kind == Owner::Kind::current && o.matches(a.container_id, a.ifname)) return true;
            if (o.kind == Owner::Kind::legacy && o.matches_legacy(a.container_id)) return true;
        }
        return o.kind == Owner::Kind::foreign;  // never ours to release
    };
    CNI_TRY_ASSIGN(auto store, open_store(ctx, p));
    Failures failures;
    for (auto& [ip, owner] : store.reservations()) {
        if (is_valid(owner)) continue;
        failures.add(store.release_if(ip, [&](const Owner& now) { return !is_valid(now); }));
    }
    store.flush();
    return failures.status("host-local GC: ");
}

}  // namespace cni::ipam
