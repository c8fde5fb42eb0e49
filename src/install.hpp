// SPDX-License-Identifier: Apache-2.0
// `cni-all install DIR [--applets a,b] [--skip x,y] [--force]`: put this binary into DIR as
// cni-all and, beside it, one launcher per applet (src/launcher/launcher.cpp): a tiny program
// of its own under the applet's name that runs the cni-all next to it. Other installers copying
// a plugin of the same name (cp, cp -f, install, tar -x, write-then-rename) then replace that
// applet only, never cni-all and with it every applet, as they would through a symlink
// (docs/install.md). Where this build has no launcher (neither x86-64 nor arm64) the applets are
// symlinks.
// Idempotent; replaces symlinks and our own older launchers, refuses anything else unless
// --force; one line per action on `out`.
#pragma once

#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace cni {

struct InstallOptions {
    std::string dir;
    std::vector<std::string_view> only, skip;  // applet names; empty `only` means all
    bool force = false;
    bool help = false;
};

inline constexpr const char* kInstallUsage =
    "usage: cni-all install DIR [--applets a,b,...] [--skip x,y,...] [--force]\n"
    "  Installs cni-all into DIR and, beside it, one launcher per applet: a small program named\n"
    "  after the applet that runs DIR/cni-all. Another installer copying its own plugin over an\n"
    "  applet's name replaces that applet only.\n"
    "  --applets  only these applets\n"
    "  --skip     all applets but these (whatever is at their names stays)\n"
    "  --force    replace files at applet names that are neither symlinks nor cni-all launchers\n";

Result<InstallOptions> parse_install_args(std::span<const std::string> args);
int install_applets(const InstallOptions& o, std::FILE* out, std::FILE* err);

}  // namespace cni
