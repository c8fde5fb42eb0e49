// SPDX-License-Identifier: Apache-2.0
// `cni-all install DIR [--force]`: put this binary into DIR as cni-all and one relative symlink
// per applet beside it, the way a DaemonSet installs plugins onto a node. Idempotent; refuses to
// replace a file that is not a symlink unless --force; one line per action on `out`.
#pragma once

#include <cstdio>
#include <string>

namespace cni {

int install_applets(const std::string& dir, bool force, std::FILE* out, std::FILE* err);

}  // namespace cni
