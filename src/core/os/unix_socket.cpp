// SPDX-License-Identifier: Apache-2.0
// Unix socket addresses and connects (see unix_socket.hpp).
#include "core/os/unix_socket.hpp"

#include <cerrno>
#include <cstddef>
#include <cstring>

namespace cni::os {

std::optional<UnixAddress> unix_address(std::string_view where) {
    UnixAddress a;
    if (where.empty() || where.size() >= sizeof a.sa.sun_path) return std::nullopt;
    a.sa.sun_family = AF_UNIX;
    std::memcpy(a.sa.sun_path, where.data(), where.size());
    const bool abstract = where[0] == '@';
    if (abstract) a.sa.sun_path[0] = '\0';
    a.len = socklen_t(offsetof(sockaddr_un, sun_path) + where.size() + (abstract ? 0 : 1));
    return a;
}

cni::Expected<UniqueFd, int> connect_unix(std::string_view where) {
    auto addr = unix_address(where);
    if (!addr) return cni::Unexpected(ENAMETOOLONG);
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) return cni::Unexpected(errno);
    if (::connect(fd.get(), addr->get(), addr->len) != 0) return cni::Unexpected(errno);
    return fd;
}

int send_all(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
        ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno;
        bytes.remove_prefix(std::size_t(n));
    }
    return 0;
}

cni::Expected<std::string, int> recv_all(int fd, std::size_t limit) {
    std::string out;
    char buf[65536];
    for (;;) {
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno != ECONNRESET) return cni::Unexpected(errno);
        if (n <= 0) return out;
        if (out.size() + std::size_t(n) > limit) return cni::Unexpected(EMSGSIZE);
        out.append(buf, std::size_t(n));
    }
}

}  // namespace cni::os
