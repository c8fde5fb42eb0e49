// SPDX-License-Identifier: Apache-2.0
// Unix stream sockets by path: the address (a filesystem path, or "@name" for an abstract
// socket) and a connected, close-on-exec socket, for the dhcp daemon's socket and the D-Bus
// system bus alike. A failed connect gives its errno, so callers word it as their protocol does.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>

#include "core/expected.hpp"
#include <optional>
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

}  // namespace cni::os
