// SPDX-License-Identifier: Apache-2.0
// host-local on-disk store with a bucketed index (see store.hpp).
#include "core/ipam/store.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <ctime>
#include <memory>

#include "core/os/errno_error.hpp"
#include "core/cni/request.hpp"
#include "core/os/fs.hpp"
#include "core/os/node_folder.hpp"
#include "core/os/unique_fd.hpp"
#include "core/strings.hpp"

namespace cni::ipam {
namespace {

constexpr std::string_view kHeader = "cni-all host-local index 3";
constexpr std::string_view kBucketHeader = "cni-all host-local bucket 3\n";
constexpr const char* kLastReservedPrefix = "last_reserved_ip.";

bool printable_token(std::string_view s) {
    if (s.empty()) return false;
    for (unsigned char c : s)
        if (c <= 0x20 || c == 0x7f) return false;
    return true;
}

// Replaces a small file's content without truncating it to zero first: on ext4 a truncate to
// zero makes close() flush the file synchronously (auto_da_alloc), which costs an ADD more than
// all its netlink work. A crash between the write and the truncate leaves the old tail behind;
// last_reserved_ip tolerates that (it is only where the next search starts), and so does the
// index: flush() restamps the directory before it writes, so a half-written index is untrusted.
bool overwrite_in_place(int fd, std::string_view text) {
    return ::pwrite(fd, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()) &&
           ::ftruncate(fd, static_cast<off_t>(text.size())) == 0;
}

std::string join(std::string a, std::string_view b) {
    while (a.size() > 1 && a.back() == '/') a.pop_back();
    return a + "/" + std::string(b);
}

// The bucket of a container id (FNV-1a of the id as the reference compares it, trimmed); an owner
// that is neither format goes with the empty id.
std::size_t bucket_of(std::string_view id) {
    std::uint32_t h = 2166136261u;
    for (unsigned char c : trim_space(id)) h = (h ^ c) * 16777619u;
    return h % Store::kBuckets;
}
std::size_t bucket_of(const OwnerView& o) { return bucket_of(o.kind == OwnerKind::foreign ? std::string_view() : o.id); }

std::string bucket_name(std::size_t i) {
    constexpr char hex[] = "0123456789abcdef";
    return {hex[i >> 4], hex[i & 15]};
}

// One bucket line: "<ip> c <id> <ifname> ;", "<ip> l <id> ;" or "<ip> f ;", views into the line.
// A line without its terminator (a torn write) is refused, and so is a name that is not how the
// index writes an address.
std::optional<std::pair<net::IpAddr, OwnerView>> parse_line(std::string_view line) {
    std::array<std::string_view, 6> f;  // no allocation: this runs once per reservation
    std::size_t n = 0;
    for (std::size_t pos = 0; pos < line.size();) {
        auto end = line.find(' ', pos);
        if (end == std::string_view::npos) end = line.size();
        if (end > pos) {
            if (n == f.size()) return std::nullopt;
            f[n++] = line.substr(pos, end - pos);
        }
        pos = end + 1;
    }
    if (n < 3 || f[n - 1] != ";") return std::nullopt;
    auto ip = net::IpAddr::parse(f[0]);
    if (!ip || ip->str() != f[0]) return std::nullopt;
    OwnerView owner;
    if (f[1] == "c" && n == 5) owner = OwnerView{OwnerKind::current, f[2], f[3]};
    else if (f[1] == "l" && n == 4) owner = OwnerView{OwnerKind::legacy, f[2], {}};
    else if (f[1] != "f" || n != 3) return std::nullopt;
    return std::pair{*ip, owner};
}

}  // namespace

// A reservation, last_reserved_ip or the header: a regular file in the directory, never read
// through a link (a planted one to /etc/shadow is not an owner), at most 1 MiB.
Result<std::string> Store::read_small(const std::string& name) const {
    os::UniqueFd fd = dir_.open_regular(name, O_RDONLY);
    if (!fd) return dir_.open_failed(name, errno);
    return os::read_all(fd.get(), 1 << 20, dir_.path_of(name));
}

// The directory's inode, mtime and ctime: any file created or removed in it changes them.
std::string Store::dir_stamp() const {
    struct stat st{};
    if (::fstat(dir_.fd(), &st) != 0) return "?";
    return std::to_string(st.st_ino) + " " + std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) +
           "/" + std::to_string(st.st_ctim.tv_sec) + "." + std::to_string(st.st_ctim.tv_nsec);
}

OwnerView OwnerView::parse(std::string_view content) {
    auto t = trim_space(content);
    if (auto pos = t.find("\r\n"); pos != std::string_view::npos) {
        auto id = t.substr(0, pos), ifn = t.substr(pos + 2);
        if (printable_token(id) && printable_token(ifn)) return OwnerView{OwnerKind::current, id, ifn};
    } else if (printable_token(t)) {
        return OwnerView{OwnerKind::legacy, t, {}};
    }
    return {};
}

