// SPDX-License-Identifier: Apache-2.0
// The launcher program's bytes, embedded into cni-all (launcher_image.cpp, written by embed.py
// from the program build.py makes of launcher.cpp), which `cni-all install` writes out under each
// applet's name with the name in its tag (tag.hpp). Empty where this build has no launcher.
#pragma once

#include <cstddef>

namespace cni::launcher {

extern const unsigned char kImage[];
extern const std::size_t kImageSize;

}  // namespace cni::launcher
