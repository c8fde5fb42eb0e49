// SPDX-License-Identifier: Apache-2.0
// Owning pointers for libnl objects (docs/design.md, principle 6): applet code never calls
// *_put/_free.
#pragma once

#include <netlink/cache.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>

#include <memory>

namespace cni::libnl {

template <auto Free>
struct Deleter {
    template <class T>
    void operator()(T* p) const { Free(p); }
};

using SockPtr = std::unique_ptr<nl_sock, Deleter<nl_socket_free>>;
using LinkPtr = std::unique_ptr<rtnl_link, Deleter<rtnl_link_put>>;
using AddrPtr = std::unique_ptr<rtnl_addr, Deleter<rtnl_addr_put>>;
using CachePtr = std::unique_ptr<nl_cache, Deleter<nl_cache_free>>;
using NlAddrPtr = std::unique_ptr<nl_addr, Deleter<nl_addr_put>>;
using MsgPtr = std::unique_ptr<nl_msg, Deleter<nlmsg_free>>;

}  // namespace cni::libnl
