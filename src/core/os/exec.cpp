// SPDX-License-Identifier: Apache-2.0
// fork+exec with piped stdin/stdout/stderr (see exec.hpp).
#include "core/os/exec.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "core/os/errno_error.hpp"
#include "core/os/unique_fd.hpp"

namespace cni::os {
namespace {

struct Pipe {
    UniqueFd r, w;
    static Result<Pipe> make() {
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0) return sys_fail("pipe", "");
        return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
    }
};

const char* signal_name(int sig) {
    switch (sig) {
    case SIGKILL: return "killed";
    case SIGTERM: return "terminated";
    case SIGSEGV: return "segmentation fault";
    case SIGABRT: return "aborted";
    case SIGINT: return "interrupt";
    case SIGPIPE: return "broken pipe";
    default: return nullptr;
    }
}

// One attempt; returns the exec errno through `exec_errno` when execve itself failed.
Result<ExecOutput> attempt(const std::string& path, const std::vector<std::string>& env, std::string_view input,
                           int& exec_errno) {
    CNI_TRY_ASSIGN(auto in, Pipe::make());
    CNI_TRY_ASSIGN(auto out, Pipe::make());
    CNI_TRY_ASSIGN(auto err, Pipe::make());
    CNI_TRY_ASSIGN(auto report, Pipe::make());
    std::vector<char*> argv{const_cast<char*>(path.c_str()), nullptr};
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);

    pid_t pid = ::fork();
    if (pid < 0) return sys_fail("fork", path);
    if (pid == 0) {
        ::signal(SIGPIPE, SIG_DFL);  // an ignored disposition would survive execve
        ::dup2(in.r.get(), 0);
        ::dup2(out.w.get(), 1);
        ::dup2(err.w.get(), 2);
        ::execve(path.c_str(), argv.data(), envp.data());
        int e = errno;
        [[maybe_unused]] auto n = ::write(report.w.get(), &e, sizeof e);
        ::_exit(127);
    }
    in.r.reset();
    out.w.reset();
    err.w.reset();
    report.w.reset();

    ExecOutput res;
    std::size_t written = 0;
    if (input.empty()) in.w.reset();
    // A delegate that exits without reading all of stdin must not kill us with SIGPIPE.
    struct sigaction ignore{}, previous{};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ignore, &previous);
    while (out.r || err.r) {
        pollfd fds[3];
        int n = 0;
        int idx_in = -1, idx_out = -1, idx_err = -1;
        if (in.w) { fds[n] = {in.w.get(), POLLOUT, 0}; idx_in = n++; }
        if (out.r) { fds[n] = {out.r.get(), POLLIN, 0}; idx_out = n++; }
        if (err.r) { fds[n] = {err.r.get(), POLLIN, 0}; idx_err = n++; }
        if (::poll(fds, nfds_t(n), -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (idx_in >= 0 && fds[idx_in].revents) {
            ssize_t w = ::write(in.w.get(), input.data() + written, input.size() - written);
            if (w > 0) written += std::size_t(w);
            if (w < 0 || written == input.size()) in.w.reset();
        }
        auto drain = [](UniqueFd& fd, std::string& sink) {
            char buf[65536];
            ssize_t r = ::read(fd.get(), buf, sizeof buf);
            if (r > 0) sink.append(buf, std::size_t(r));
            else if (r == 0 || errno != EINTR) fd.reset();
        };
        if (idx_out >= 0 && fds[idx_out].revents) drain(out.r, res.out);
        if (idx_err >= 0 && fds[idx_err].revents) drain(err.r, res.err);
    }
    in.w.reset();
    ::sigaction(SIGPIPE, &previous, nullptr);
    while (::waitpid(pid, &res.status, 0) < 0)
        if (errno != EINTR) return sys_fail("wait", path);
    int e = 0;
    exec_errno = ::read(report.r.get(), &e, sizeof e) == sizeof e ? e : 0;
    return res;
}

}  // namespace

bool ExecOutput::ok() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

std::string ExecOutput::status_text() const {
    if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) {
        const char* n = signal_name(WTERMSIG(status));
        return std::string("signal: ") + (n ? n : ("signal " + std::to_string(WTERMSIG(status))).c_str());
    }
    return "unknown wait status";
}

Result<ExecOutput> run_process(const std::string& path, const std::vector<std::string>& env, std::string_view input) {
    for (int tries = 0;; ++tries) {
        int exec_errno = 0;
        CNI_TRY_ASSIGN(auto res, attempt(path, env, input, exec_errno));
        if (exec_errno == ETXTBSY && tries < 5) {
            std::this_thread::sleep_for(std::chrono::seconds(1));
            continue;
        }
        if (exec_errno != 0) return fail("fork/exec " + path + ": " + errno_text(exec_errno));
        return res;
    }
}

}  // namespace cni::os
