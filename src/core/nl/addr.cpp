// SPDX-License-Identifier: Apache-2.0
// Address dumps and changes over libnl-route (see addr.hpp).
#include "core/nl/addr.hpp"

#include <netlink/errno.h>

#include <cstring>

#include "core/nl/nl_addr.hpp"

namespace cni::nl {

Result<std::vector<AddrInfo>> list_addrs(const Socket& s, int ifindex, int family) {
    CNI_TRY_ASSIGN(auto cache, s.dump(rtnl_addr_alloc_cache, "listing addresses"));
    std::vector<AddrInfo> out;
    for (nl_object* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o)) {
        auto* a = reinterpret_cast<rtnl_addr*>(o);
        if (rtnl_addr_get_ifindex(a) != ifindex) continue;
        int fam = rtnl_addr_get_family(a);
        if (family != AF_UNSPEC && fam != family) continue;
        auto local = from_nl_addr(rtnl_addr_get_local(a));
        if (!local) continue;
        out.push_back(AddrInfo{*local, rtnl_addr_get_scope(a), rtnl_addr_get_flags(a)});
    }
    return out;
}

namespace {
Result<AddrPtr> build(int ifindex, const IpNet& addr) {
    AddrPtr a(rtnl_addr_alloc());
    if (!a) return fail("netlink: out of memory");
    rtnl_addr_set_ifindex(a.get(), ifindex);
    CNI_TRY_ASSIGN(auto local, to_nl_addr(addr));
    rtnl_addr_set_local(a.get(), local.get());
    if (addr.ip.is_v4() && addr.prefix < 31) {
        CNI_TRY_ASSIGN(auto brd, to_nl_addr(IpNet{addr.last(), 32, 32}));
        rtnl_addr_set_broadcast(a.get(), brd.get());
    }
    return a;
}
}  // namespace

Status add_addr(const Socket& s, int ifindex, const std::string& ifname, const IpNet& addr, unsigned flags, bool replace) {
    CNI_TRY_ASSIGN(auto a, build(ifindex, addr));
    if (flags) rtnl_addr_set_flags(a.get(), flags);
    return s.check(rtnl_addr_add(s.get(), a.get(), NLM_F_CREATE | (replace ? NLM_F_REPLACE : NLM_F_EXCL)),
                   "adding address " + addr.str() + " to " + ifname);
}

Result<bool> del_addr(const Socket& s, int ifindex, const std::string& ifname, const IpNet& addr) {
    CNI_TRY_ASSIGN(auto a, build(ifindex, addr));
    int err = rtnl_addr_delete(s.get(), a.get(), 0);
    if (err == -NLE_NOADDR || err == -NLE_OBJ_NOTFOUND || err == -NLE_NODEV) return false;
    CNI_TRY(s.check(err, "deleting address " + addr.str() + " from " + ifname));
    return true;
}

}  // namespace cni::nl
