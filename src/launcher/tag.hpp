// SPDX-License-Identifier: Apache-2.0
// The tag inside every launcher (launcher.cpp): a fixed text, then the applet's name in a
// zero-padded field that `cni-all install` fills in when it writes the launcher for an applet.
// The text also tells a launcher file apart from any other program (is_self_exe,
// src/in_process.hpp), so in-process delegation works through launchers as it did through
// symlinks. Freestanding: the launcher includes it too.
#pragma once

namespace cni::launcher {

inline constexpr char kTagText[] = "cni-all launcher v1 applet=";
inline constexpr unsigned long kTagTextSize = sizeof kTagText - 1;
inline constexpr unsigned long kNameSize = 64;  // the longest applet name is far shorter
inline constexpr unsigned long kMaxFileSize = 64 * 1024;  // a launcher is a few KiB

}  // namespace cni::launcher
