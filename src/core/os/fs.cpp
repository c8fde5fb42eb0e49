// SPDX-License-Identifier: Apache-2.0
// Directory creation and whole-file I/O (see fs.hpp).
#include "core/os/fs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <memory>
#include <utility>

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
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
    if (!fd) return sys_fail("open", path);
    return read_all(fd.get(), kConfigFileLimit, path);
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

std::vector<std::string> path_names(std::string_view path) {
    std::vector<std::string> names;
    for (std::size_t at = 0, end = 0; at < path.size(); at = end + 1) {
        end = std::min(path.find('/', at), path.size());
        if (end > at) names.emplace_back(path.substr(at, end - at));
    }
    return names;
}

bool has_dot_name(std::string_view path) {
    return std::ranges::any_of(path_names(path), [](const std::string& n) { return n == "." || n == ".."; });
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
    // A regular file's size, when it is within the limit, is the room the text takes (the reads
    // still go to the end: the file may have grown).
    if (struct stat st{}; ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && std::size_t(st.st_size) <= limit)
        out.reserve(std::size_t(st.st_size));
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

namespace {

// "/a/b/c" -> {"/a/b", "c"}; "c" -> {".", "c"}; "/c" -> {"/", "c"}.
std::pair<std::string, std::string> split_last(const std::string& path) {
    auto slash = path.find_last_of('/');
    if (slash == std::string::npos) return {".", path};
    return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

// 16 hex digits from the kernel's random pool (an unpredictable temporary name).
std::string random_hex() {
    std::uint64_t r = 0;
    if (::getrandom(&r, sizeof r, 0) != sizeof r) r = std::uint64_t(::getpid()) << 32 ^ std::uint64_t(::time(nullptr));
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(r));
    return buf;
}


}  // namespace

Result<Dir> Dir::open(const std::string& path) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) return sys_fail("open", path);
    return Dir(std::move(fd), path);
}

Result<Dir> Dir::create(const std::string& path, mode_t mode) {
    CNI_TRY(mkdir_all(path, mode));
    return open(path);
}

namespace {

// The checks of open_trusted on one folder on the way (`last`: the folder itself).
Status trusted_step(int fd, const std::string& path, bool last) {
    struct stat st{};
    if (::fstat(fd, &st) != 0) return sys_fail("stat", path);
    if (st.st_uid != 0 && st.st_uid != ::geteuid())
        return fail("open " + path + ": owned by uid " + std::to_string(st.st_uid) + ", neither root nor us");
    if (!only_we_write(st) && (last || !(st.st_mode & S_ISVTX))) return fail("open " + path + ": others may write it");
    return {};
}

}  // namespace

bool only_we_write(const struct stat& st) {
    return (st.st_uid == 0 || st.st_uid == ::geteuid()) && !(st.st_mode & (S_IWGRP | S_IWOTH));
}

