// SPDX-License-Identifier: Apache-2.0
// Directory creation and whole-file I/O (see fs.hpp).
#include "core/os/fs.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/os/errno_error.hpp"
#include "core/os/unique_fd.hpp"

namespace cni::os {

Status mkdir_all(const std::string& path, mode_t mode) {
    struct stat st{};
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return {};  // the usual case, in one call
    std::size_t pos = 0;
    while (pos != std::string::npos) {
        pos = path.find('/', pos + 1);
        std::string cur = path.substr(0, pos);
        if (cur.empty()) continue;
        if (::mkdir(cur.c_str(), mode) != 0 && errno != EEXIST) return sys_fail("mkdir", cur);
    }
    if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return fail("mkdir " + path + ": not a directory");
    return {};
}

Result<std::string> read_file(const std::string& path) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return sys_fail("open", path);
    return read_all(fd.get(), std::size_t(1) << 30, path);
}

Result<std::optional<std::string>> read_file_if_exists(const std::string& path) {
    if (::access(path.c_str(), F_OK) != 0 && errno == ENOENT) return std::nullopt;
    CNI_TRY_ASSIGN(std::string text, read_file(path));
    return text;
}

std::string absolute_path(const std::string& path) {
    if (path.empty() || path[0] == '/') return path;
    char cwd[4096];
    return ::getcwd(cwd, sizeof cwd) ? std::string(cwd) + "/" + path : path;
}

// Go's *PathError wording: "read /x: is a directory", or "read: ..." for an unnamed descriptor.
static std::string io_error(std::string_view op, std::string_view path, std::string_view reason) {
    return std::string(op) + (path.empty() ? "" : " " + std::string(path)) + ": " + std::string(reason);
}

Status write_all(int fd, std::string_view data, std::string_view path) {
    while (!data.empty()) {
        ssize_t n = ::write(fd, data.data(), data.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail(io_error("write", path, errno_text(errno)));
        }
        data.remove_prefix(std::size_t(n));
    }
    return {};
}

Result<std::string> read_all(int fd, std::size_t limit, std::string_view path) {
    std::string out;
    char buf[65536];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n == 0) return out;
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail(io_error("read", path, errno_text(errno)));
        }
        if (out.size() + std::size_t(n) > limit) return fail(io_error("read", path, "more than " + std::to_string(limit) + " bytes"));
        out.append(buf, std::size_t(n));
    }
}

Status write_file(const std::string& path, std::string_view data, mode_t mode) {
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
    if (!fd) return sys_fail("open", path);
    return write_all(fd.get(), data, path);
}

Status write_file_atomic(const std::string& path, std::string_view data, mode_t mode) {
    std::string tmp = path + ".tmp";
    CNI_TRY(write_file(tmp, data, mode));
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        int err = errno;
        ::unlink(tmp.c_str());
        return sys_fail("rename", tmp, err);
    }
    return {};
}

}  // namespace cni::os
