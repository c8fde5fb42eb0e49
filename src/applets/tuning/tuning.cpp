// SPDX-License-Identifier: Apache-2.0
// tuning (docs/compatibility.md: tuning): a chained plugin that writes network sysctls in the
// container namespace and changes CNI_IFNAME's MAC, MTU, promisc, allmulti and txqueuelen.
// Sysctl keys are dotted or slashed, IFNAME becomes CNI_IFNAME, and the resulting path must stay
// under /proc/sys/net/ (".." is refused outright); /etc/cni/tuning/allowlist.conf, when present,
// limits the keys to those matching one of its (unanchored) patterns. The original values go
// to <dataDir>/<containerID>_<ifname>.json in the reference's format, so either implementation
// restores them on DEL. Beyond the reference: the backup also holds the original sysctl values
// (DEL restores them too) and the network name (GC removes this network's backups of
// attachments that are gone); a failed ADD puts back what it changed; DEL with the netns or
// the link gone still removes the backup. DEL, like the reference's, always succeeds.
#include <dirent.h>
#include <linux/if.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <optional>
#include <set>

#include "applets/tuning/backup.hpp"
#include "applets/tuning/garp.hpp"
#include "applets/tuning/regexp.hpp"
#include "core/applet.hpp"
#include "core/cni/netconf.hpp"
#include "core/go_num.hpp"
#include "core/iface/sockets.hpp"
#include "core/net/mac.hpp"
#include "core/nl/link.hpp"
#include "core/os/errno_error.hpp"
#include "core/os/fs.hpp"
#include "core/os/netns.hpp"
#include "core/os/sysctl.hpp"
#include "core/rollback.hpp"
#include "core/strings.hpp"

