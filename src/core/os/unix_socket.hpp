// SPDX-License-Identifier: Apache-2.0
// Unix stream sockets by path: the address (a filesystem path, or "@name" for an abstract
// socket) and a connected, close-on-exec socket, for the dhcp daemon's socket and the D-Bus
// system bus alike. A failed connect, send or receive gives its errno, so callers word it as their
// protocol does.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>

#include "core/expected.hpp"
#include <optional>
#include <string>
#include <string_view>

#include "core/os/unique_fd.hpp"

namespace cni::os {

struct UnixAddress {
    sockaddr_un sa{};
    socklen_t len = 0;
    const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&sa); }
};

// nullopt when the name does not fit sun_path.
std::optional<UnixAddress> unix_address(std::string_view where);

// A new stream socket connected to `where`, or the errno of the failure (ENAMETOOLONG when the
// name does not fit).
cni::Expected<UniqueFd, int> connect_unix(std::string_view where);

// All of `bytes`, retrying short and interrupted sends: 0, or the errno of the failure. A peer
// that has gone gives EPIPE, never a SIGPIPE.
int send_all(int fd, std::string_view bytes);

// Everything the peer sends until it ends the stream, or the errno of a failure (EMSGSIZE past
// `limit` bytes). A peer that closes with some of what we sent unread ends the stream too
// (Linux reports it as ECONNRESET once its data is read): what it sent is complete.
cni::Expected<std::string, int> recv_all(int fd, std::size_t limit);

}  // namespace cni::os
