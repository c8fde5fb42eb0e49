// SPDX-License-Identifier: Apache-2.0
// host-local on-disk store with an inode-checked index (see store.hpp).
#include "core/ipam/store.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <charconv>
#include <memory>
#include <unordered_map>

#include "core/os/errno_error.hpp"
#include "core/os/fs.hpp"
#include "core/os/unique_fd.hpp"
#include "core/strings.hpp"

namespace cni::ipam {
namespace {

constexpr std::string_view kIndexHeader = "cni-all host-local index 2";
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
// both callers tolerate that (the index is checked entry by entry against the directory, and
// last_reserved_ip is only where the next search starts).
bool overwrite_in_place(int fd, std::string_view text) {
    return ::pwrite(fd, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()) &&
           ::ftruncate(fd, static_cast<off_t>(text.size())) == 0;
}

std::string join(std::string a, std::string_view b) {
    while (a.size() > 1 && a.back() == '/') a.pop_back();
    return a + "/" + std::string(b);
}

Result<std::string> read_small(const std::string& path, ino_t* ino = nullptr) {
    os::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return os::sys_fail("open", path);
    if (ino) {
        struct stat st{};
        if (::fstat(fd.get(), &st) == 0) *ino = st.st_ino;
    }
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd.get(), buf, sizeof buf)) > 0 && out.size() < (1u << 20)) out.append(buf, std::size_t(n));
    if (n < 0) return os::sys_fail("read", path);
    return out;
}

}  // namespace

// One index line: "<ip> <inode> c <id> <ifname> ;", "<ip> <inode> l <id> ;" or
// "<ip> <inode> f ;". A line without its terminator (a torn write) is ignored.
std::optional<std::pair<std::string_view, Store::Entry>> Store::parse_index_line(std::string_view line) {
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
    unsigned long long ino = 0;
    auto [ptr, ec] = std::from_chars(f[1].data(), f[1].data() + f[1].size(), ino);
    if (ec != std::errc() || ptr != f[1].data() + f[1].size()) return std::nullopt;
    Entry e;
    e.ino = ino_t(ino);
    if (f[2] == "c" && n == 6) e.owner = Owner{Owner::Kind::current, std::string(f[3]), std::string(f[4])};
    else if (f[2] == "l" && n == 5) e.owner = Owner{Owner::Kind::legacy, std::string(f[3]), {}};
    else if (f[2] != "f" || n != 4) return std::nullopt;
    return std::pair{f[0], std::move(e)};
}

Owner Owner::parse(std::string_view content) {
    auto t = trim_space(content);
    Owner o;
    if (auto pos = t.find("\r\n"); pos != std::string_view::npos) {
        auto id = t.substr(0, pos), ifn = t.substr(pos + 2);
        if (printable_token(id) && printable_token(ifn)) o = Owner{Kind::current, std::string(id), std::string(ifn)};
    } else if (printable_token(t)) {
        o = Owner{Kind::legacy, std::string(t), {}};
    }
    return o;
}

bool Owner::matches(std::string_view want_id, std::string_view want_if) const {
    return kind == Kind::current && id == trim_space(want_id) && ifname == want_if;
}

bool Owner::matches_legacy(std::string_view want_id) const { return kind == Kind::legacy && id == trim_space(want_id); }

Result<Store> Store::open(const std::string& data_dir, const std::string& network, Warn warn) {
    std::string dir = join(data_dir.empty() ? std::string("/var/lib/cni/networks") : data_dir, network);
    CNI_TRY(os::mkdir_all(dir, 0755));
    CNI_TRY_ASSIGN(auto lock, os::FileLock::acquire(join(dir, "lock")));
    Store s(dir, std::move(lock), std::move(warn));
    CNI_TRY(s.scan());
    return s;
}

// The directory's mtime and ctime: any file created or removed in it changes them.
std::string dir_stamp(const std::string& dir) {
    struct stat st{};
    if (::stat(dir.c_str(), &st) != 0) return "?";
    return std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + "/" +
           std::to_string(st.st_ctim.tv_sec) + "." + std::to_string(st.st_ctim.tv_nsec);
}

Status Store::scan() {
    // The index exists before the directory is stamped, so writing it later in place does not
    // change the stamp.
    std::string index_path = join(dir_, kIndexName);
    if (os::UniqueFd fd(::open(index_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600)); !fd)
        warn_("host-local: cannot create the index " + index_path + ": " + os::errno_text(errno));
    std::string stamp = dir_stamp(dir_);

    // The index: name -> (inode, owner) as this implementation last left the directory. It is
    // trusted only if nothing created or removed a file since (same stamp); otherwise every
    // reservation is read again, as the reference does on every call.
    std::unordered_map<std::string_view, Entry> index;
    bool trusted = false;
    auto text = read_small(index_path);
    if (text) {
        auto lines = split(*text, '\n');
        if (!lines.empty() && lines[0] == std::string(kIndexHeader) + " " + stamp) {
            trusted = true;
            index.reserve(lines.size());
            for (std::size_t i = 1; i < lines.size(); ++i)
                if (auto parsed = parse_index_line(lines[i])) index.emplace(parsed->first, std::move(parsed->second));
        }
    }
    dirty_ = !trusted;

    std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir_.c_str()), ::closedir);
    if (!d) return os::sys_fail("open", dir_);
    std::size_t seen_indexed = 0;
    while (dirent* e = ::readdir(d.get())) {
        std::string_view name = e->d_name;
        if (name == "." || name == ".." || name == "lock" || name.starts_with(kLastReservedPrefix) ||
            name.starts_with(kIndexName))
            continue;
        auto ip = IpAddr::parse(name);
        auto it = index.find(name);
        bool indexed = ip && it != index.end() && it->second.ino == e->d_ino;  // indexed names are canonical
        if (!ip || (!indexed && ip->str() != name)) {
            warn_("host-local: skipping " + join(dir_, name) + ": not an address reservation");
            continue;
        }
        if (indexed) {
            entries_[*ip] = std::move(it->second);  // the index is not read again
            ++seen_indexed;
            continue;
        }
        dirty_ = true;
        Entry entry;
        entry.ino = e->d_ino;
        if (e->d_type == DT_DIR) {
            warn_("host-local: " + join(dir_, name) + " is a directory; its address stays unavailable");
        } else {
            ++files_read_;
            auto content = read_small(join(dir_, name), &entry.ino);
            if (!content) {
                warn_("host-local: " + content.error().msg + "; its address stays unavailable");
            } else {
                entry.owner = Owner::parse(*content);
                if (entry.owner.kind == Owner::Kind::foreign)
                    warn_("host-local: " + join(dir_, name) +
                          " does not hold \"<containerID>\\r\\n<ifname>\"; its address stays unavailable");
            }
        }
        entries_[*ip] = std::move(entry);
    }
    if (seen_indexed != index.size()) dirty_ = true;
    return {};
}