namespace cni::tuning {
namespace {

constexpr const char* kAllowlist = "/etc/cni/tuning/allowlist.conf";

struct TuningConf {
    NetConf net;
    std::string data_dir = "/run/cni/tuning";
    std::map<std::string, std::string> sysctl;  // key as configured -> value
    std::string mac;                            // normalised; "" = leave alone
    bool promisc = false;
    std::int64_t mtu = 0;  // Go ints, as txQLen
    std::optional<std::int64_t> txqlen;
    std::optional<bool> allmulti;
    bool changes_link() const { return !mac.empty() || promisc || mtu != 0 || txqlen || allmulti; }
};


constexpr std::array kTuningKeys{
    key<&TuningConf::sysctl>("sysctl", "name -> value under /proc/sys/net/, dotted or slashed; IFNAME stands for CNI_IFNAME; "
                                       "/etc/cni/tuning/allowlist.conf limits the names"),
    key<&TuningConf::mac>("mac", "the interface's MAC; CNI_ARGS MAC, runtimeConfig mac and args.cni.mac win over it"),
    key<&TuningConf::promisc>("promisc", "promiscuous mode"),
    key<&TuningConf::mtu>("mtu", "the interface's MTU; 0: left alone"),
    key<&TuningConf::txqlen>("txQLen", "the transmit queue length"),
    key<&TuningConf::allmulti>("allmulti", "all-multicast mode"),
    key<&TuningConf::data_dir>("dataDir", "where the originals are kept for DEL; default /run/cni/tuning"),
};

// args.cni (Go's IPAMArgs): the same keys, over the top-level ones.
struct TuningArgs {
    std::map<std::string, std::string> sysctl;
    std::optional<std::string> mac;
    std::optional<bool> promisc;
    std::optional<std::int64_t> mtu, txqlen;
    std::optional<bool> allmulti;
};

constexpr std::array kTuningArgsKeys{
    key<&TuningArgs::sysctl>("sysctl", ""),   key<&TuningArgs::mac>("mac", ""),
    key<&TuningArgs::promisc>("promisc", ""), key<&TuningArgs::mtu>("mtu", ""),
    key<&TuningArgs::txqlen>("txQLen", ""),   key<&TuningArgs::allmulti>("allmulti", ""),
};

Result<TuningConf> parse_tuning_conf(const Request& req) {
    CNI_TRY_ASSIGN(auto c, load_config(req.config, kTuningKeys, "TuningConf"));
    const json::Value& root = c.net.root();
    const json::Where& w = c.net.where;
    if (c.data_dir.empty()) c.data_dir = "/run/cni/tuning";

    // The MAC: CNI_ARGS MAC, then runtimeConfig mac, then args.cni.mac (the last one set wins).
    CNI_TRY_ASSIGN(c.mac, layered_mac(req.args, c.net, w, std::move(c.mac)));
    CNI_TRY_ASSIGN(auto args, json::anonymous_struct(root, "args", w, R"(struct { A *main.IPAMArgs "json:\"cni\"" })"));
    CNI_TRY_ASSIGN(auto a, json::struct_member(args.object, "cni", args.inner, "main.IPAMArgs"));
    if (a) {
        TuningArgs over;
        CNI_TRY(read_keys(*a, kTuningArgsKeys, over, args.inner.at("cni").in("IPAMArgs")));
        for (auto& [name, value] : over.sysctl) c.sysctl[name] = value;  // merged over the top-level map
        if (over.mac) c.mac = *over.mac;
        if (over.promisc) c.promisc = *over.promisc;
        if (over.mtu) c.mtu = *over.mtu;
        if (over.txqlen) c.txqlen = over.txqlen;
        if (over.allmulti) c.allmulti = over.allmulti;
    }
    return c;
}

// The values ADD applies and CHECK compares; DEL and GC do not need them, so a value ADD refused
// does not also fail the DEL that cleans up after it (as in the reference, which checks them when
// applying). Normalises the MAC.
Status check_values(TuningConf& c) {
    CNI_TRY_ASSIGN(c.mac, net::configured_mac(c.mac, net::MacWording::args));
    // Go ints, which the kernel holds in 32 bits (checked here, before anything changes).
    if (c.mtu < 0) return fail("invalid mtu " + std::to_string(c.mtu) + ": it must not be negative");
    if (c.mtu > kMaxKernelU32) return fail("invalid mtu " + std::to_string(c.mtu) + ": it must not exceed 4294967295");
    if (c.txqlen && *c.txqlen < 0) return fail("invalid txQLen " + std::to_string(*c.txqlen) + ": it must not be negative");
    if (c.txqlen && *c.txqlen > kMaxKernelU32)
        return fail("invalid txQLen " + std::to_string(*c.txqlen) + ": it must not exceed 4294967295");
    return {};
}

// "net.ipv4.conf.IFNAME.arp_filter" -> "/proc/sys/net/ipv4/conf/eth0/arp_filter": separators
// converted first, so a dotted interface name (eth0.100) stays one component.
Result<std::string> sysctl_file(const std::string& key, const std::string& ifname) {
    std::string path = os::sysctl_path(key);
    if (auto at = path.find("IFNAME"); at != std::string::npos) path.replace(at, 6, ifname);
    std::string clean;
    for (auto part : split(path, '/')) {
        if (part.empty() || part == ".") continue;
        if (part == "..") return fail("invalid net sysctl key: " + go_quote(key) + ": \"..\" is not allowed");
        clean += "/" + std::string(part);
    }
    if (!clean.starts_with("/proc/sys/net/")) return fail("invalid net sysctl key: " + go_quote(key));
    return clean;
}

// The allowlist, when the file exists: every key must match one of its non-empty lines, each a
// Go regexp.
Status check_allowlist(const std::map<std::string, std::string>& sysctl) {
    if (sysctl.empty()) return {};
    CNI_TRY_ASSIGN(auto text, os::read_file_if_exists(kAllowlist));
    if (!text) return {};
    std::vector<std::string> lines;
    for (auto line : split(*text, '\n'))
        if (auto t = trim_space(line); !t.empty()) lines.emplace_back(t);
    std::vector<Regexp> patterns;
    for (auto& l : lines) {
        auto re = Regexp::compile(l);
        if (!re) return fail(std::string("invalid pattern ") + go_quote(l) + " in " + kAllowlist + ": " + re.error().msg);
        patterns.push_back(std::move(*re));
    }
    for (auto& [key, value] : sysctl) {
        bool ok = false;
        for (auto& p : patterns) ok = ok || p.search(key);
        if (!ok) {
            std::string list = "[";
            for (std::size_t i = 0; i < lines.size(); ++i) list += (i ? " " : "") + lines[i];
            return fail("Sysctl " + key + " is not allowed. Only the following sysctls are allowed: " + list + "]");
        }
    }
    return {};
}

// The os::sysctl name of a /proc/sys path as sysctl_file returns it.
std::string sysctl_name(const std::string& path) { return path.substr(std::string_view("/proc/sys/").size()); }

std::string backup_name(const Request& r) { return r.container_id + "_" + r.ifname + ".json"; }
std::string backup_path(const TuningConf& c, const Request& r) { return c.data_dir + "/" + backup_name(r); }

Status save_backup(const TuningConf& c, const Request& r, const Backup& b) {
    auto dir = os::Dir::create(c.data_dir, 0700);
    if (!dir) return fail("failed to create backup directory: " + dir.error().msg);
    if (auto st = dir->write_atomic(backup_name(r), encode_backup(b), 0600); !st)
        return fail("failed to save file " + backup_path(c, r) + ": " + st.error().msg);
    return {};
}

// Puts the link attributes and sysctls of a backup back; every failure is collected. The backup
// is a file anyone able to write the data directory could have written: a sysctl path in it is
// restored only where ADD could have written it (os::net_sysctl_set), any other is skipped and
// reported.
std::vector<std::string> restore(const nl::Socket& s, const std::string& ifname, const Backup& b) {
    std::vector<std::string> errors;
    for (auto& [path, value] : b.sysctl) {
        if (!os::is_net_sysctl_path(path)) {
            errors.push_back("skipped " + go_quote(path) + " in the backup: not a sysctl under /proc/sys/net");
            continue;
        }
        if (::access(path.c_str(), F_OK) == 0)  // per-interface sysctls leave with their interface
            if (auto st = os::net_sysctl_set(path, value); !st) errors.push_back("failed to restore " + path + ": " + st.error().msg);
    }
    auto link = nl::find_link(s, ifname);
    if (!link || !*link) return errors;
    auto note = [&](const Status& st, const char* what) {
        if (!st) errors.push_back(std::string("failed to restore ") + what + ": " + st.error().msg);
    };
    if (b.mtu) note(nl::set_mtu(s, **link, b.mtu), "MTU");
    if (!b.mac.empty()) note(nl::set_mac(s, **link, b.mac), "MAC address");
    if (b.promisc) note(nl::set_promisc(s, **link, *b.promisc), "promiscuous mode");
    if (b.allmulti) note(nl::set_allmulti(s, **link, *b.allmulti), "all-multicast mode");
    if (b.txqlen) note(nl::set_txqlen(s, **link, *b.txqlen), "transmit queue length");
    return errors;
}

// The sysctl files the config names (allowlist and path checks), each with its value.
Result<std::map<std::string, std::string>> sysctl_files(const TuningConf& c, const std::string& ifname) {
    CNI_TRY(check_allowlist(c.sysctl));
    std::map<std::string, std::string> files;  // path -> value
    for (auto& [key, value] : c.sysctl) {
        CNI_TRY_ASSIGN(auto path, sysctl_file(key, ifname));
        if (files.contains(path)) return fail("sysctl " + go_quote(key) + " names " + path + " again");
        files[path] = value;
    }
    return files;
}

// What ADD is about to change, as it is now (in the container's namespace).
Backup originals(const TuningConf& c, const std::map<std::string, std::string>& files, const std::optional<nl::LinkInfo>& link) {
    Backup orig;
    orig.network = c.net.name;
    for (auto& [path, value] : files) orig.sysctl[path] = os::sysctl_get(sysctl_name(path)).value_or("");
    if (!link) return orig;
    if (!c.mac.empty()) orig.mac = link->mac;
    if (c.promisc) orig.promisc = (link->flags & IFF_PROMISC) != 0;
    if (c.mtu) orig.mtu = link->mtu;
    if (c.allmulti) orig.allmulti = (link->flags & IFF_ALLMULTI) != 0;
    if (c.txqlen) orig.txqlen = link->txqlen;
    return orig;
}

// The configured link attributes; a new MAC is announced (gratuitous ARP for each IPv4 address)
// and replaces the interface's in `result`.
Status apply_to_link(const nl::Socket& sock, const TuningConf& c, const nl::LinkInfo& link, const std::string& ifname,
                     CniResult& result) {
    if (!c.mac.empty()) {
        CNI_TRY(nl::set_mac(sock, link, c.mac));
        for (auto& ip : result.ips)
            if (ip.address.ip.is_v4()) (void)send_gratuitous_arp(link.index, c.mac, ip.address.ip);
        for (auto& i : result.interfaces)
            if (i.name == ifname) i.mac = c.mac;
    }
    if (c.promisc) CNI_TRY(nl::set_promisc(sock, link, true));
    if (c.mtu) CNI_TRY(nl::set_mtu(sock, link, c.mtu));
    if (c.allmulti) CNI_TRY(nl::set_allmulti(sock, link, *c.allmulti));
    if (c.txqlen) CNI_TRY(nl::set_txqlen(sock, link, *c.txqlen));
    return {};
}

Result<CniResult> tuning_add(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_tuning_conf(ctx.req));
    CNI_TRY(check_values(c));
    const Request& r = ctx.req;
    CNI_TRY_ASSIGN(auto result, require_prev_result(c.net, "Required prevResult missing"));
    // Go prints the prevResult as it decoded it, unless it set a MAC, which replaces it with its
    // conversion to 1.x (0.4.0 "version" then recomputed).
    result.echo_given_versions = c.mac.empty();
    CNI_TRY_ASSIGN(auto files, sysctl_files(c, r.ifname));

