// SPDX-License-Identifier: Apache-2.0
// host-local on-disk store with an inode-checked index (see store.hpp).
#include "applets/host_local/store.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <memory>

#include "core/os/errno_error.hpp"
#include "core/os/fs.hpp"
#include "core/os/unique_fd.hpp"
#include "core/strings.hpp"

namespace cni::ipam {
namespace {

constexpr std::string_view kIndexHeader = "cni-all host-local index 2";
constexpr const char* kLastReservedPrefix = "last_reserved_ip.";

// For std::lower_bound over entries sorted by address.
constexpr auto ip_before = [](const auto& entry, const IpAddr& ip) { return entry.ip < ip; };

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
// index, which flush() writes the same way in pieces (a torn or out-of-order line makes it
// untrusted, and every entry is checked against the directory's inodes).
bool overwrite_in_place(int fd, std::string_view text) {
    return ::pwrite(fd, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()) &&
           ::ftruncate(fd, static_cast<off_t>(text.size())) == 0;
}

std::string join(std::string a, std::string_view b) {
    while (a.size() > 1 && a.back() == '/') a.pop_back();
    return a + "/" + std::string(b);
}

}  // namespace

// A reservation, last_reserved_ip or the index: a regular file in the directory, never read
// through a link (a planted one to /etc/shadow is not an owner), at most 1 MiB.
Result<std::string> Store::read_small(const std::string& name, ino_t* ino) const {
    os::UniqueFd fd = dir_.open_regular(name, O_RDONLY);
    if (!fd) return dir_.open_failed(name, errno);
    std::string out;
    struct stat st{};
    if (::fstat(fd.get(), &st) != 0) return os::sys_fail("stat", dir_.path_of(name));
    if (ino) *ino = st.st_ino;
    out.reserve(std::size_t(std::clamp<off_t>(st.st_size, 0, 1 << 20)));  // one allocation for the index
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd.get(), buf, sizeof buf)) > 0 && out.size() < (1u << 20)) out.append(buf, std::size_t(n));
    if (n < 0) return os::sys_fail("read", dir_.path_of(name));
    return out;
}

// The directory's mtime and ctime: any file created or removed in it changes them.
std::string Store::dir_stamp() const {
    struct stat st{};
    if (::fstat(dir_.fd(), &st) != 0) return "?";
    return std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + "/" +
           std::to_string(st.st_ctim.tv_sec) + "." + std::to_string(st.st_ctim.tv_nsec);
}

// One index line: "<ip> <inode> c <id> <ifname> ;", "<ip> <inode> l <id> ;" or
// "<ip> <inode> f ;"; the views point into the line. A line without its terminator (a torn
// write) is refused, and so is a name that is not how the index writes an address.
std::optional<Store::Entry> Store::parse_index_line(std::string_view line) const {
    std::array<std::string_view, 7> f;  // no allocation: this runs once per reservation
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
    if (n < 4 || f[n - 1] != ";") return std::nullopt;
    auto ip = IpAddr::parse(f[0]);
    unsigned long long ino = 0;
    auto [ptr, ec] = std::from_chars(f[1].data(), f[1].data() + f[1].size(), ino);
    if (!ip || ec != std::errc() || ptr != f[1].data() + f[1].size()) return std::nullopt;
    Entry e{*ip, ino_t(ino), {}};
    if (f[2] == "c" && n == 6) e.owner = OwnerView{OwnerKind::current, f[3], f[4]};
    else if (f[2] == "l" && n == 5) e.owner = OwnerView{OwnerKind::legacy, f[3], {}};
    else if (f[2] != "f" || n != 4) return std::nullopt;
    return e;
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
    std::string dir = join(data_dir.empty() ? std::string("/var/lib/cni/networks") : data_dir, network);
    CNI_TRY_ASSIGN(auto d, os::Dir::create(dir, 0755));
    CNI_TRY_ASSIGN(auto lock, os::FileLock::acquire_in(d, "lock"));
    Store s(std::move(d), std::move(lock), std::move(warn));
    CNI_TRY(s.scan());
    return s;
}

// The index's entries, if its header carries the directory's current stamp and its lines are
// whole and in the order flush() writes them (strictly by address); otherwise nothing, and every
// reservation is read again, as the reference does on every call.
bool Store::load_index(std::string text) {
    auto first_line = text.find('\n');
    if (first_line == std::string::npos || std::string_view(text).substr(0, first_line) != std::string(kIndexHeader) + " " + dir_stamp())
        return false;
    index_text_ = std::make_unique<const std::string>(std::move(text));
    std::string_view rest = std::string_view(*index_text_).substr(first_line + 1);
    // room for what a call adds (an address per range set), so a reservation does not double it
    entries_.reserve(std::size_t(std::count(rest.begin(), rest.end(), '\n')) + 16);
    while (!rest.empty()) {
        auto end = rest.find('\n');
        auto line = rest.substr(0, end);
        rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
        if (line.empty()) continue;
        auto e = parse_index_line(line);
        if (!e || (!entries_.empty() && !(entries_.back().ip < e->ip))) {
            entries_.clear();
            index_text_.reset();
            return false;
        }
        entries_.push_back(*e);
    }
    return true;
}

