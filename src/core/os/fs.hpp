// SPDX-License-Identifier: Apache-2.0
// Small file-system helpers: directory creation as Go's os.MkdirAll does it (every missing
// parent too, an existing directory is fine, an existing non-directory is an error), and
// reading a whole small file with the errno text Go prints ("open <path>: no such file ...").
#pragma once

#include <sys/types.h>

#include <string>

#include "core/result.hpp"

namespace cni::os {

Status mkdir_all(const std::string& path, mode_t mode);
Result<std::string> read_file(const std::string& path);

}  // namespace cni::os