bool OwnerView::matches(std::string_view want_id, std::string_view want_if) const {
    return kind == OwnerKind::current && id == trim_space(want_id) && ifname == want_if;
}

bool OwnerView::matches_legacy(std::string_view want_id) const {
    return kind == OwnerKind::legacy && id == trim_space(want_id);
}

Result<Store> Store::open(const std::string& data_dir, const std::string& network, Warn warn) {
    if (!valid_id(network)) return fail(code::invalid_config, "invalid characters found in network name", network);
    const std::string root = data_dir.empty() ? std::string(kDefaultDataDir) : data_dir;
    auto refuse = [&](const std::string& why) {
        return fail(code::invalid_config, "host-local: ipam.dataDir \"" + root + "\" " + why, root);
    };
    if (os::has_dot_name(root)) return refuse("has \".\" or \"..\" in it");
    const std::string dir = join(root, network);
    auto in_node_folder = [&](const std::string& whose) {
        return refuse("lies in " + whose + ", a folder of the node's that no network config may choose (docs/compatibility.md: host-local)");
    };
    if (auto whose = os::node_folder_around(os::absolute_path(dir))) return in_node_folder(*whose);
    CNI_TRY_ASSIGN(auto d, os::Dir::create(dir, 0755));
    if (auto whose = os::node_folder_around(d.fd())) return in_node_folder(*whose);  // a folder swapped in meanwhile
    return open_dir(std::move(d), std::move(warn));
}

Result<Store> Store::open_in(const os::Dir& parent, std::string_view name, Warn warn) {
    CNI_TRY_ASSIGN(auto d, parent.subdir(name, 0755));
    return open_dir(std::move(d), std::move(warn));
}

Result<Store> Store::open_dir(os::Dir d, Warn warn) {
    CNI_TRY_ASSIGN(auto lock, os::FileLock::acquire_in(d, "lock"));
    Store s(std::move(d), std::move(lock), std::move(warn));
    // Both exist before the directory is stamped, so writing them later does not change it.
    if (auto b = s.dir_.subdir(kBucketDirName, 0700)) s.bucket_dir_ = std::move(*b);
    else s.warn_("host-local: no index, every call reads every reservation: " + b.error().msg);
    if (os::UniqueFd fd = s.dir_.open_own(kIndexName, O_WRONLY | O_CREAT, 0600); !fd)
        s.warn_("host-local: cannot create the index " + s.dir_.path_of(kIndexName) + ": " + os::errno_text(errno));
    if (!s.header_matches()) CNI_TRY(s.scan());
    return s;
}

bool Store::header_matches() const {
    if (!bucket_dir_) return false;
    auto text = read_small(kIndexName);
    return text && *text == std::string(kHeader) + " " + dir_stamp() + "\n";
}

// What the reference does on every call: every file of the directory read. The index is then
// rebuilt from what was read, all of it, whatever it said before (a foreign process may have
// replaced a file under the same name, even with the same inode number).
Status Store::scan() {
    changed_ = true;
    for (std::size_t i = 0; i < kBuckets; ++i) buckets_[i] = Bucket{true, false, {}};
    // Buckets written before are all rewritten; others only when they get an entry.
    if (bucket_dir_)
        for (auto& name : bucket_dir_->names()) {
            unsigned i = 0;
            auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), i, 16);
            if (ec == std::errc() && end == name.data() + name.size() && i < kBuckets && name == bucket_name(i))
                buckets_[i].dirty = true;
        }
    int listing = ::openat(dir_.fd(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);  // closedir closes it
    std::unique_ptr<DIR, int (*)(DIR*)> d(listing >= 0 ? ::fdopendir(listing) : nullptr, ::closedir);
    if (!d) {
        int err = errno;
        if (listing >= 0) ::close(listing);
        return os::sys_fail("open", dir_.path(), err);
    }
    while (dirent* e = ::readdir(d.get())) {
        std::string_view name = e->d_name;
        if (name == "." || name == ".." || name == "lock" || name.starts_with(kLastReservedPrefix) ||
            name.starts_with(kIndexName))
            continue;
        auto ip = net::IpAddr::parse(name);
        if (!ip || ip->str() != name) {
            warn_("host-local: skipping " + dir_.path_of(name) + ": not an address reservation");
            continue;
        }
        Entry entry{*ip, {}};
        if (e->d_type == DT_DIR) {
            warn_("host-local: " + dir_.path_of(name) + " is a directory; its address stays unavailable");
        } else {
            ++files_read_;
            auto content = read_small(std::string(name));
            if (!content) {
                warn_("host-local: " + content.error().msg + "; its address stays unavailable");
            } else {
                entry.owner = keep_owner(std::move(*content));
                if (entry.owner.kind == OwnerKind::foreign)
                    warn_("host-local: " + dir_.path_of(name) +
                          " does not hold \"<containerID>\\r\\n<ifname>\"; its address stays unavailable");
            }
        }
        Bucket& b = buckets_[bucket_of(entry.owner)];
        b.entries.push_back(entry);
        b.dirty = true;
    }
    return {};
}