Status Store::scan() {
    // The index exists before the directory is stamped, so writing it later in place does not
    // change the stamp.
    if (os::UniqueFd fd = dir_.open_own(kIndexName, O_WRONLY | O_CREAT, 0600); !fd)
        warn_("host-local: cannot create the index " + dir_.path_of(kIndexName) + ": " + os::errno_text(errno));
    // The index holds name, inode and owner as this implementation last left the directory. Its
    // entries are kept below only where the directory still has that name with that inode.
    auto text = read_small(kIndexName);
    dirty_ = !text || !load_index(std::move(*text));
    const std::size_t indexed = entries_.size();
    std::vector<bool> seen(indexed);

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
        auto ip = IpAddr::parse(name);
        if (!ip || ip->str() != name) {
            warn_("host-local: skipping " + dir_.path_of(name) + ": not an address reservation");
            continue;
        }
        auto it = std::lower_bound(entries_.begin(), entries_.begin() + std::ptrdiff_t(indexed), *ip, ip_before);
        if (it != entries_.begin() + std::ptrdiff_t(indexed) && it->ip == *ip && it->ino == e->d_ino) {
            seen[std::size_t(it - entries_.begin())] = true;  // the index is not read again
            continue;
        }
        Entry entry{*ip, e->d_ino, {}};
        if (e->d_type == DT_DIR) {
            warn_("host-local: " + dir_.path_of(name) + " is a directory; its address stays unavailable");
        } else {
            ++files_read_;
            auto content = read_small(std::string(name), &entry.ino);
            if (!content) {
                warn_("host-local: " + content.error().msg + "; its address stays unavailable");
            } else {
                entry.owner = keep_owner(std::move(*content));
                if (entry.owner.kind == OwnerKind::foreign)
                    warn_("host-local: " + dir_.path_of(name) +
                          " does not hold \"<containerID>\\r\\n<ifname>\"; its address stays unavailable");
            }
        }
        entries_.push_back(entry);  // after the indexed ones (no copy of them all on the first call)
    }
    // Keep the indexed entries still on disk, followed by the ones read from their files.
    std::size_t kept = 0;
    for (std::size_t i = 0; i < indexed; ++i)
        if (seen[i]) entries_[kept++] = entries_[i];
    const bool read_some = entries_.size() > indexed;
    dirty_ |= kept != indexed || read_some;
    entries_.erase(entries_.begin() + std::ptrdiff_t(kept), entries_.begin() + std::ptrdiff_t(indexed));
    if (read_some) std::sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) { return a.ip < b.ip; });
    return {};
}

OwnerView Store::keep_owner(std::string content) {
    return OwnerView::parse(owner_texts_.emplace_back(std::move(content)));
}

std::vector<Store::Entry>::iterator Store::find(const IpAddr& ip) {
    auto it = std::lower_bound(entries_.begin(), entries_.end(), ip, ip_before);
    return it != entries_.end() && it->ip == ip ? it : entries_.end();
}

void Store::put(const Entry& e) {
    auto it = std::lower_bound(entries_.begin(), entries_.end(), e.ip, ip_before);
    if (it != entries_.end() && it->ip == e.ip) *it = e;
    else entries_.insert(it, e);
    dirty_ = true;
}

bool Store::taken(const IpAddr& ip) const {
    auto it = std::lower_bound(entries_.begin(), entries_.end(), ip, ip_before);
    return it != entries_.end() && it->ip == ip;
}

std::size_t Store::count_taken_between(const IpAddr& first, const IpAddr& last) const {
    auto it = std::lower_bound(entries_.begin(), entries_.end(), first, ip_before);
    std::size_t n = 0;
    for (; it != entries_.end() && !(last < it->ip); ++it) ++n;
    return n;
}

