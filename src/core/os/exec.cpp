// SPDX-License-Identifier: Apache-2.0
// fork+exec with piped stdin/stdout/stderr, PATH lookup (see exec.hpp).
#include "core/os/exec.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "core/os/errno_error.hpp"
#include "core/os/unique_fd.hpp"
#include "core/strings.hpp"

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

// What the child reports through its close-on-exec pipe when it could not run the program.
struct ChildFailure {
    int step = 0;  // kExec or kLabel
    int error = 0;
};
constexpr int kExec = 1, kLabel = 2;
constexpr const char* kExecAttr = "/proc/thread-self/attr/exec";

// The child's argv and envp, made before fork: after it, only async-signal-safe calls.
struct ChildArgs {
    std::vector<char*> argv, envp;
    explicit ChildArgs(const Program& p) : argv{const_cast<char*>(p.path.c_str())} {
        for (auto& a : p.args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        for (auto& e : p.env) envp.push_back(const_cast<char*>(e.c_str()));
        envp.push_back(nullptr);
    }
};

// The child's stdin, stdout and stderr, and the close-on-exec pipe it reports a failure on.
struct ChildPipes {
    Pipe in, out, err, report;
    static Result<ChildPipes> make() {
        CNI_TRY_ASSIGN(auto in, Pipe::make());
        CNI_TRY_ASSIGN(auto out, Pipe::make());
        CNI_TRY_ASSIGN(auto err, Pipe::make());
        CNI_TRY_ASSIGN(auto report, Pipe::make());
        return ChildPipes{std::move(in), std::move(out), std::move(err), std::move(report)};
    }
};

// In the child: the pipes as stdio, every other descriptor closed on exec, the SELinux label
// written, the program run; what kept it from running goes to the report pipe.
[[noreturn]] void run_child(const Program& p, const ChildArgs& a, const ChildPipes& pipes) {
    ::signal(SIGPIPE, SIG_DFL);  // an ignored disposition would survive execve
    ::dup2(pipes.in.r.get(), 0);
    ::dup2(pipes.out.w.get(), 1);
    ::dup2(pipes.err.w.get(), 2);
    ::syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
    ChildFailure f{kExec, 0};
    const std::string& label = p.selinux_exec_label;
    if (!label.empty()) {
        int fd = ::open(kExecAttr, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || ::write(fd, label.data(), label.size()) != ssize_t(label.size())) f = {kLabel, errno};
        if (fd >= 0) ::close(fd);
    }
    if (f.step == kExec) {
        ::execve(p.path.c_str(), a.argv.data(), a.envp.data());
        f.error = errno;
    }
    [[maybe_unused]] auto n = ::write(pipes.report.w.get(), &f, sizeof f);
    ::_exit(127);
}

// The parent's side of the pipes: `input` fed to the child's stdin while its stdout and stderr
// are drained into `res`, until both close. More than kMaxOutputBytes on either kills the child
// (returns true). A child that exits without reading all of stdin cannot kill us with SIGPIPE.
bool exchange(pid_t pid, std::string_view input, ChildPipes& pipes, ExecOutput& res) {
    UniqueFd &in = pipes.in.w, &out = pipes.out.r, &err = pipes.err.r;
    bool too_much = false;
    std::size_t written = 0;
    if (input.empty()) in.reset();
    struct sigaction ignore{}, previous{};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ignore, &previous);
    auto drain = [&](UniqueFd& fd, std::string& sink) {
        char buf[65536];
        ssize_t r = ::read(fd.get(), buf, sizeof buf);
        if (r > 0 && sink.size() + std::size_t(r) > kMaxOutputBytes) {
            too_much = true;
            ::kill(pid, SIGKILL);
            out.reset();
            err.reset();
            in.reset();
        } else if (r > 0) {
            sink.append(buf, std::size_t(r));
        } else if (r == 0 || errno != EINTR) {
            fd.reset();
        }
    };
    while (out || err) {
        pollfd fds[3];
        int n = 0;
        int idx_in = -1, idx_out = -1, idx_err = -1;
        if (in) { fds[n] = {in.get(), POLLOUT, 0}; idx_in = n++; }
        if (out) { fds[n] = {out.get(), POLLIN, 0}; idx_out = n++; }
        if (err) { fds[n] = {err.get(), POLLIN, 0}; idx_err = n++; }
        if (::poll(fds, nfds_t(n), -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (idx_in >= 0 && fds[idx_in].revents) {
            ssize_t w = ::write(in.get(), input.data() + written, input.size() - written);
            if (w > 0) written += std::size_t(w);
            if (w < 0 || written == input.size()) in.reset();
        }
        if (idx_out >= 0 && fds[idx_out].revents) drain(out, res.out);
        if (idx_err >= 0 && fds[idx_err].revents) drain(err, res.err);
    }
    in.reset();
    ::sigaction(SIGPIPE, &previous, nullptr);
    return too_much;
}

// One attempt; returns what kept the child from running the program through `failure`.
Result<ExecOutput> attempt(const Program& p, ChildFailure& failure) {
    CNI_TRY_ASSIGN(auto pipes, ChildPipes::make());
    const ChildArgs args(p);
    pid_t pid = ::fork();
    if (pid < 0) return sys_fail("fork", p.path);
    if (pid == 0) run_child(p, args, pipes);
    pipes.in.r.reset();
    pipes.out.w.reset();
    pipes.err.w.reset();
    pipes.report.w.reset();

    ExecOutput res;
    bool too_much = exchange(pid, p.input, pipes, res);
    while (::waitpid(pid, &res.status, 0) < 0)
        if (errno != EINTR) return sys_fail("wait", p.path);
    ChildFailure f;
    failure = ::read(pipes.report.r.get(), &f, sizeof f) == sizeof f ? f : ChildFailure{};
    if (too_much) return fail(p.path + " wrote more than " + std::to_string(kMaxOutputBytes >> 20) + " MiB; it was stopped");
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

Result<ExecOutput> run_program(const Program& p) {
    for (int tries = 0;; ++tries) {
        ChildFailure failure;
        CNI_TRY_ASSIGN(auto res, attempt(p, failure));
        if (failure.step == kLabel)
            return fail("failed to set the SELinux exec label \"" + p.selinux_exec_label + "\": write " +
                        std::string(kExecAttr) + ": " + errno_text(failure.error));
        if (failure.error == ETXTBSY && tries < 5) {
            std::this_thread::sleep_for(std::chrono::seconds(1));
            continue;
        }
        if (failure.error != 0) return fail("fork/exec " + p.path + ": " + errno_text(failure.error));
        return res;
    }
}

Result<ExecOutput> run_process(const std::string& path, const std::vector<std::string>& env, std::string_view input) {
    return run_program(Program{path, {}, env, input, {}});
}

Result<std::string> look_path(std::string_view name, std::string_view path_list) {
    for (auto dir : split(path_list, ':')) {
        if (!dir.starts_with('/')) continue;  // Go refuses what a relative entry finds
        std::string full = std::string(dir) + "/" + std::string(name);
        struct stat st{};
        if (::stat(full.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111)) return full;
    }
    return fail("exec: \"" + std::string(name) + "\": executable file not found in $PATH");
}

}  // namespace cni::os
