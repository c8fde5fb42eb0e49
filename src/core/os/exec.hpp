// SPDX-License-Identifier: Apache-2.0
// Running another program with given arguments, stdin bytes and environment, collecting stdout,
// stderr and the exit status (what Go's invoke.RawExec does for delegated plugins, and os/exec
// for the tap's `ip tuntap`). A poll loop feeds stdin while draining both outputs so large configs
// or chatty plugins cannot deadlock; "text file busy" is retried like the reference (6 tries, 1 s
// apart). The child inherits the calling thread's network namespace and no descriptor but 0-2;
// it can be given an SELinux label to run under (setexeccon(3), written in the child only, so the
// caller's later programs keep their own). look_path finds a program by name as Go's does.
#pragma once

#include <string>
#include <vector>

#include "core/result.hpp"

namespace cni::os {

// What a program may print: more on stdout or stderr is an error (the program is killed), as
// more than this on our own stdin is.
inline constexpr std::size_t kMaxOutputBytes = 16u << 20;

struct ExecOutput {
    int status = 0;        // raw wait status
    std::string out, err;
    bool ok() const;
    std::string status_text() const;  // Go's *exec.ExitError text: "exit status 1", "signal: killed"
};

struct Program {
    std::string path;
    std::vector<std::string> args;  // after argv[0], which is `path`
    std::vector<std::string> env;   // KEY=VALUE
    std::string_view input;         // stdin
    std::string selinux_exec_label;  // empty: the caller's own
};

Result<ExecOutput> run_program(const Program& p);

// A program with no arguments (a delegated plugin).
Result<ExecOutput> run_process(const std::string& path, const std::vector<std::string>& env, std::string_view input);

// Go's exec.LookPath for a bare name: the first executable regular file `name` in the absolute
// directories of `path_list` (a PATH value), else `exec: "NAME": executable file not found in $PATH`.
Result<std::string> look_path(std::string_view name, std::string_view path_list);

}  // namespace cni::os
