// SPDX-License-Identifier: Apache-2.0
// Neighbour changes and dumps over libnl-route (see neigh.hpp).
#include "core/nl/neigh.hpp"

#include <netlink/errno.h>
#include <netlink/route/neighbour.h>

#include "core/nl/nl_addr.hpp"

namespace cni::nl {
namespace {

using NeighPtr = std::unique_ptr<rtnl_neigh, libnl::Deleter<rtnl_neigh_put>>;

int family_of(const NeighSpec& n) {
    if (n.family) return n.family;
    return n.ip && !n.ip->is_v4() ? AF_INET6 : AF_INET;
}

Result<NeighPtr> build(const NeighSpec& n) {
    NeighPtr neigh(rtnl_neigh_alloc());
    if (!neigh) return fail("netlink: out of memory");
    if (n.ip) {  // before the family: libnl would refuse an IPv4 remote on an AF_BRIDGE entry
        CNI_TRY_ASSIGN(auto dst, to_nl_addr(*n.ip));
        if (int err = rtnl_neigh_set_dst(neigh.get(), dst.get()); err < 0)
            return fail("neighbour " + describe(n) + ": " + nl_geterror(err));
    }
    rtnl_neigh_set_family(neigh.get(), family_of(n));
    rtnl_neigh_set_ifindex(neigh.get(), n.ifindex);
    rtnl_neigh_set_state(neigh.get(), n.state);
    if (n.flags) rtnl_neigh_set_flags(neigh.get(), n.flags);
    if (!n.mac.empty()) {
        CNI_TRY_ASSIGN(auto mac, mac_to_nl_addr(n.mac));
        rtnl_neigh_set_lladdr(neigh.get(), mac.get());
    }
    return neigh;
}

}  // namespace

std::string describe(const NeighSpec& n) {
    std::string s = n.ip ? n.ip->str() : "";
    if (!n.mac.empty()) s += (s.empty() ? "" : " ") + std::string("lladdr ") + n.mac;
    return s + " dev #" + std::to_string(n.ifindex);
}

Status set_neigh(const Socket& s, const NeighSpec& n) {
    CNI_TRY_ASSIGN(auto neigh, build(n));
    return s.check(rtnl_neigh_add(s.get(), neigh.get(), NLM_F_CREATE | NLM_F_REPLACE), "setting neighbour " + describe(n));
}

Result<bool> del_neigh(const Socket& s, const NeighSpec& n) {
    CNI_TRY_ASSIGN(auto neigh, build(n));
    int err = rtnl_neigh_delete(s.get(), neigh.get(), 0);
    if (err == -NLE_OBJ_NOTFOUND || err == -NLE_NOADDR) {
        (void)s.check(0, "");
        return false;
    }
    CNI_TRY(s.check(err, "deleting neighbour " + describe(n)));
    return true;
}

Result<std::vector<NeighSpec>> list_neighs(const Socket& s, int family, int ifindex) {
    // An AF_UNSPEC dump holds the ARP and ND tables only; forwarding entries need an AF_BRIDGE one.
    auto alloc = [family](nl_sock* sk, nl_cache** out) {
        if (family != AF_BRIDGE) return rtnl_neigh_alloc_cache(sk, out);
        nl_cache* c = nl_cache_alloc_name("route/neigh", out) == 0 ? *out : nullptr;
        if (!c) return -NLE_NOMEM;
        nl_cache_set_arg1(c, AF_BRIDGE);
        int err = nl_cache_refill(sk, c);
        if (err < 0) {
            nl_cache_free(c);
            *out = nullptr;
        }
        return err;
    };
    CNI_TRY_ASSIGN(auto cache, s.dump(alloc, "listing neighbours"));
    std::vector<NeighSpec> out;
    for (nl_object* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o)) {
        auto* ne = reinterpret_cast<rtnl_neigh*>(o);
        if (rtnl_neigh_get_family(ne) != family) continue;
        if (ifindex && rtnl_neigh_get_ifindex(ne) != ifindex) continue;
        NeighSpec n;
        n.family = family;
        n.ifindex = rtnl_neigh_get_ifindex(ne);
        if (auto dst = from_nl_addr(rtnl_neigh_get_dst(ne))) n.ip = dst->ip;
        n.mac = mac_text(rtnl_neigh_get_lladdr(ne));
        n.state = rtnl_neigh_get_state(ne);
        n.flags = rtnl_neigh_get_flags(ne);
        out.push_back(std::move(n));
    }
    return out;
}

}  // namespace cni::nl
