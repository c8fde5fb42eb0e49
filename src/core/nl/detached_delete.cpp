// SPDX-License-Identifier: Apache-2.0
// Deleting a link from a forked child and answering at its announced removal (see
// detached_delete.hpp). The state is the process's: whether a dispatcher scope is open, and a
// count for tests.
#include "core/nl/detached_delete.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>

#include "core/nl/link.hpp"
#include "core/nl/link_watch.hpp"
#include "core/os/close_fds.hpp"
#include "core/os/netns.hpp"
#include "core/os/unique_fd.hpp"

namespace cni::nl {
namespace {

struct State {
    bool scope = false;
    int detached = 0;
};

State& state() {
    static State s;
    return s;
}

// The child's report: what delete_link_now said, with the error's text when it failed. One
// write of at most PIPE_BUF bytes, so the parent reads it whole.
struct Report {
    enum Outcome : std::int32_t { deleted, gone, failed } outcome = failed;
    char text[1020] = {};
};
static_assert(sizeof(Report) <= PIPE_BUF);

// In the child: only its socket and the report's pipe stay open (not the runtime's stdout, not
// a lock); the deletion, its answer, the report, the end.
[[noreturn]] void delete_and_report(const Socket& req, int index, const std::string& name, int report_fd) {
    os::close_all_except({nl_socket_get_fd(req.get()), report_fd});
    Report report;
    auto done = delete_link_now(req, index, name);
    if (done) report.outcome = *done ? Report::deleted : Report::gone;
    else std::strncpy(report.text, done.error().msg.c_str(), sizeof report.text - 1);
    ::signal(SIGPIPE, SIG_IGN);  // the parent has usually stopped listening
    (void)!::write(report_fd, &report, sizeof report);
    ::_exit(0);
}

// The parent's reading of the child's report: nullopt when the child died without one.
std::optional<Result<bool>> read_report(int fd) {
    Report report;
    ssize_t n;
    do n = ::read(fd, &report, sizeof report);
    while (n < 0 && errno == EINTR);
    if (n != ssize_t(sizeof report)) return std::nullopt;
    if (report.outcome == Report::deleted) return Result<bool>(true);
    if (report.outcome == Report::gone) return Result<bool>(false);
    report.text[sizeof report.text - 1] = '\0';
    return Result<bool>(fail(std::string(report.text)));
}

}  // namespace

DetachedLinkDeletes::DetachedLinkDeletes() { state().scope = true; }

DetachedLinkDeletes::~DetachedLinkDeletes() { state().scope = false; }

int detached_deletions() { return state().detached; }

std::optional<Result<bool>> delete_link_detached(const Socket& s, int index, const std::string& name) {
    if (!state().scope) return std::nullopt;
    // The watch and the child's socket are opened in the link's namespace, whichever namespace
    // this thread is in.
    auto ns = os::Netns::of_socket(nl_socket_get_fd(s.get()));
    if (!ns) return std::nullopt;
    std::optional<LinkWatch> watch;
    std::optional<Socket> req;
    {
        auto guard = os::NetnsGuard::enter(*ns);
        if (!guard) return std::nullopt;
        auto w = LinkWatch::open();
        auto r = Socket::open();
        if (!w || !r) return std::nullopt;
        watch.emplace(std::move(*w));
        req.emplace(std::move(*r));
    }
    int ends[2];
    if (::pipe2(ends, O_CLOEXEC) != 0) return std::nullopt;
    os::UniqueFd report(ends[0]), report_write(ends[1]);
    pid_t child = ::fork();
    if (child < 0) return std::nullopt;
    if (child == 0) delete_and_report(*req, index, name, report_write.get());
    report_write.reset();
    req.reset();
    ++state().detached;
    auto announced = watch->wait_deleted(index, report.get());
    if (announced && *announced) {
        // Behind the deletion's RTNL section: once this finds nothing, only the kernel's freeing
        // of the device is left to the child.
        auto still = find_link(s, index);
        if (still && !*still) return Result<bool>(true);
    }
    return read_report(report.get());
}

}  // namespace cni::nl