    CNI_TRY_ASSIGN(auto io, iface::open_container(ctx));
    CNI_TRY_ASSIGN(auto guard, os::NetnsGuard::enter(io.ns));  // /proc/sys/net is the namespace's
    std::optional<nl::LinkInfo> link;
    if (c.changes_link()) {
        CNI_TRY_ASSIGN(link, nl::find_link(io.container, r.ifname));
        if (!link) return fail("failed to get " + go_quote(r.ifname) + ": Link not found");
    }
    Backup orig = originals(c, files, link);
    Rollback undo;
    if (c.changes_link() || !files.empty()) {
        CNI_TRY(save_backup(c, r, orig));
        undo.push([&] {
            (void)restore(io.container, r.ifname, orig);
            if (auto dir = os::Dir::open(c.data_dir)) dir->remove(backup_name(r));  // never through a link
        });
    }
    for (auto& [path, value] : files) CNI_TRY(os::net_sysctl_set(path, value));
    if (link) CNI_TRY(apply_to_link(io.container, c, *link, r.ifname, result));
    undo.dismiss();
    return result;
}

Status tuning_del(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_tuning_conf(ctx.req));
    const Request& r = ctx.req;
    auto dir = os::Dir::open(c.data_dir);
    if (!dir) return {};  // nothing was changed, or it was restored already
    auto text = dir->read_if_exists(backup_name(r));
    if (!text) {  // a link, a directory, a FIFO: nothing ADD wrote, and not to be read through
        ctx.warn("tuning: " + text.error().msg);
        dir->remove(backup_name(r));
        return {};
    }
    if (!*text) return {};
    auto backup = decode_backup(**text);
    if (!backup) ctx.warn("tuning: " + backup_path(c, r) + ": " + backup.error().msg);
    auto io = iface::open_container_if_exists(ctx);
    if (backup && io && *io) {
        auto guard = os::NetnsGuard::enter((*io)->ns);
        if (guard)
            for (auto& e : restore((*io)->container, r.ifname, *backup)) ctx.warn("tuning: " + e);
    }
    dir->remove(backup_name(r));
    return {};
}

