// SPDX-License-Identifier: Apache-2.0
// Running another program with given stdin bytes and environment, collecting stdout, stderr and
// the exit status (what Go's invoke.RawExec does for delegated plugins). A poll loop feeds stdin
// while draining both outputs so large configs or chatty plugins cannot deadlock; "text file
// busy" is retried like the reference (6 tries, 1 s apart).
#pragma once

#include <string>
#include <vector>

#include "core/result.hpp"

namespace cni::os {

struct ExecOutput {
    int status = 0;        // raw wait status
    std::string out, err;
    bool ok() const;
    std::string status_text() const;  // Go's *exec.ExitError text: "exit status 1", "signal: killed"
};

Result<ExecOutput> run_process(const std::string& path, const std::vector<std::string>& env, std::string_view input);

}  // namespace cni::os
