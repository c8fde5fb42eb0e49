// SPDX-License-Identifier: Apache-2.0
// Address dumps and changes over libnl-route (see addr.hpp).
#include "core/nl/addr.hpp"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netlink/cache.h>
#include <netlink/errno.h>
#include <sys/socket.h>

#include <cstring>

#include "core/nl/nl_addr.hpp"

namespace cni::nl {
namespace {

// One interface's addresses. With NETLINK_GET_STRICT_CHK (Linux 4.20+) the kernel filters the
// dump by index instead of sending every address of the namespace, which on a node with
// hundreds of pods is most of the dump's cost. Strict checking is on for this request only:
// libnl's own dump requests (a bare rtgenmsg) would be refused under it. Kernels without the
// filter send everything, and list_addrs still keeps the interface's only.
int interface_addrs(nl_sock* sk, int ifindex, int family, nl_cache** out) {
    nl_cache* cache = nullptr;
    if (int rc = nl_cache_alloc_name("route/addr", &cache); rc < 0) return rc;
    int fd = nl_socket_get_fd(sk), on = 1, off = 0;
    ::setsockopt(fd, SOL_NETLINK, NETLINK_GET_STRICT_CHK, &on, sizeof on);
    ifaddrmsg req{};
    req.ifa_family = static_cast<unsigned char>(family);
    req.ifa_index = static_cast<unsigned>(ifindex);
    int rc = nl_send_simple(sk, RTM_GETADDR, NLM_F_DUMP, &req, sizeof req);
    if (rc >= 0) rc = nl_cache_pickup(sk, cache);
    ::setsockopt(fd, SOL_NETLINK, NETLINK_GET_STRICT_CHK, &off, sizeof off);
    if (rc < 0) {
        nl_cache_free(cache);
        return rc;
    }
    *out = cache;
    return 0;
}

}  // namespace

Result<std::vector<AddrInfo>> list_addrs(const Socket& s, int ifindex, int family) {
    CNI_TRY_ASSIGN(auto cache, s.dump([&](nl_sock* sk, nl_cache** c) { return interface_addrs(sk, ifindex, family, c); },
                                      "listing addresses"));
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
Result<libnl::AddrPtr> build(int ifindex, const net::IpNet& addr) {
    libnl::AddrPtr a(rtnl_addr_alloc());
    if (!a) return fail("netlink: out of memory");
    rtnl_addr_set_ifindex(a.get(), ifindex);
    CNI_TRY_ASSIGN(auto local, to_nl_addr(addr));
    rtnl_addr_set_local(a.get(), local.get());
    if (addr.ip.is_v4() && addr.prefix < 31) {
        CNI_TRY_ASSIGN(auto brd, to_nl_addr(net::IpNet{addr.last(), 32, 32}));
        rtnl_addr_set_broadcast(a.get(), brd.get());
    }
    return a;
}
}  // namespace

Status add_addr(const Socket& s, int ifindex, const std::string& ifname, const net::IpNet& addr, unsigned flags, bool replace) {
    CNI_TRY_ASSIGN(auto a, build(ifindex, addr));
    if (flags) rtnl_addr_set_flags(a.get(), flags);
    return s.check(rtnl_addr_add(s.get(), a.get(), NLM_F_CREATE | (replace ? NLM_F_REPLACE : NLM_F_EXCL)),
                   "adding address " + addr.str() + " to " + ifname);
}

Result<bool> del_addr(const Socket& s, int ifindex, const std::string& ifname, const net::IpNet& addr) {
    CNI_TRY_ASSIGN(auto a, build(ifindex, addr));
    int err = rtnl_addr_delete(s.get(), a.get(), 0);
    if (err == -NLE_NOADDR || err == -NLE_OBJ_NOTFOUND || err == -NLE_NODEV) return false;
    CNI_TRY(s.check(err, "deleting address " + addr.str() + " from " + ifname));
    return true;
}

}  // namespace cni::nl