Status tuning_check(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_tuning_conf(ctx.req));
    CNI_TRY(check_values(c));
    const Request& r = ctx.req;
    CNI_TRY(require_prev_result(c.net, "Required prevResult missing"));
    CNI_TRY_ASSIGN(auto io, iface::open_container(ctx));
    CNI_TRY_ASSIGN(auto guard, os::NetnsGuard::enter(io.ns));
    for (auto& [key, value] : c.sysctl) {
        CNI_TRY_ASSIGN(auto path, sysctl_file(key, r.ifname));
        CNI_TRY_ASSIGN(auto cur, os::sysctl_get(sysctl_name(path)));
        if (cur != value)
            return fail("Error: Tuning configured value of " + path + " is " + value + ", current value is " + cur);
    }
    CNI_TRY_ASSIGN(auto found, nl::find_link(io.container, r.ifname));
    if (!found) return fail("Cannot find container link " + r.ifname);
    const nl::LinkInfo& link = *found;
    if (!c.mac.empty() && c.mac != link.mac)
        return fail("Error: Tuning configured Ethernet of " + r.ifname + " is " + c.mac + ", current value is " + link.mac);
    int promisc = (link.flags & IFF_PROMISC) ? 1 : 0;
    if (c.promisc != (promisc != 0))
        return fail("Error: Tuning link " + r.ifname + " configured promisc is " + (c.promisc ? "true" : "false") +
                    ", current value is " + std::to_string(promisc));
    if (c.mtu && c.mtu != link.mtu)
        return fail("Error: Tuning configured MTU of " + r.ifname + " is " + std::to_string(c.mtu) + ", current value is " +
                    std::to_string(link.mtu));
    bool allmulti = (link.flags & IFF_ALLMULTI) != 0;
    if (c.allmulti && *c.allmulti != allmulti)
        return fail("Error: Tuning configured all-multicast mode of " + r.ifname + " is " + (*c.allmulti ? "true" : "false") +
                    ", current value is " + (allmulti ? "true" : "false"));
    if (c.txqlen && *c.txqlen != link.txqlen)
        return fail("Error: Tuning configured Transmit Queue Length of " + r.ifname + " is " + std::to_string(*c.txqlen) +
                    ", current value is " + std::to_string(link.txqlen));
    return {};
}