// A bucket as flush() wrote it: its header, then whole lines whose owners belong in it.
bool Store::load_bucket(std::size_t i) {
    Bucket& b = buckets_[i];
    b.loaded = true;
    os::UniqueFd fd = bucket_dir_->open_regular(bucket_name(i), O_RDONLY);
    if (!fd) return errno == ENOENT;  // none written yet: empty
    auto text = os::read_all(fd.get(), 1 << 20);
    if (!text || !text->starts_with(kBucketHeader)) return false;
    std::string_view rest = texts_.emplace_back(std::move(*text));
    rest.remove_prefix(kBucketHeader.size());
    while (!rest.empty()) {
        auto end = rest.find('\n');
        if (end == std::string_view::npos) return false;
        auto line = parse_line(rest.substr(0, end));
        rest.remove_prefix(end + 1);
        if (!line || bucket_of(line->second) != i) return false;
        b.entries.push_back(Entry{line->first, line->second});
    }
    return true;
}

// A bucket, read on first use; one that is not as written makes the index untrusted: everything
// is read again.
Store::Bucket& Store::bucket(std::size_t i) {
    if (!buckets_[i].loaded && !load_bucket(i)) {
        warn_("host-local: the index " + bucket_dir_->path_of(bucket_name(i)) + " is damaged; reading every reservation");
        files_read_ = 0;
        if (auto st = scan(); !st) warn_("host-local: " + st.error().msg);
    }
    return buckets_[i];
}

void Store::load_all() {
    for (std::size_t i = 0; i < kBuckets; ++i) bucket(i);
}

Store::Entry* Store::locate(const net::IpAddr& ip, std::size_t* in) {
    for (std::size_t i = 0; i < kBuckets; ++i)
        for (auto& e : buckets_[i].entries)
            if (buckets_[i].loaded && e.ip == ip) {
                if (in) *in = i;
                return &e;
            }
    return nullptr;
}

void Store::put(const Entry& e) {
    Bucket& b = bucket(bucket_of(e.owner));
    b.entries.push_back(e);
    b.dirty = changed_ = true;
}

void Store::drop(const net::IpAddr& ip) {
    std::size_t i = 0;
    if (Entry* e = locate(ip, &i)) {
        auto& v = buckets_[i].entries;
        v.erase(v.begin() + (e - v.data()));
        buckets_[i].dirty = changed_ = true;
    }
}

OwnerView Store::keep_owner(std::string content) {
    return OwnerView::parse(texts_.emplace_back(std::move(content)));
}

