// SPDX-License-Identifier: Apache-2.0
// A node's own folders, marked as such: a folder whose content the node's settings chose and
// whose files one applet trusts (vpc-eni-ipam's ipamDir, vpc-eni's stateDir) holds a marker
// file, root's, naming whose folder it is. A folder a network config chooses (host-local's
// dataDir, which a tenant may write) must not be, nor lie in, a marked folder: the question is
// asked of the folder's real ancestors (".." from an opened folder, or from the longest part of a
// path that exists, symbolic links followed as a later mkdir and open would follow them), never
// of the path's text. A marker that someone other than root (or we) owns does not count, so no
// one can mark /tmp. docs/compatibility.md (host-local) says which folders are marked.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/os/fs.hpp"

namespace cni::os {

inline constexpr const char* kNodeFolderMarker = ".cni-all-node-folder";

// Marks `dir` as the node's, its marker's text `whose` ("vpc-eni-ipam's ipamDir"); nothing to
// do when it is marked already.
Status mark_node_folder(const Dir& dir, std::string_view whose);

// The marker's text of the first marked folder among `dir_fd` (an opened folder) and its
// ancestors up to "/", or nothing.
std::optional<std::string> node_folder_around(int dir_fd);
// The same for a folder that may not exist yet: asked from the longest part of `path` that
// exists (`path` absolute).
std::optional<std::string> node_folder_around(const std::string& path);

}  // namespace cni::os
