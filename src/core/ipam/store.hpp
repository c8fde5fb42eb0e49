// SPDX-License-Identifier: Apache-2.0
// host-local's on-disk state, byte-compatible with the reference (docs/compatibility.md:
// host-local) so a node can switch implementations: <dataDir>/<network>/<ip> files holding
// "<id>\r\n<ifname>" (legacy: "<id>"), created O_EXCL mode 0600; last_reserved_ip.<set>; an
// exclusive flock on <dir>/lock held for the Store's lifetime (the reference takes the same lock
// per range set). Unlike the reference, a call does not read every reservation: an index of
// 256 bucket files (.cni-all-index.d/00..ff, each address's owner filed under a hash of its
// container id) says who holds what, so ADD, DEL and CHECK read one bucket, and ADD probes
// candidate addresses by name. The index is trusted only while the header .cni-all-index carries
// the directory's stamp (inode, mtime, ctime). Each call that changes anything sets the
// directory's mtime to a second before now (a time no later create or remove can write), then
// writes the buckets and the header: any file another process (the Go plugin) creates or removes
// afterwards changes the stamp, and the next call reads every reservation once, as the reference
// always does, and rebuilds the index. Owners are re-read before a file is removed, so a stale
// index can never release someone else's address. Files that are not reservations are skipped
// with a warning.
#pragma once

#include <sys/types.h>

#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/net/ip.hpp"
#include "core/os/file_lock.hpp"
#include "core/result.hpp"

namespace cni::ipam {

// Where host-local keeps a network's store when its config names no dataDir.
inline constexpr std::string_view kDefaultDataDir = "/var/lib/cni/networks";

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
    static constexpr const char* kIndexName = ".cni-all-index";        // the header
    static constexpr const char* kBucketDirName = ".cni-all-index.d";  // the buckets
    static constexpr std::size_t kBuckets = 256;

    static Result<Store> open(const std::string& data_dir, const std::string& network, Warn warn);
    // The store `name` in an opened folder (made when missing), never through a link.
    static Result<Store> open_in(const os::Dir& parent, std::string_view name, Warn warn);

    const std::string& dir() const { return dir_.path(); }
    bool taken(const net::IpAddr& ip) const;  // a file (or anything) has the address's name
    std::vector<net::IpAddr> addresses();  // every address taken, sorted; reads every bucket

    // Reference Store.Reserve: false if the file exists already.
    Result<bool> reserve(const net::IpAddr& ip, std::string_view id, std::string_view ifname, int set_index);
    std::optional<net::IpAddr> last_reserved(int set_index) const;

    // Reference GetByID: addresses held by (id, ifname), or by a legacy file of `id`.
    std::vector<net::IpAddr> find_by_id(std::string_view id, std::string_view ifname);
    // Addresses whose file names exactly (id, ifname), in the current format, each owner read
    // again from its file: what a main applet that set the attachment up may act on (vpc-eni's DEL).
    std::vector<net::IpAddr> held_by(std::string_view id, std::string_view ifname);
    // Reference FindByID: any current-format match, else any legacy match.
    bool has_id(std::string_view id, std::string_view ifname);
    // Reference ReleaseByID: remove the current-format matches, or, if none, the legacy ones.
    Status release_by_id(std::string_view id, std::string_view ifname);
    // Remove one reservation after checking (on disk) that `still_owned` accepts its owner.
    Result<bool> release_if(const net::IpAddr& ip, const std::function<bool(const Owner&)>& still_owned);

    // Every reservation and its owner, by address (GC); reads every bucket.
    std::vector<std::pair<net::IpAddr, Owner>> reservations();

    // Persist the index; done at the end of each call (a cache, so failures warn).
    void flush();

    // How many reservation files this Store had to read (the index spares them).
    std::size_t files_read() const { return files_read_; }

private:
    struct Entry {
        net::IpAddr ip;
        OwnerView owner;  // its text stays in texts_
    };
    struct Bucket {
        bool loaded = false, dirty = false;
        std::vector<Entry> entries;
    };
    Store(os::Dir dir, os::FileLock lock, Warn warn) : dir_(std::move(dir)), lock_(std::move(lock)), warn_(std::move(warn)) {}
    static Result<Store> open_dir(os::Dir dir, Warn warn);
    bool header_matches() const;
    Status scan();  // reads every reservation and rebuilds the index
    Bucket& bucket(std::size_t i);
    bool load_bucket(std::size_t i);  // false when its file is not as flush() writes it
    void load_all();
    Entry* locate(const net::IpAddr& ip, std::size_t* in = nullptr);  // among the loaded buckets
    void put(const Entry& e);
    void drop(const net::IpAddr& ip);
    OwnerView keep_owner(std::string content);

    Result<std::string> read_small(const std::string& name) const;
    std::string dir_stamp() const;

    os::Dir dir_;  // every file is opened relative to it, never through a link
    os::FileLock lock_;
    Warn warn_;
    std::optional<os::Dir> bucket_dir_;  // none: no index, every call reads everything
    std::deque<std::string> texts_;      // bucket files and owners read or written
    std::vector<Bucket> buckets_ = std::vector<Bucket>(kBuckets);
    bool changed_ = false;  // a file was created or removed, or a bucket changed
    std::size_t files_read_ = 0;
};

}  // namespace cni::ipam