Result<bool> Store::reserve(const IpAddr& ip, std::string_view id, std::string_view ifname, int set_index) {
    const std::string name = ip.str(), path = dir_.path_of(name);
    os::UniqueFd fd = dir_.open_regular(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (!fd) {
        if (errno != EEXIST) return dir_.open_failed(name, errno);
        Entry e{ip, 0, {}};
        if (auto content = read_small(name, &e.ino)) e.owner = keep_owner(std::move(*content));
        put(e);
        return false;
    }
    // A reserve that fails leaves no file behind: the caller has no address to release.
    auto abandon = [&](const std::string& failed, int err) -> Result<bool> {
        dir_.remove(name);
        return os::sys_fail("write", failed, err);
    };
    std::string content = std::string(trim_space(id)) + "\r\n" + std::string(ifname);
    struct stat st{};
    if (::write(fd.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size()) ||
        ::fstat(fd.get(), &st) != 0)
        return abandon(path, errno);
    fd.reset();
    std::string last = kLastReservedPrefix + std::to_string(set_index);
    os::UniqueFd lf = dir_.open_own(last, O_WRONLY | O_CREAT, 0600);
    if (!lf || !overwrite_in_place(lf.get(), ip.str())) return abandon(dir_.path_of(last), errno);
    put(Entry{ip, st.st_ino, keep_owner(std::move(content))});
    return true;
}

std::optional<IpAddr> Store::last_reserved(int set_index) const {
    auto text = read_small(kLastReservedPrefix + std::to_string(set_index));
    if (!text) return std::nullopt;
    return IpAddr::parse(*text);
}

std::vector<IpAddr> Store::find_by_id(std::string_view id, std::string_view ifname) const {
    std::vector<IpAddr> out;
    for (auto& e : entries_)
        if (e.owner.matches(id, ifname) || e.owner.matches_legacy(id)) out.push_back(e.ip);
    return out;
}

bool Store::has_id(std::string_view id, std::string_view ifname) const {
    for (auto& e : entries_)
        if (e.owner.matches(id, ifname)) return true;
    for (auto& e : entries_)
        if (e.owner.matches_legacy(id)) return true;
    return false;
}

Result<bool> Store::release_if(const IpAddr& ip, const std::function<bool(const Owner&)>& still_owned) {
    dirty_ = true;
    const std::string name = ip.str();
    auto content = read_small(name);
    if (!content) {
        if (auto it = find(ip); it != entries_.end()) entries_.erase(it);
        return false;
    }
    OwnerView now = keep_owner(std::move(*content));
    if (!still_owned(Owner::of(now))) {
        if (auto it = find(ip); it != entries_.end()) it->owner = now;
        return false;
    }
    if (!dir_.remove(name) && errno != ENOENT) return os::sys_fail("remove", dir_.path_of(name));
    if (auto it = find(ip); it != entries_.end()) entries_.erase(it);
    return true;
}

Status Store::release_by_id(std::string_view id, std::string_view ifname) {
    std::vector<IpAddr> current, legacy;
    for (auto& e : entries_) {
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

std::vector<std::pair<IpAddr, Owner>> Store::reservations() const {
    std::vector<std::pair<IpAddr, Owner>> out;
    out.reserve(entries_.size());
    for (auto& e : entries_) out.emplace_back(e.ip, Owner::of(e.owner));
    return out;
}

// Writes the index in place in 64 KiB pieces (no copy of it all in memory), then cuts it to
// length; no rename, so the directory's stamp stays what the header says.
void Store::flush() {
    if (!dirty_) return;
    std::string path = dir_.path_of(kIndexName);
    os::UniqueFd fd = dir_.open_regular(kIndexName, O_WRONLY);
    std::string chunk;
    off_t written = 0;
    bool ok = bool(fd);
    auto drain = [&] {
        if (ok && ::pwrite(fd.get(), chunk.data(), chunk.size(), written) != static_cast<ssize_t>(chunk.size())) ok = false;
        written += off_t(chunk.size());
        chunk.clear();
    };
    chunk.reserve(64 * 1024 + 512);
    chunk.append(kIndexHeader).append(" ").append(dir_stamp()).append("\n");
    for (auto& e : entries_) {
        const char* kind = e.owner.kind == OwnerKind::current ? " c" : e.owner.kind == OwnerKind::legacy ? " l" : " f";
        chunk.append(e.ip.str()).append(" ").append(std::to_string(e.ino)).append(kind);
        if (e.owner.kind != OwnerKind::foreign) chunk.append(" ").append(e.owner.id);
        if (e.owner.kind == OwnerKind::current) chunk.append(" ").append(e.owner.ifname);
        chunk.append(" ;\n");
        if (chunk.size() >= 64 * 1024) drain();
    }
    drain();
    if (!ok || ::ftruncate(fd.get(), written) != 0) {
        warn_("host-local: cannot write the index " + path + ": " + os::errno_text(errno));
        if (fd) (void)::ftruncate(fd.get(), 0);
        return;
    }
    dirty_ = false;
}

}  // namespace cni::ipam
