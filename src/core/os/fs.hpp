// SPDX-License-Identifier: Apache-2.0
// Small file-system helpers: directory creation as Go's os.MkdirAll does it (every missing
// parent too, an existing directory is fine, an existing non-directory is an error), and
// reading a whole small file with the errno text Go prints ("open <path>: no such file ..."),
// whole-buffer reads and writes on descriptors, and state files written through `Dir`: an opened
// directory whose names are opened relative to it and never through a final symbolic link, so a
// link or FIFO planted in a state directory (one under /tmp, say) cannot redirect or block a
// write by root. Atomic writes go to a temporary file created exclusively under an unpredictable
// name, then renamed over the target (rename replaces a planted link; it never follows it). And
// the node's own files and folders (docs/logging.md), which only root (or the user we run as) may
// have made or changed.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "core/os/unique_fd.hpp"
#include "core/result.hpp"

namespace cni::os {

inline constexpr std::size_t kStateFileLimit = std::size_t(1) << 20;

Status mkdir_all(const std::string& path, mode_t mode);
// A whole file a config names (a conflist, resolv.conf, subnet.env): at most kConfigFileLimit
// bytes, so /dev/zero is an error, not the process's memory; a FIFO without a writer reads as
// empty instead of blocking the call.
inline constexpr std::size_t kConfigFileLimit = std::size_t(16) << 20;
Result<std::string> read_file(const std::string& path);
// The same, with nothing for a file that does not exist (any other failure is an error).
Result<std::optional<std::string>> read_file_if_exists(const std::string& path);

// Go filepath.Abs: a relative path joined to the working directory.
std::string absolute_path(const std::string& path);
// The names between a path's slashes ("/a//b/" has "a" and "b"), and whether one is "." or "..".
std::vector<std::string> path_names(std::string_view path);
bool has_dot_name(std::string_view path);

// Retries short writes and EINTR. `path`, if given, names the file in errors ("write /x: ...").
Status write_all(int fd, std::string_view data, std::string_view path = "");
// Everything up to EOF; more than `limit` bytes is an error ("read /x: ..." with `path`).
Result<std::string> read_all(int fd, std::size_t limit, std::string_view path = "");
// The path-taking forms open the file's directory (following links on the way there, as a
// configured path may), then act as Dir does on its last component.
Status write_file(const std::string& path, std::string_view data, mode_t mode);  // truncates
Status write_file_atomic(const std::string& path, std::string_view data, mode_t mode);
// A state file: nothing for a missing one; a link, a directory or any other non-regular file is
// an error, and so is one past `limit` bytes.
Result<std::optional<std::string>> read_state_file(const std::string& path, std::size_t limit = kStateFileLimit);

// Owned by root or by the user we run as, and writable by neither its group nor others.
bool only_we_write(const struct stat& st);
// A node's settings file, in a folder of the node's (Dir::open_trusted, never made): `path` is
// absolute, a folder on its way that others could change is an error, and so is a file that
// someone other than root or we could have written (only_we_write), or, when `readable_by_all`,
// one that others may not read (a file a tenant's config names: it learns nothing of a file it
// could not read itself); nothing when the folder or the file is missing.
Result<std::optional<std::string>> read_trusted_file(const std::string& path, std::size_t limit,
                                                     bool readable_by_all = false);

class PendingFile;

class Dir {
public:
    static Result<Dir> open(const std::string& path);
    static Result<Dir> create(const std::string& path, mode_t mode);  // mkdir_all, then open
    // A folder of the node's that no one but root and we can change: `path` is absolute, without
    // "." or ".." in it, and reached from "/" through no symbolic link and no folder others can
    // write unless it is sticky (as /tmp is, where others cannot rename what is ours); the folder
    // itself passes only_we_write. Made (`mode`, when given) when it is the last component that is
    // missing.
    static Result<Dir> open_trusted(const std::string& path, std::optional<mode_t> mode = std::nullopt);
    // open_trusted with every missing folder on the way made: the last `mode`, those before it
    // `folders` (a node's own folder whose parents a fresh node may lack, /run/cni-all/vpc-eni).
    static Result<Dir> make_trusted(const std::string& path, mode_t folders, mode_t mode);
    // open_trusted, or nothing when `path` itself is missing (an optional folder of the node's).
    static Result<std::optional<Dir>> open_trusted_if_exists(const std::string& path);
    // The directory `name` in this one, made when missing; never through a link.
    Result<Dir> subdir(std::string_view name, mode_t mode) const;
    // The same, never made: nothing when it is missing.
    Result<std::optional<Dir>> subdir_if_exists(std::string_view name) const;