std::size_t Store::count_taken_between(const IpAddr& first, const IpAddr& last) const {
    std::size_t n = 0;
    for (auto it = entries_.lower_bound(first); it != entries_.end() && !(last < it->first); ++it) ++n;
    return n;
}

Result<bool> Store::reserve(const IpAddr& ip, std::string_view id, std::string_view ifname, int set_index) {
    std::string path = join(dir_, ip.str());
    os::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!fd) {
        if (errno != EEXIST) return os::sys_fail("open", path);
        Entry e;
        if (auto content = read_small(path, &e.ino)) e.owner = Owner::parse(*content);
        entries_[ip] = e;
        dirty_ = true;
        return false;
    }
    std::string content = std::string(trim_space(id)) + "\r\n" + std::string(ifname);
    struct stat st{};
    if (::write(fd.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size()) ||
        ::fstat(fd.get(), &st) != 0) {
        int err = errno;
        ::unlink(path.c_str());
        return os::sys_fail("write", path, err);
    }
    fd.reset();
    entries_[ip] = Entry{Owner{Owner::Kind::current, std::string(trim_space(id)), std::string(ifname)}, st.st_ino};
    dirty_ = true;
    std::string last = join(dir_, kLastReservedPrefix + std::to_string(set_index));
    os::UniqueFd lf(::open(last.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
    if (!lf || !overwrite_in_place(lf.get(), ip.str()))
        return os::sys_fail("write", last);
    return true;
}

std::optional<IpAddr> Store::last_reserved(int set_index) const {
    auto text = read_small(join(dir_, kLastReservedPrefix + std::to_string(set_index)));
    if (!text) return std::nullopt;
    return IpAddr::parse(*text);
}

std::vector<IpAddr> Store::find_by_id(std::string_view id, std::string_view ifname) const {
    std::vector<IpAddr> out;
    for (auto& [ip, e] : entries_)
        if (e.owner.matches(id, ifname) || e.owner.matches_legacy(id)) out.push_back(ip);
    return out;
}

bool Store::has_id(std::string_view id, std::string_view ifname) const {
    for (auto& [ip, e] : entries_)
        if (e.owner.matches(id, ifname)) return true;
    for (auto& [ip, e] : entries_)
        if (e.owner.matches_legacy(id)) return true;
    return false;
}

std::optional<Owner> Store::read_owner(const IpAddr& ip) const {
    auto content = read_small(join(dir_, ip.str()));
    if (!content) return std::nullopt;
    return Owner::parse(*content);
}

Result<bool> Store::release_if(const IpAddr& ip, const std::function<bool(const Owner&)>& still_owned) {
    auto it = entries_.find(ip);
    dirty_ = true;
    auto owner = read_owner(ip);
    if (!owner) {
        if (it != entries_.end()) entries_.erase(it);
        return false;
    }
    if (!still_owned(*owner)) {
        if (it != entries_.end()) it->second.owner = *owner;
        return false;
    }
    std::string path = join(dir_, ip.str());
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return os::sys_fail("remove", path);
    if (it != entries_.end()) entries_.erase(it);
    return true;
}

Status Store::release_by_id(std::string_view id, std::string_view ifname) {
    std::vector<IpAddr> current, legacy;
    for (auto& [ip, e] : entries_) {
        if (e.owner.matches(id, ifname)) current.push_back(ip);
        else if (e.owner.matches_legacy(id)) legacy.push_back(ip);
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
    for (auto& [ip, e] : entries_) out.emplace_back(ip, e.owner);
    return out;
}

void Store::flush() {
    if (!dirty_) return;
    std::string text(kIndexHeader);
    text += " " + dir_stamp(dir_) + "\n";
    text.reserve(entries_.size() * 48);
    for (auto& [ip, e] : entries_) {
        const char* kind = e.owner.kind == Owner::Kind::current ? " c" : e.owner.kind == Owner::Kind::legacy ? " l" : " f";
        text += ip.str();
        text += ' ';
        text += std::to_string(e.ino);
        text += kind;
        if (e.owner.kind != Owner::Kind::foreign) (text += ' ') += e.owner.id;
        if (e.owner.kind == Owner::Kind::current) (text += ' ') += e.owner.ifname;
        text += " ;\n";
    }
    // Written in place (no rename), so the directory's stamp stays what the header says.
    std::string path = join(dir_, kIndexName);
    os::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd || !overwrite_in_place(fd.get(), text)) {
        warn_("host-local: cannot write the index " + path + ": " + os::errno_text(errno));
        if (fd) (void)::ftruncate(fd.get(), 0);
        return;
    }
    dirty_ = false;
}

}  // namespace cni::ipam
