// SPDX-License-Identifier: Apache-2.0
// Address dumps over libnl-route (see addr.hpp).
#include "core/nl/addr.hpp"

#include <cstring>

namespace cni::nl {

Result<std::vector<AddrInfo>> list_addrs(const Socket& s, int ifindex, int family) {
    nl_cache* raw = nullptr;
    if (int err = rtnl_addr_alloc_cache(s.get(), &raw); err < 0) return std::unexpected(nl_error("listing addresses", err));
    CachePtr cache(raw);
    std::vector<AddrInfo> out;
    for (nl_object* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o)) {
        auto* a = reinterpret_cast<rtnl_addr*>(o);
        if (rtnl_addr_get_ifindex(a) != ifindex) continue;
        int fam = rtnl_addr_get_family(a);
        if (family != AF_UNSPEC && fam != family) continue;
        nl_addr* local = rtnl_addr_get_local(a);
        if (!local) continue;
        std::array<std::uint8_t, 16> b{};
        int bits;
        if (fam == AF_INET) {
            b[10] = b[11] = 0xff;
            std::memcpy(&b[12], nl_addr_get_binary_addr(local), 4);
            bits = 32;
        } else if (fam == AF_INET6) {
            std::memcpy(b.data(), nl_addr_get_binary_addr(local), 16);
            bits = 128;
        } else {
            continue;
        }
        out.push_back(AddrInfo{IpNet{IpAddr::from_bytes(b), int(nl_addr_get_prefixlen(local)), bits},
                               rtnl_addr_get_scope(a), rtnl_addr_get_flags(a)});
    }
    return out;
}

}  // namespace cni::nl