Result<Dir> Dir::open_trusted(const std::string& path, std::optional<mode_t> mode) {
    if (!path.starts_with('/')) return fail("open " + path + ": not an absolute path");
    if (has_dot_name(path)) return fail("open " + path + ": not a plain path (\".\" or \"..\" in it)");
    const std::vector<std::string> names = path_names(path);
    constexpr int kFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    UniqueFd fd(::open("/", kFlags));
    std::string walked = "/";
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (!fd) return sys_fail("open", walked);
        CNI_TRY(trusted_step(fd.get(), walked, false));
        const char* name = names[i].c_str();
        walked += (i ? "/" : "") + names[i];
        UniqueFd next(::openat(fd.get(), name, kFlags));
        if (!next && errno == ENOENT && mode && i + 1 == names.size() && ::mkdirat(fd.get(), name, *mode) == 0)
            next.reset(::openat(fd.get(), name, kFlags));
        struct stat st{};  // O_DIRECTORY wins over O_NOFOLLOW: a link fails as "not a directory"
        if (!next && ::fstatat(fd.get(), name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
            return fail("open " + walked + ": a symbolic link");
        fd = std::move(next);
    }
    if (!fd) return sys_fail("open", walked);
    CNI_TRY(trusted_step(fd.get(), walked, true));
    return Dir(std::move(fd), path);
}

Result<std::optional<Dir>> Dir::open_trusted_if_exists(const std::string& path) {
    if (struct stat st{}; ::lstat(path.c_str(), &st) != 0 && errno == ENOENT) return std::optional<Dir>{};
    CNI_TRY_ASSIGN(auto dir, open_trusted(path));
    return std::optional<Dir>(std::move(dir));
}

Result<Dir> Dir::make_trusted(const std::string& path, mode_t folders, mode_t mode) {
    if (!path.starts_with('/') || has_dot_name(path)) return open_trusted(path);  // its error
    const std::vector<std::string> names = path_names(path);
    std::string at;
    for (std::size_t i = 0; i + 1 < names.size(); ++i) {  // only a missing one is made here
        at += "/" + names[i];
        if (struct stat st{}; ::lstat(at.c_str(), &st) != 0 && errno == ENOENT) CNI_TRY(open_trusted(at, folders));
    }
    return open_trusted(path, mode);  // every folder on the way checked as one on the way (/tmp's sticky bit)
}

Result<Dir> Dir::subdir(std::string_view name, mode_t mode) const {
    std::string n(name);
    if (::mkdirat(fd_.get(), n.c_str(), mode) != 0 && errno != EEXIST) return sys_fail("mkdir", path_of(name));
    UniqueFd fd(::openat(fd_.get(), n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd) return sys_fail("open", path_of(name));
    return Dir(std::move(fd), path_of(name));
}

Result<std::optional<Dir>> Dir::subdir_if_exists(std::string_view name) const {
    UniqueFd fd(::openat(fd_.get(), std::string(name).c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd && errno == ENOENT) return std::optional<Dir>{};
    if (!fd) return sys_fail("open", path_of(name));
    return std::optional<Dir>(Dir(std::move(fd), path_of(name)));
}

std::string Dir::path_of(std::string_view name) const {
    return (path_.ends_with('/') ? path_ : path_ + "/") + std::string(name);
}

UniqueFd Dir::open_regular(std::string_view name, int flags, mode_t mode) const {
    std::string n(name);
    UniqueFd fd(::openat(fd_.get(), n.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode));
    if (!fd) return fd;
    struct stat st{};
    if (::fstat(fd.get(), &st) != 0) return UniqueFd();
    if (!S_ISREG(st.st_mode)) {
        errno = EINVAL;
        return UniqueFd();
    }
    return fd;
}

UniqueFd Dir::open_own(std::string_view name, int flags, mode_t mode) const {
    UniqueFd fd = open_regular(name, flags, mode);
    if (fd || (errno != ELOOP && errno != EINVAL) || !remove(name)) return fd;
    return open_regular(name, flags | O_EXCL, mode);
}

cni::Unexpected<Error> Dir::open_failed(std::string_view name, int err) const {
    return fail(io_error("open", path_of(name), err == EINVAL ? "not a regular file" : err == ELOOP ? "a symbolic link" : errno_text(err)));
}

Result<std::optional<std::string>> Dir::read_if_exists(std::string_view name, std::size_t limit) const {
    UniqueFd fd = open_regular(name, O_RDONLY);
    if (!fd) {
        int err = errno;
        if (err == ENOENT) return std::nullopt;
        return open_failed(name, err);
    }
    CNI_TRY_ASSIGN(std::string text, read_all(fd.get(), limit, path_of(name)));
    return text;
}

Status Dir::write(std::string_view name, std::string_view data, mode_t mode) const {
    UniqueFd fd = open_regular(name, O_WRONLY | O_CREAT | O_TRUNC, mode);
    if (!fd) return open_failed(name, errno);
    return write_all(fd.get(), data, path_of(name));
}

Status Dir::write_atomic(std::string_view name, std::string_view data, mode_t mode, bool durable) const {
    CNI_TRY_ASSIGN(auto pending, write_pending(name, data, mode, durable));
    return pending.commit();
}

Result<PendingFile> Dir::write_pending(std::string_view name, std::string_view data, mode_t mode, bool durable) const {
    std::string tmp = "." + std::string(name) + "." + random_hex() + ".tmp";
    UniqueFd fd(::openat(fd_.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
    if (!fd) return sys_fail("open", path_of(tmp));
    PendingFile pending(*this, tmp, std::string(name), durable);  // removes the temporary unless committed
    CNI_TRY(write_all(fd.get(), data, path_of(tmp)));
    if (::fchmod(fd.get(), mode) != 0) return sys_fail("chmod", path_of(tmp));  // `mode` whatever the umask
    if (durable && ::fsync(fd.get()) != 0) return sys_fail("fsync", path_of(tmp));
    return pending;
}

PendingFile::PendingFile(PendingFile&& other) noexcept
    : dir_(other.dir_), tmp_(std::exchange(other.tmp_, {})), name_(std::move(other.name_)), durable_(other.durable_) {}

PendingFile::~PendingFile() {
    if (!tmp_.empty()) ::unlinkat(dir_->fd(), tmp_.c_str(), 0);
}

Status PendingFile::commit() {
    if (::renameat(dir_->fd(), tmp_.c_str(), dir_->fd(), name_.c_str()) != 0) return sys_fail("rename", dir_->path_of(tmp_));
    tmp_.clear();
    // The rename on disk too. Best effort: it is done, and an error now could not undo it (a crash
    // before the folder reaches the disk leaves the old file, which is whole).
    if (durable_) (void)::fsync(dir_->fd());
    return {};
}

bool Dir::remove(std::string_view name) const { return ::unlinkat(fd_.get(), std::string(name).c_str(), 0) == 0; }

bool Dir::remove_dir(std::string_view name) const {
    return ::unlinkat(fd_.get(), std::string(name).c_str(), AT_REMOVEDIR) == 0;
}

std::optional<struct stat> Dir::stat(std::string_view name) const {
    struct stat st{};
    if (::fstatat(fd_.get(), std::string(name).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return std::nullopt;
    return st;
}

std::vector<std::string> Dir::names() const {
    std::vector<std::string> out;
    int fd = ::openat(fd_.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);  // readdir owns its own
    std::unique_ptr<DIR, int (*)(DIR*)> d(fd >= 0 ? ::fdopendir(fd) : nullptr, ::closedir);
    if (!d) {
        if (fd >= 0) ::close(fd);
        return out;
    }
    while (dirent* e = ::readdir(d.get()))
        if (std::string_view n = e->d_name; n != "." && n != "..") out.emplace_back(n);
    return out;
}

Status write_file(const std::string& path, std::string_view data, mode_t mode) {
    auto [dir, name] = split_last(path);
    CNI_TRY_ASSIGN(auto d, Dir::open(dir));
    return d.write(name, data, mode);
}

Status write_file_atomic(const std::string& path, std::string_view data, mode_t mode) {
    auto [dir, name] = split_last(path);
    CNI_TRY_ASSIGN(auto d, Dir::open(dir));
    return d.write_atomic(name, data, mode);
}

Result<std::optional<std::string>> read_state_file(const std::string& path, std::size_t limit) {
    auto [dir, name] = split_last(path);
    if (::access(dir.c_str(), F_OK) != 0 && errno == ENOENT) return std::nullopt;
    CNI_TRY_ASSIGN(auto d, Dir::open(dir));
    return d.read_if_exists(name, limit);
}

Result<std::optional<std::string>> read_trusted_file(const std::string& path, std::size_t limit, bool readable_by_all) {
    if (!path.starts_with('/')) return fail("open " + path + ": not an absolute path");
    auto [dir, name] = split_last(path);
    if (::access(dir.c_str(), F_OK) != 0 && errno == ENOENT) return std::nullopt;
    auto d = Dir::open_trusted(dir);
    if (!d) return cni::Unexpected(d.error().context(path));
    UniqueFd fd = d->open_regular(name, O_RDONLY);
    if (!fd && errno == ENOENT) return std::nullopt;
    if (!fd) return d->open_failed(name, errno);
    struct stat st{};
    if (::fstat(fd.get(), &st) != 0 || !only_we_write(st)) return fail(io_error("open", path, "others than root may write it"));
    if (readable_by_all && !(st.st_mode & S_IROTH)) return fail(io_error("open", path, "not readable by all"));
    CNI_TRY_ASSIGN(std::string text, read_all(fd.get(), limit, path));
    return text;
}

Result<std::optional<Dir>> open_records(std::string_view applet, bool create) {
    std::string folder = "/run/cni/" + std::string(applet);
    if (!create && ::access(folder.c_str(), F_OK) != 0 && errno == ENOENT) return std::nullopt;
    if (create)
        if (auto made = mkdir_all("/run/cni", 0755); !made) return fail(std::string(applet) + ": " + made.error().msg);
    auto records = Dir::open_trusted(folder, create ? std::optional<mode_t>(0700) : std::nullopt);
    if (!records) return fail(std::string(applet) + ": " + records.error().msg);
    return std::optional<Dir>(std::move(*records));
}

std::string record_name(std::string_view container_id, std::string_view ifname) {
    return std::string(container_id) + ":" + std::string(ifname) + ".json";
}

}  // namespace cni::os
