// SPDX-License-Identifier: Apache-2.0
// Route changes and dumps over libnl-route (see route.hpp).
#include "core/nl/route.hpp"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netlink/errno.h>
#include <netlink/msg.h>
#include <netlink/route/route.h>
#include <sys/socket.h>

#include <cstring>

#include "core/nl/nl_addr.hpp"

namespace cni::nl {
namespace {

using RoutePtr = std::unique_ptr<rtnl_route, libnl::Deleter<rtnl_route_put>>;

// A route message; deletes leave protocol and type unset and use scope NOWHERE, as `ip route
// del` does, so the kernel matches a route whatever installed it (e.g. a prefix route).
Result<RoutePtr> build(const RouteSpec& r, bool for_delete = false) {
    RoutePtr route(rtnl_route_alloc());
    if (!route) return fail("netlink: out of memory");
    rtnl_route_set_family(route.get(), r.dst.ip.is_v4() ? AF_INET : AF_INET6);
    CNI_TRY_ASSIGN(auto dst, to_nl_addr(r.dst.masked()));
    rtnl_route_set_dst(route.get(), dst.get());
    rtnl_route_set_table(route.get(), r.table);
    if (for_delete) {
        rtnl_route_set_scope(route.get(), RT_SCOPE_NOWHERE);
        rtnl_route_set_protocol(route.get(), RTPROT_UNSPEC);  // libnl's default is "static"
    } else {
        rtnl_route_set_scope(route.get(), std::uint8_t(r.scope));
        rtnl_route_set_protocol(route.get(), std::uint8_t(r.protocol));
        rtnl_route_set_type(route.get(), std::uint8_t(r.type));
    }
    if (r.metric) rtnl_route_set_priority(route.get(), r.metric);
    if (r.src) {
        CNI_TRY_ASSIGN(auto src, to_nl_addr(*r.src));
        rtnl_route_set_pref_src(route.get(), src.get());
    }
    if (r.mtu) rtnl_route_set_metric(route.get(), RTAX_MTU, r.mtu);
    if (r.advmss) rtnl_route_set_metric(route.get(), RTAX_ADVMSS, r.advmss);
    auto add_hop = [&route](const NextHop& hop, bool weighted) -> Status {
        rtnl_nexthop* nh = rtnl_route_nh_alloc();
        if (!nh) return fail("netlink: out of memory");
        if (hop.oif) rtnl_route_nh_set_ifindex(nh, hop.oif);
        if (weighted) rtnl_route_nh_set_weight(nh, std::uint8_t(hop.weight - 1));
        if (hop.gw) {
            auto gw = to_nl_addr(*hop.gw);
            if (!gw) {
                rtnl_route_nh_free(nh);
                return cni::Unexpected(gw.error());
            }
            rtnl_route_nh_set_gateway(nh, gw->get());
        }
        rtnl_route_add_nexthop(route.get(), nh);  // the route owns it now
        return {};
    };
    if (r.oif || r.gw) CNI_TRY(add_hop(NextHop{r.gw, r.oif, 1}, false));
    for (auto& hop : r.multipath) {
        if (hop.weight < 1 || hop.weight > 256) return fail("route " + describe(r) + ": weight must be 1-256");
        CNI_TRY(add_hop(hop, true));
    }
    return route;
}

}  // namespace

std::string describe(const RouteSpec& r) {
    std::string s = r.dst.masked().str();
    if (r.gw) s += " via " + r.gw->str();
    if (r.oif) s += " dev #" + std::to_string(r.oif);
    if (r.src) s += " src " + r.src->str();
    for (auto& hop : r.multipath) {
        s += " nexthop";
        if (hop.gw) s += " via " + hop.gw->str();
        if (hop.oif) s += " dev #" + std::to_string(hop.oif);
        if (hop.weight != 1) s += " weight " + std::to_string(hop.weight);
    }
    if (r.table != RT_TABLE_MAIN) s += " table " + std::to_string(r.table);
    return s;
}

Status add_route(const Socket& s, const RouteSpec& r) {
    CNI_TRY_ASSIGN(auto route, build(r));
    return s.check(rtnl_route_add(s.get(), route.get(), NLM_F_CREATE | NLM_F_EXCL), "adding route " + describe(r));
}

Result<bool> add_route_if_absent(const Socket& s, const RouteSpec& r) {
    CNI_TRY_ASSIGN(auto route, build(r));
    int err = rtnl_route_add(s.get(), route.get(), NLM_F_CREATE | NLM_F_EXCL);
    if (err == -NLE_EXIST) {
        (void)s.check(0, "");
        return false;
    }
    CNI_TRY(s.check(err, "adding route " + describe(r)));
    return true;
}

Status replace_route(const Socket& s, const RouteSpec& r) {
    CNI_TRY_ASSIGN(auto route, build(r));
    return s.check(rtnl_route_add(s.get(), route.get(), NLM_F_CREATE | NLM_F_REPLACE), "replacing route " + describe(r));
}

Result<bool> del_route(const Socket& s, const RouteSpec& r) {
    CNI_TRY_ASSIGN(auto route, build(r, true));
    int err = rtnl_route_delete(s.get(), route.get(), 0);
    if (err == -NLE_OBJ_NOTFOUND || err == -NLE_NOADDR || err == -NLE_FAILURE) {
        (void)s.check(0, "");
        return false;
    }
    CNI_TRY(s.check(err, "deleting route " + describe(r)));
    return true;
}

Result<std::optional<int>> default_route_link(const Socket& s) {
    for (int family : {AF_INET, AF_INET6}) {
        CNI_TRY_ASSIGN(auto routes, list_routes(s, family));
        for (auto& r : routes)
            if (r.dst.prefix == 0 && r.oif) return std::optional<int>(r.oif);
    }
    return std::optional<int>{};
}

namespace {

// A route from the kernel as a RouteSpec; nothing for one without a destination.
std::optional<RouteSpec> spec_of(rtnl_route* rt) {
    auto dst = from_nl_addr(rtnl_route_get_dst(rt));
    if (!dst) return std::nullopt;
    RouteSpec r;
    r.dst = *dst;
    r.type = rtnl_route_get_type(rt);
    r.table = rtnl_route_get_table(rt);
    r.scope = rtnl_route_get_scope(rt);
    r.metric = rtnl_route_get_priority(rt);
    r.protocol = rtnl_route_get_protocol(rt);
    if (auto src = from_nl_addr(rtnl_route_get_pref_src(rt))) r.src = src->ip;
    for (int i = 0, n = rtnl_route_get_nnexthops(rt); i < n; ++i) {
        rtnl_nexthop* nh = rtnl_route_nexthop_n(rt, i);
        NextHop hop{std::nullopt, rtnl_route_nh_get_ifindex(nh), rtnl_route_nh_get_weight(nh) + 1};
        if (auto gw = from_nl_addr(rtnl_route_nh_get_gateway(nh))) hop.gw = gw->ip;
        if (n == 1) {
            r.gw = hop.gw;
            r.oif = hop.oif;
        } else {
            r.multipath.push_back(hop);
        }
    }
    return r;
}

std::vector<RouteSpec> specs_of(nl_cache* cache, std::optional<std::uint32_t> table) {
    std::vector<RouteSpec> out;
    for (nl_object* o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
        auto* rt = reinterpret_cast<rtnl_route*>(o);
        if (rtnl_route_get_type(rt) != RTN_UNICAST || (table && rtnl_route_get_table(rt) != *table)) continue;
        if (auto r = spec_of(rt)) out.push_back(std::move(*r));
    }
    return out;
}

// Asks for strict checking of this socket's requests (`on`) or none: a strict dump request
// carries a filter the kernel applies, and libnl's own dump requests are not strict-clean.
void strict(nl_sock* sk, int on) { (void)::setsockopt(nl_socket_get_fd(sk), SOL_NETLINK, NETLINK_GET_STRICT_CHK, &on, sizeof on); }

// A dump that fails as it starts (a filter naming no link) ends in NLMSG_DONE carrying the
// error, which libnl does not read: this keeps it.
int on_done(nl_msg* msg, void* arg) {
    nlmsghdr* h = nlmsg_hdr(msg);
    if (nlmsg_datalen(h) >= int(sizeof(int))) std::memcpy(arg, nlmsg_data(h), sizeof(int));
    return NL_STOP;
}

// `ip route get` of `dst` (rules and tables included), with RTM_F_* `flags`; nothing when the
// kernel finds no route (or gives no answer).
std::optional<libnl::CachePtr> lookup(const Socket& s, const net::IpAddr& dst, unsigned flags) {
    auto ask = [&dst, flags](nl_sock* sk, nl_cache** out) {
        nl_cache* cache = nullptr;
        if (int rc = nl_cache_alloc_name("route/route", &cache); rc < 0) return rc;
        libnl::MsgPtr msg(nlmsg_alloc_simple(RTM_GETROUTE, 0));
        rtmsg rtm{};
        const bool v4 = dst.is_v4();
        rtm.rtm_family = v4 ? AF_INET : AF_INET6;
        rtm.rtm_dst_len = v4 ? 32 : 128;
        rtm.rtm_flags = flags;
        int rc = msg ? nlmsg_append(msg.get(), &rtm, sizeof rtm, NLMSG_ALIGNTO) : -NLE_NOMEM;
        if (rc >= 0) rc = nla_put(msg.get(), RTA_DST, v4 ? 4 : 16, v4 ? &dst.bytes()[12] : dst.bytes().data());
        // The answer, then the ack: read both, or the ack would answer the socket's next request
        // (a failed lookup gets an error instead of both).
        if (rc >= 0) rc = nl_send_auto(sk, msg.get());
        if (rc >= 0) rc = nl_cache_pickup(sk, cache);
        if (rc >= 0) rc = nl_wait_for_ack(sk);
        if (rc < 0) {
            nl_cache_free(cache);
            return rc;
        }
        *out = cache;
        return 0;
    };
    auto cache = s.dump(ask, "looking up the route to " + dst.str());
    if (!cache) return std::nullopt;
    return std::move(*cache);
}

}  // namespace

std::optional<int> route_get_link(const Socket& s, const net::IpAddr& dst) {
    auto cache = lookup(s, dst, 0);
    if (!cache) return std::optional<int>{};  // unreachable (or no answer): no link, as the reference's RouteGet use
    for (nl_object* o = nl_cache_get_first(cache->get()); o; o = nl_cache_get_next(o)) {
        auto* rt = reinterpret_cast<rtnl_route*>(o);
        if (rtnl_route_get_nnexthops(rt) > 0)
            if (int oif = rtnl_route_nh_get_ifindex(rtnl_route_nexthop_n(rt, 0)); oif > 0) return std::optional<int>(oif);
    }
    return std::optional<int>{};
}

std::optional<RouteSpec> route_to(const Socket& s, const net::IpAddr& dst) {
    auto cache = lookup(s, dst, RTM_F_FIB_MATCH);
    if (!cache) return std::nullopt;
    nl_object* o = nl_cache_get_first(cache->get());
    return o ? spec_of(reinterpret_cast<rtnl_route*>(o)) : std::nullopt;
}

Result<std::vector<RouteSpec>> list_routes(const Socket& s, int family, std::optional<std::uint32_t> table) {
    CNI_TRY_ASSIGN(auto cache, s.dump([family](nl_sock* sk, nl_cache** c) { return rtnl_route_alloc_cache(sk, family, 0, c); },
                                      "listing routes"));
    return specs_of(cache.get(), table);
}

Result<std::vector<RouteSpec>> list_routes_via(const Socket& s, int family, int oif, std::uint32_t table) {
    auto filtered = [family, oif, table](nl_sock* sk, nl_cache** out) {
        nl_cache* cache = nullptr;
        if (int rc = nl_cache_alloc_name("route/route", &cache); rc < 0) return rc;
        libnl::MsgPtr msg(nlmsg_alloc_simple(RTM_GETROUTE, NLM_F_DUMP));
        rtmsg rtm{};
        rtm.rtm_family = std::uint8_t(family);
        int rc = msg ? nlmsg_append(msg.get(), &rtm, sizeof rtm, NLMSG_ALIGNTO) : -NLE_NOMEM;
        if (rc >= 0) rc = nla_put_u32(msg.get(), RTA_TABLE, table);
        if (rc >= 0) rc = nla_put_u32(msg.get(), RTA_OIF, std::uint32_t(oif));
        int done = 0;
        strict(sk, 1);
        nl_socket_modify_cb(sk, NL_CB_FINISH, NL_CB_CUSTOM, on_done, &done);
        if (rc >= 0) rc = nl_send_auto(sk, msg.get());
        if (rc >= 0) rc = nl_cache_pickup(sk, cache);
        nl_socket_modify_cb(sk, NL_CB_FINISH, NL_CB_DEFAULT, nullptr, nullptr);
        strict(sk, 0);
        if (rc >= 0 && done < 0) rc = -nl_syserr2nlerr(-done);
        if (rc < 0) {
            nl_cache_free(cache);
            return rc;
        }
        *out = cache;
        return 0;
    };
    CNI_TRY_ASSIGN(auto cache, s.dump(filtered, "listing the routes over link #" + std::to_string(oif)));
    return specs_of(cache.get(), table);
}

}  // namespace cni::nl