// Backups this network wrote (they name it) for attachments no longer in the valid list.
// Backups without a network (the reference's) are never collected: the directory is shared.
Status tuning_gc(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_tuning_conf(ctx.req));
    if (!c.net.valid_attachments) return {};
    std::set<std::string> keep;
    for (auto& a : *c.net.valid_attachments) keep.insert(a.container_id + "_" + a.ifname + ".json");
    auto dir = os::Dir::open(c.data_dir);
    if (!dir) return {};
    std::vector<std::string> stale;
    for (auto& name : dir->names()) {
        if (!name.ends_with(".json") || keep.contains(name)) continue;
        auto text = dir->read_if_exists(name);
        if (!text || !*text) continue;
        if (auto b = decode_backup(**text); b && b->network == c.net.name) stale.push_back(name);
    }
    for (auto& name : stale) dir->remove(name);
    return {};
}

constexpr auto kTuningKeyDocs = docs_of(kTuningKeys);

}  // namespace

extern const Applet tuning_applet{
    .name = "tuning",
    .kind = AppletKind::meta,
    .summary = "sysctls and link attributes of the container interface (chained)",
    .keys = kTuningKeyDocs,
    .help = "args.cni may set the same keys (its sysctl map is merged over the top-level one). Needs prevResult. "
            "DEL restores the saved originals (sysctls too).",
    .versions = kAllVersions,
    .add = tuning_add,
    .del = tuning_del,
    .check = tuning_check,
    .gc = tuning_gc,
};

}  // namespace cni::tuning