    int fd() const { return fd_.get(); }
    const std::string& path() const { return path_; }
    std::string path_of(std::string_view name) const;

    // `name` as a regular file, never through a link (O_NOFOLLOW, and O_NONBLOCK so a FIFO cannot
    // hang the call); errno is set and the fd empty on failure (ELOOP for a link, EINVAL for a
    // non-regular file).
    UniqueFd open_regular(std::string_view name, int flags, mode_t mode = 0) const;
    // The same for a file only we write (flags include O_CREAT): a link or special file planted
    // at its name is removed and the file created anew (a directory there still fails).
    UniqueFd open_own(std::string_view name, int flags, mode_t mode) const;
    Result<std::optional<std::string>> read_if_exists(std::string_view name, std::size_t limit = kStateFileLimit) const;
    Status write(std::string_view name, std::string_view data, mode_t mode) const;  // in place, truncates
    // `durable`: the file is synced before its rename and the folder after it, so that a crash
    // leaves the old file or the new one on disk, never an empty one (a node's own files, written
    // once in a while; an attachment's records, written on every ADD, go without).
    Status write_atomic(std::string_view name, std::string_view data, mode_t mode, bool durable = false) const;
    // write_atomic in two steps: `data` written in full now, under an exclusive temporary name,
    // put in place as `name` by PendingFile::commit, so a caller learns that the write works
    // before it does what the file is to record.
    Result<PendingFile> write_pending(std::string_view name, std::string_view data, mode_t mode, bool durable = false) const;
    bool remove(std::string_view name) const;  // false when it was not there or could not go
    bool remove_dir(std::string_view name) const;  // an empty directory; false otherwise
    std::optional<struct stat> stat(std::string_view name) const;  // of `name` itself, never through a link
    std::vector<std::string> names() const;     // every entry but "." and ".."
    // The error for an open_regular that failed with `err`: "open <path>: a symbolic link", ...
    cni::Unexpected<Error> open_failed(std::string_view name, int err) const;

private:
    Dir(UniqueFd fd, std::string path) : fd_(std::move(fd)), path_(std::move(path)) {}
    UniqueFd fd_;
    std::string path_;
};

// A file Dir::write_pending wrote under a temporary name: renamed over its name by commit(),
// removed when it never is. Its Dir must outlive it.
class PendingFile {
public:
    PendingFile(PendingFile&& other) noexcept;
    PendingFile& operator=(PendingFile&&) = delete;
    ~PendingFile();
    Status commit();

private:
    friend class Dir;
    PendingFile(const Dir& dir, std::string tmp, std::string name, bool durable)
        : dir_(&dir), tmp_(std::move(tmp)), name_(std::move(name)), durable_(durable) {}
    const Dir* dir_;
    std::string tmp_;  // empty once committed
    std::string name_;
    bool durable_;  // the folder synced after the rename
};

// An applet's records of its attachments, /run/cni/<applet> (root's, 0700; no config key
// chooses it, and a reboot ends them with what they describe): made when missing (`create`),
// else nothing when missing. Errors name the applet.
Result<std::optional<Dir>> open_records(std::string_view applet, bool create);
// A record's name there: "<containerID>:<ifname>.json", one name per attachment since neither a
// container ID nor an interface name may hold a colon (with "_" as tuning's backups, "a_b" + "c"
// and "a" + "b_c" would share one).
std::string record_name(std::string_view container_id, std::string_view ifname);

}  // namespace cni::os
