// SPDX-License-Identifier: Apache-2.0
// A node's own folders, marked (see node_folder.hpp).
#include "core/os/node_folder.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/os/unique_fd.hpp"

namespace cni::os {
namespace {

constexpr std::size_t kMarkerLimit = 256;
constexpr int kUp = 4096;  // more ancestors than any path can have

// The text of the marker in folder `fd`, when it is a regular file only root (or we) owns.
std::optional<std::string> marker_in(int fd) {
    struct stat st{};
    if (::fstatat(fd, kNodeFolderMarker, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) || !only_we_write(st))
        return std::nullopt;
    UniqueFd file(::openat(fd, kNodeFolderMarker, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    auto text = file ? read_all(file.get(), kMarkerLimit) : Result<std::string>(std::string());
    return text && !text->empty() ? *text : std::string("a node's folder");
}

}  // namespace

Status mark_node_folder(const Dir& dir, std::string_view whose) {
    if (marker_in(dir.fd())) return {};
    return dir.write_atomic(kNodeFolderMarker, whose, 0644, true);  // once per node: durable
}

std::optional<std::string> node_folder_around(int dir_fd) {
    UniqueFd cur(::openat(dir_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
    for (int i = 0; cur && i < kUp; ++i) {
        if (auto whose = marker_in(cur.get())) return whose;
        UniqueFd up(::openat(cur.get(), "..", O_PATH | O_DIRECTORY | O_CLOEXEC));
        struct stat here{}, there{};
        if (!up || ::fstat(cur.get(), &here) != 0 || ::fstat(up.get(), &there) != 0) break;
        if (here.st_dev == there.st_dev && here.st_ino == there.st_ino) break;  // "/"
        cur = std::move(up);
    }
    return std::nullopt;
}

std::optional<std::string> node_folder_around(const std::string& path) {
    std::string prefix = path;
    for (;;) {
        UniqueFd fd(::open(prefix.empty() ? "/" : prefix.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (fd) return node_folder_around(fd.get());
        if (prefix.empty() || (errno != ENOENT && errno != ENOTDIR)) return std::nullopt;  // mkdir will fail too
        while (prefix.ends_with('/')) prefix.pop_back();
        prefix.resize(prefix.rfind('/') == std::string::npos ? 0 : prefix.rfind('/'));
    }
}

}  // namespace cni::os
