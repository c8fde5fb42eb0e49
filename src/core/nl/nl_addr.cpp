// SPDX-License-Identifier: Apache-2.0
// IpNet <-> nl_addr (see nl_addr.hpp).
#include "core/nl/nl_addr.hpp"

#include <sys/socket.h>

#include <cstdio>
#include <cstring>

namespace cni::nl {

Result<libnl::NlAddrPtr> to_nl_addr(const net::IpNet& net) {
    bool v4 = net.ip.is_v4();
    const auto& b = net.ip.bytes();
    libnl::NlAddrPtr a(nl_addr_build(v4 ? AF_INET : AF_INET6, v4 ? &b[12] : b.data(), v4 ? 4 : 16));
    if (!a) return fail("netlink: out of memory");
    nl_addr_set_prefixlen(a.get(), unsigned(net.prefix));
    return a;
}

Result<libnl::NlAddrPtr> to_nl_addr(const net::IpAddr& ip) { return to_nl_addr(net::IpNet{ip, ip.bits(), ip.bits()}); }

std::optional<net::IpNet> from_nl_addr(nl_addr* a) {
    if (!a) return std::nullopt;
    std::array<std::uint8_t, 16> b{};
    int fam = nl_addr_get_family(a);
    unsigned len = nl_addr_get_len(a);
    int bits;
    if (fam == AF_INET && len == 4) {
        b[10] = b[11] = 0xff;
        std::memcpy(&b[12], nl_addr_get_binary_addr(a), 4);
        bits = 32;
    } else if (fam == AF_INET6 && len == 16) {
        std::memcpy(b.data(), nl_addr_get_binary_addr(a), 16);
        bits = 128;
    } else if ((fam == AF_INET || fam == AF_INET6) && len == 0) {  // a default route's empty dst
        if (fam == AF_INET) b[10] = b[11] = 0xff;
        bits = fam == AF_INET ? 32 : 128;
    } else {
        return std::nullopt;
    }
    return net::IpNet{net::IpAddr::from_bytes(b), int(nl_addr_get_prefixlen(a)), bits};
}

std::string mac_text(nl_addr* a) {
    std::string out;
    if (!a) return out;
    auto* b = static_cast<const unsigned char*>(nl_addr_get_binary_addr(a));
    for (unsigned i = 0; i < nl_addr_get_len(a); ++i) {
        char buf[4];
        std::snprintf(buf, sizeof buf, i ? ":%02x" : "%02x", b[i]);
        out += buf;
    }
    return out;
}

Result<libnl::NlAddrPtr> mac_to_nl_addr(const std::string& mac) {
    nl_addr* a = nullptr;
    if (nl_addr_parse(mac.c_str(), AF_LLC, &a) < 0) return fail("invalid MAC address " + mac);
    return libnl::NlAddrPtr(a);
}

}  // namespace cni::nl