bool Store::taken(const net::IpAddr& ip) const {
    struct stat st{};
    return ::fstatat(dir_.fd(), ip.str().c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT;
}

std::vector<net::IpAddr> Store::addresses() {
    load_all();
    std::vector<net::IpAddr> out;
    for (auto& b : buckets_)
        for (auto& e : b.entries) out.push_back(e.ip);
    std::ranges::sort(out);
    return out;
}

Result<bool> Store::reserve(const net::IpAddr& ip, std::string_view id, std::string_view ifname, int set_index) {
    const std::string name = ip.str(), path = dir_.path_of(name);
    os::UniqueFd fd = dir_.open_regular(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (!fd) {
        if (errno != EEXIST) return dir_.open_failed(name, errno);
        return false;
    }
    changed_ = true;
    // A reserve that fails leaves no file behind: the caller has no address to release.
    auto abandon = [&](const std::string& failed, int err) -> Result<bool> {
        dir_.remove(name);
        return os::sys_fail("write", failed, err);
    };
    std::string content = std::string(trim_space(id)) + "\r\n" + std::string(ifname);
    if (::write(fd.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size())) return abandon(path, errno);
    fd.reset();
    std::string last = kLastReservedPrefix + std::to_string(set_index);
    os::UniqueFd lf = dir_.open_own(last, O_WRONLY | O_CREAT, 0600);
    if (!lf || !overwrite_in_place(lf.get(), ip.str())) return abandon(dir_.path_of(last), errno);
    put(Entry{ip, keep_owner(std::move(content))});
    return true;
}

std::optional<net::IpAddr> Store::last_reserved(int set_index) const {
    auto text = read_small(kLastReservedPrefix + std::to_string(set_index));
    if (!text) return std::nullopt;
    return net::IpAddr::parse(*text);
}

std::vector<net::IpAddr> Store::find_by_id(std::string_view id, std::string_view ifname) {
    std::vector<net::IpAddr> out;
    for (auto& e : bucket(bucket_of(id)).entries)
        if (e.owner.matches(id, ifname) || e.owner.matches_legacy(id)) out.push_back(e.ip);
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<net::IpAddr> Store::held_by(std::string_view id, std::string_view ifname) {
    std::vector<net::IpAddr> out;
    for (auto& e : bucket(bucket_of(id)).entries) {
        if (!e.owner.matches(id, ifname)) continue;
        auto content = read_small(e.ip.str());
        if (content && OwnerView::parse(*content).matches(id, ifname)) out.push_back(e.ip);
    }
    std::ranges::sort(out);
    return out;
}

bool Store::has_id(std::string_view id, std::string_view ifname) {
    auto& entries = bucket(bucket_of(id)).entries;
    return std::ranges::any_of(entries, [&](const Entry& e) { return e.owner.matches(id, ifname); }) ||
           std::ranges::any_of(entries, [&](const Entry& e) { return e.owner.matches_legacy(id); });
}

Result<bool> Store::release_if(const net::IpAddr& ip, const std::function<bool(const Owner&)>& still_owned) {
    const std::string name = ip.str();
    auto content = read_small(name);
    if (!content) {
        if (!taken(ip)) drop(ip);  // gone already
        return false;
    }
    OwnerView now = keep_owner(std::move(*content));
    if (!still_owned(Owner::of(now))) {
        // rewritten in place behind the index's back: filed again under its owner now
        drop(ip);
        put(Entry{ip, now});
        return false;
    }
    if (!dir_.remove(name) && errno != ENOENT) return os::sys_fail("remove", dir_.path_of(name));
    changed_ = true;
    drop(ip);
    return true;
}

Status Store::release_by_id(std::string_view id, std::string_view ifname) {
    std::vector<net::IpAddr> current, legacy;
    for (auto& e : bucket(bucket_of(id)).entries) {
        if (e.owner.matches(id, ifname)) current.push_back(e.ip);
        else if (e.owner.matches_legacy(id)) legacy.push_back(e.ip);
    }
    bool found = false;
    for (auto& ip : current) {
        CNI_TRY_ASSIGN(bool removed, release_if(ip, [&](const Owner& o) { return o.matches(id, ifname); }));
        found |= removed;
    }
    if (!found)
        for (auto& ip : legacy) CNI_TRY(release_if(ip, [&](const Owner& o) { return o.matches_legacy(id); }));
    return {};
}

std::vector<std::pair<net::IpAddr, Owner>> Store::reservations() {
    load_all();
    std::vector<std::pair<net::IpAddr, Owner>> out;
    for (auto& b : buckets_)
        for (auto& e : b.entries) out.emplace_back(e.ip, Owner::of(e.owner));
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    return out;
}

// Restamps the directory first (its mtime set to a second before now, which no later create or
// remove can write), so the header is stale until the buckets are written; then the changed
// buckets, then the header naming the new stamp. Nothing is renamed into the directory, so the
// stamp stays what the header says.
void Store::flush() {
    if (!changed_ || !bucket_dir_) return;
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    const timespec times[2] = {{0, UTIME_OMIT}, {now.tv_sec - 1, now.tv_nsec}};
    auto failed = [&](const std::string& what) {
        warn_("host-local: cannot write the index " + what + ": " + os::errno_text(errno));
    };
    if (::futimens(dir_.fd(), times) != 0) return failed(dir_.path());
    for (std::size_t i = 0; i < kBuckets; ++i) {
        Bucket& b = buckets_[i];
        if (!b.dirty) continue;
        std::string text(kBucketHeader);
        for (auto& e : b.entries) {
            text.append(e.ip.str());
            if (e.owner.kind == OwnerKind::current) text.append(" c ").append(e.owner.id).append(" ").append(e.owner.ifname);
            else if (e.owner.kind == OwnerKind::legacy) text.append(" l ").append(e.owner.id);
            else text.append(" f");
            text.append(" ;\n");
        }
        os::UniqueFd fd = bucket_dir_->open_own(bucket_name(i), O_WRONLY | O_CREAT, 0600);
        if (!fd || !overwrite_in_place(fd.get(), text)) return failed(bucket_dir_->path_of(bucket_name(i)));
        b.dirty = false;
    }
    os::UniqueFd fd = dir_.open_regular(kIndexName, O_WRONLY);
    if (!fd || !overwrite_in_place(fd.get(), std::string(kHeader) + " " + dir_stamp() + "\n")) return failed(dir_.path_of(kIndexName));
    changed_ = false;
}

}  // namespace cni::ipam
