// SPDX-License-Identifier: Apache-2.0
// Which plugin files this binary runs in-process: a file in CNI_PATH that is this very binary
// (the same inode as /proc/self/exe, through symlinks or hard links) or a launcher `cni-all
// install` wrote beside it (it carries the tag of src/launcher/tag.hpp), found for a plugin type
// that is one of our applets. The dispatcher and `cni-all exec` hand in_process_applet to the
// call's Context, so core's delegation (ipam::invoke) knows neither the applet table nor the
// launchers (docs/design.md, Layers).
#pragma once

#include <string>
#include <string_view>

#include "core/applet.hpp"

namespace cni {

bool is_self_exe(const std::string& path);

// The applet that runs plugin `type`, found at `path`, in-process; null to exec the file.
const Applet* in_process_applet(std::string_view type, const std::string& path);

}  // namespace cni
