// SPDX-License-Identifier: Apache-2.0
// Measures one plugin run precisely, without the harness's own overhead: posix_spawn()s the
// program given as argv[1] (argv[0] of the child = argv[1], so applet symlinks dispatch) with
// this process's environment, stdin, stdout and stderr, waits with wait4(), and prints one line
// to stderr: "spawn-timer <exit status> <wall ns> <cpu ns> <max rss KiB>". With `--hostname
// NAME` first, the child runs in a UTS namespace of its own named NAME (a node of its own for
// cluster-ipam's bench): then it is fork()ed, since posix_spawn cannot unshare.
#include <sched.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <ctime>

extern char** environ;

namespace {

// The child of `--hostname`: its own UTS namespace and host name, then the program.
pid_t fork_as_node(const char* hostname, char** argv) {
    pid_t pid = fork();
    if (pid != 0) return pid;
    if (unshare(CLONE_NEWUTS) != 0 || sethostname(hostname, std::strlen(hostname)) != 0) {
        std::perror("spawn-timer: unshare/sethostname");
        _exit(127);
    }
    execve(argv[0], argv, environ);
    std::perror("spawn-timer: execve");
    _exit(127);
}

}  // namespace

int main(int argc, char** argv) {
    const char* hostname = nullptr;
    if (argc >= 3 && std::strcmp(argv[1], "--hostname") == 0) {
        hostname = argv[2];
        argv += 2;
        argc -= 2;
    }
    if (argc < 2) {
        std::fputs("usage: spawn-timer [--hostname NAME] PROGRAM [ARGS...]\n", stderr);
        return 2;
    }
    timespec t0{}, t1{};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = 0;
    if (hostname) {
        pid = fork_as_node(hostname, argv + 1);
        if (pid < 0) {
            std::perror("fork");
            return 2;
        }
    } else if (posix_spawn(&pid, argv[1], nullptr, nullptr, argv + 1, environ) != 0) {
        std::perror("posix_spawn");
        return 2;
    }
    int status = 0;
    rusage ru{};
    wait4(pid, &status, 0, &ru);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long long wall = (t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
    long long cpu = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
                    (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
    std::fprintf(stderr, "spawn-timer %d %lld %lld %ld\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128,
                 wall, cpu, ru.ru_maxrss);
    return 0;
}
