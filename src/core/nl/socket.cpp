// SPDX-License-Identifier: Apache-2.0
// Route netlink sockets (see socket.hpp).
#include "core/nl/socket.hpp"

#include <netlink/errno.h>

namespace cni::nl {

Error nl_error(std::string_view what, int nl_err) {
    return Error{code::internal, std::string(what) + ": " + nl_geterror(nl_err), {}};
}

Result<Socket> Socket::open() {
    SockPtr s(nl_socket_alloc());
    if (!s) return fail("netlink: cannot allocate socket");
    if (int err = nl_connect(s.get(), NETLINK_ROUTE); err < 0) return std::unexpected(nl_error("netlink: connect", err));
    return Socket(std::move(s));
}

Result<Socket> Socket::open_in(const os::Netns& ns) {
    CNI_TRY_ASSIGN(auto guard, os::NetnsGuard::enter(ns));
    return open();
}

}  // namespace cni::nl
