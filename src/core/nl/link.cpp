// SPDX-License-Identifier: Apache-2.0
// Link lookup and state changes over libnl-route (see link.hpp).
#include "core/nl/link.hpp"

#include <net/if.h>
#include <netlink/errno.h>

#include <cstdio>

namespace cni::nl {

bool LinkInfo::up() const { return (flags & IFF_UP) != 0; }

namespace {
LinkInfo to_info(rtnl_link* l) {
    LinkInfo info;
    info.index = rtnl_link_get_ifindex(l);
    if (const char* n = rtnl_link_get_name(l)) info.name = n;
    info.flags = rtnl_link_get_flags(l);
    info.mtu = int(rtnl_link_get_mtu(l));
    if (nl_addr* a = rtnl_link_get_addr(l)) {
        auto* b = static_cast<const unsigned char*>(nl_addr_get_binary_addr(a));
        for (unsigned i = 0; i < nl_addr_get_len(a); ++i) {
            char buf[4];
            std::snprintf(buf, sizeof buf, i ? ":%02x" : "%02x", b[i]);
            info.mac += buf;
        }
    }
    return info;
}
}  // namespace

Result<std::optional<LinkInfo>> find_link(const Socket& s, const std::string& name) {
    rtnl_link* raw = nullptr;
    int err = rtnl_link_get_kernel(s.get(), 0, name.c_str(), &raw);
    LinkPtr link(raw);
    if (err == -NLE_NODEV || err == -NLE_OBJ_NOTFOUND) return std::optional<LinkInfo>{};
    if (err < 0) return std::unexpected(nl_error("looking up link " + name, err));
    return std::optional<LinkInfo>(to_info(link.get()));
}

Status set_link_up(const Socket& s, const LinkInfo& link, bool up) {
    LinkPtr orig(rtnl_link_alloc()), change(rtnl_link_alloc());
    if (!orig || !change) return fail("netlink: out of memory");
    rtnl_link_set_ifindex(orig.get(), link.index);
    if (up) rtnl_link_set_flags(change.get(), IFF_UP);
    else rtnl_link_unset_flags(change.get(), IFF_UP);
    if (int err = rtnl_link_change(s.get(), orig.get(), change.get(), 0); err < 0)
        return std::unexpected(nl_error(std::string(up ? "setting up " : "setting down ") + link.name, err));
    return {};
}

}  // namespace cni::nl
