// SPDX-License-Identifier: Apache-2.0
// The late close of netfilter sockets (core/libnl/netfilter_close.hpp): inside the dispatcher's
// scope and after a deletion, a freed socket's descriptor is kept and handed to a child at the
// end of the scope; the child lets go of every other descriptor (a pipe's write end, a lock)
// and the parent keeps none. Without the scope, or before a deletion, nothing is kept.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "core/libnl/netfilter_close.hpp"
#include "temp_dir.hpp"

using namespace cni::libnl;

namespace {

NetfilterSockPtr netfilter_socket() {
    NetfilterSockPtr sk(nl_socket_alloc());
    REQUIRE(sk);
    REQUIRE(nl_connect(sk.get(), NETLINK_NETFILTER) == 0);
    return sk;
}

int open_fds() {
    int n = 0;
    for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
    return n;
}

// Whether a read of `fd` sees the end of the pipe within `ms`.
bool eof_within(int fd, int ms) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, ms) != 1) return false;
    char c;
    return ::read(fd, &c, 1) == 0;
}

}  // namespace

TEST_CASE("netfilter sockets close at once without the scope or before any deletion", "[libnl][netfilter]") {
    int before = open_fds();
    { auto sk = netfilter_socket(); }
    CHECK(open_fds() == before);
    {
        LateNetfilterClose scope;
        { auto sk = netfilter_socket(); }
        CHECK(open_fds() == before);  // nothing deleted yet: nothing to wait for
    }
    note_netfilter_deletion();  // outside a scope it changes nothing
    { auto sk = netfilter_socket(); }
    CHECK(open_fds() == before);
}

TEST_CASE("after a deletion the sockets' closes go to a child that lets go of everything else", "[libnl][netfilter]") {
    TempDir dir;
    std::string lock_path = dir / "lock";
    int lock = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    REQUIRE(lock >= 0);
    REQUIRE(::flock(lock, LOCK_EX) == 0);
    int pipe_fds[2];
    REQUIRE(::pipe2(pipe_fds, O_CLOEXEC) == 0);
    int before = open_fds();
    {
        LateNetfilterClose scope;
        note_netfilter_deletion();
        { auto a = netfilter_socket(); }
        { auto b = netfilter_socket(); }
        CHECK(open_fds() == before + 2);  // kept for the child
    }
    CHECK(open_fds() == before);  // the parent keeps none
    // The child had copies of the pipe's write end and of the lock: both are let go.
    ::close(pipe_fds[1]);
    CHECK(eof_within(pipe_fds[0], 2000));
    ::close(lock);
    int other = ::open(lock_path.c_str(), O_RDWR | O_CLOEXEC);
    bool locked = false;
    for (int i = 0; i < 200 && !locked; ++i) {
        locked = ::flock(other, LOCK_EX | LOCK_NB) == 0;
        if (!locked) ::usleep(10000);
    }
    CHECK(locked);
    ::close(other);
    ::close(pipe_fds[0]);
    // The next scope starts with nothing noted.
    int now = open_fds();
    {
        LateNetfilterClose scope;
        { auto sk = netfilter_socket(); }
        CHECK(open_fds() == now);
    }
}
