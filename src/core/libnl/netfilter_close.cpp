// SPDX-License-Identifier: Apache-2.0
// The late close of netfilter sockets (netfilter_close.hpp). The state is the process's: one
// dispatcher scope at most, and the descriptors it keeps (bounded; beyond that a socket closes
// now and waits).
#include "core/libnl/netfilter_close.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <vector>

#include "core/os/close_fds.hpp"

namespace cni::libnl {

namespace {

constexpr std::size_t kMaxKept = 64;

struct State {
    bool scope = false;
    bool deleted = false;
    std::vector<int> kept;
};

State& state() {
    static State s;
    return s;
}

// In the child: every descriptor but the kept ones and the read end of `parent_done` first (a
// lock or the runtime's pipe must not outlive the plugin); then, once the parent has closed its
// copies (the pipe's end), the kept ones, whose release is where the wait is.
[[noreturn]] void close_all_then_exit(std::vector<int> kept, int parent_done) {
    kept.push_back(parent_done);
    os::close_all_except(std::move(kept));
    char c;
    while (::read(parent_done, &c, 1) < 0 && errno == EINTR) {
    }
    ::close_range(0, UINT_MAX, 0);
    ::_exit(0);
}

}  // namespace

void free_netfilter_socket(nl_sock* sk) {
    auto& s = state();
    if (sk && s.scope && s.deleted && s.kept.size() < kMaxKept) {
        int fd = ::fcntl(nl_socket_get_fd(sk), F_DUPFD_CLOEXEC, 3);
        if (fd >= 0) s.kept.push_back(fd);
    }
    nl_socket_free(sk);
}

void note_netfilter_deletion() { state().deleted = true; }

LateNetfilterClose::LateNetfilterClose() {
    state() = State{};
    state().scope = true;
}

LateNetfilterClose::~LateNetfilterClose() {
    auto kept = std::move(state().kept);
    state() = State{};
    if (kept.empty()) return;
    int done[2];
    if (::pipe2(done, O_CLOEXEC) == 0) {
        pid_t child = ::fork();
        if (child == 0) close_all_then_exit(std::move(kept), done[0]);
        ::close(done[0]);
        // The child holds them now (or fork failed, and these closes wait as they would have);
        // the end of the pipe tells it that its copies are the last.
        for (int fd : kept) ::close(fd);
        ::close(done[1]);
        return;
    }
    for (int fd : kept) ::close(fd);
}

}  // namespace cni::libnl
