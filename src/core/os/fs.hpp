// SPDX-License-Identifier: Apache-2.0
// Small file-system helpers: directory creation as Go's os.MkdirAll does it (every missing
// parent too, an existing directory is fine, an existing non-directory is an error), and
// reading a whole small file with the errno text Go prints ("open <path>: no such file ..."),
// whole-buffer reads and writes on descriptors, and file writes (in place, or atomically
// through a temporary file and rename so readers never see a torn file).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "core/result.hpp"

namespace cni::os {

Status mkdir_all(const std::string& path, mode_t mode);
Result<std::string> read_file(const std::string& path);
// The same, with nothing for a file that does not exist (any other failure is an error).
Result<std::optional<std::string>> read_file_if_exists(const std::string& path);

// Go filepath.Abs: a relative path joined to the working directory.
std::string absolute_path(const std::string& path);

// Retries short writes and EINTR. `path`, if given, names the file in errors ("write /x: ...").
Status write_all(int fd, std::string_view data, std::string_view path = "");
// Everything up to EOF; more than `limit` bytes is an error ("read /x: ..." with `path`).
Result<std::string> read_all(int fd, std::size_t limit, std::string_view path = "");
Status write_file(const std::string& path, std::string_view data, mode_t mode);  // truncates
Status write_file_atomic(const std::string& path, std::string_view data, mode_t mode);

}  // namespace cni::os
