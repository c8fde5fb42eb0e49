// SPDX-License-Identifier: Apache-2.0
// host-local's on-disk state, byte-compatible with the reference (docs/compatibility.md:
// host-local) so a node can switch implementations: <dataDir>/<network>/<ip> files holding
// "<id>\r\n<ifname>" (legacy: "<id>"), created O_EXCL mode 0600; last_reserved_ip.<set>; an
// exclusive flock on <dir>/lock held for the Store's lifetime (the reference takes the same lock
// per range set). Unlike the reference, a call does not read every reservation file: the directory
// is listed once and an index file (.cni-all-index: name, inode, owner per line, headed by the
// directory's mtime/ctime when it was written) supplies the owner of every file whose inode is
// unchanged, as long as nothing else created or removed a file since; only new files are read then.
// After a foreign change (the Go plugin, a crash before the index was written) every file is read
// once, as the reference always does. Owners are re-read before a file is removed, so a stale index
// can never release someone else's address. Files that are not reservations are skipped with a
// warning. Reservations are held as a sorted array whose owners point into the index's text, and
// the index is written back in pieces, so memory grows by about 100 bytes per reservation.
#pragma once

#include <sys/types.h>

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/net/ip.hpp"
#include "core/os/file_lock.hpp"
#include "core/result.hpp"

namespace cni::ipam {

enum class OwnerKind { current, legacy, foreign };  // "<id>\r\n<if>", "<id>", anything else

// A reservation's owner as views into text kept elsewhere (the Store's index or file contents).
struct OwnerView {
    OwnerKind kind = OwnerKind::foreign;
    std::string_view id, ifname;

    static OwnerView parse(std::string_view content);  // views into content
    bool matches(std::string_view id, std::string_view ifname) const;  // current format
    bool matches_legacy(std::string_view id) const;
};

// The same, owning its text (what callers of the Store get).
struct Owner {
    using Kind = OwnerKind;
    Kind kind = Kind::foreign;
    std::string id, ifname;

    static Owner parse(std::string_view content) { return of(OwnerView::parse(content)); }
    static Owner of(const OwnerView& v) { return Owner{v.kind, std::string(v.id), std::string(v.ifname)}; }
    OwnerView view() const { return OwnerView{kind, id, ifname}; }
    bool matches(std::string_view id, std::string_view ifname) const { return view().matches(id, ifname); }
    bool matches_legacy(std::string_view id) const { return view().matches_legacy(id); }
};

class Store {
public:
    using Warn = std::function<void(std::string_view)>;
    static constexpr const char* kIndexName = ".cni-all-index";

    static Result<Store> open(const std::string& data_dir, const std::string& network, Warn warn);

    const std::string& dir() const { return dir_.path(); }
    bool taken(const IpAddr& ip) const;
    std::size_t count_taken_between(const IpAddr& first, const IpAddr& last) const;  // inclusive

    // Reference Store.Reserve: false if the file exists already.
    Result<bool> reserve(const IpAddr& ip, std::string_view id, std::string_view ifname, int set_index);
    std::optional<IpAddr> last_reserved(int set_index) const;

    // Reference GetByID: addresses held by (id, ifname), or by a legacy file of `id`.
    std::vector<IpAddr> find_by_id(std::string_view id, std::string_view ifname) const;
    // Reference FindByID: any current-format match, else any legacy match.
    bool has_id(std::string_view id, std::string_view ifname) const;
    // Reference ReleaseByID: remove the current-format matches, or, if none, the legacy ones.
    Status release_by_id(std::string_view id, std::string_view ifname);
    // Remove one reservation after checking (on disk) that `still_owned` accepts its owner.
    Result<bool> release_if(const IpAddr& ip, const std::function<bool(const Owner&)>& still_owned);

    // Every reservation and its owner (GC).
    std::vector<std::pair<IpAddr, Owner>> reservations() const;

    // Persist the index; done by the applets at the end of each call (a cache, so failures warn).
    void flush();

    // How many reservation files this Store had to read (the index spares the others).
    std::size_t files_read() const { return files_read_; }

private:
    // One reservation, 64 bytes: its owner's text stays in index_text_ or owner_texts_, so 10,000
    // reservations cost about 0.6 MiB besides the index file's text.
    struct Entry {
        IpAddr ip;
        ino_t ino = 0;
        OwnerView owner;
    };
    Store(os::Dir dir, os::FileLock lock, Warn warn) : dir_(std::move(dir)), lock_(std::move(lock)), warn_(std::move(warn)) {}
    Status scan();
    bool load_index(std::string text);
    std::optional<Entry> parse_index_line(std::string_view line) const;
    OwnerView keep_owner(std::string content);
    std::vector<Entry>::iterator find(const IpAddr& ip);
    void put(const Entry& e);  // insert or replace, keeping entries_ sorted

    Result<std::string> read_small(const std::string& name, ino_t* ino = nullptr) const;
    std::string dir_stamp() const;

    os::Dir dir_;  // every file is opened relative to it, never through a link
    os::FileLock lock_;
    Warn warn_;
    std::unique_ptr<const std::string> index_text_;  // on the heap: entries' views survive moves
    std::deque<std::string> owner_texts_;            // owners read from files or written since
    std::vector<Entry> entries_;                     // sorted by ip
    bool dirty_ = false;
    std::size_t files_read_ = 0;
};

}  // namespace cni::ipam
