// SPDX-License-Identifier: Apache-2.0
// The dhcp daemon: flags, listener, request handling and lease threads (see daemon.hpp).
#include "applets/dhcp/daemon.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <memory>
#include <system_error>
#include <thread>

#include "applets/dhcp/admission.hpp"
#include "applets/dhcp/attachment.hpp"
#include "applets/dhcp/protocol.hpp"
#include "core/cni/netconf.hpp"
#include "core/cni/request.hpp"
#include "core/log/logger.hpp"
#include "core/os/errno_error.hpp"
#include "core/os/fs.hpp"
#include "core/os/unix_socket.hpp"

namespace cni::dhcp {
namespace {

using namespace std::chrono_literals;

// A client gets this long for its whole request (a slow sender cannot hold a thread), and at
// most kMaxConnections are served at once (admission.hpp); more are refused (closed) until one
// ends.
constexpr auto kRequestDeadline = 30s;
constexpr uid_t kAllowedUid = 0;  // only root's plugins may ask: a request enters any netns path

// The daemon's log: every line but debug ones on stderr, as the reference's daemon writes, and,
// when the node's logging settings ask for it (core/log/logger.hpp), in that log at its level.
class DaemonLog {
public:
    explicit DaemonLog(const log::Settings& s) : logger_(s) {
        if (!logger_.problem().empty()) std::fprintf(stderr, "dhcp daemon: not logging: %s\n", logger_.problem().c_str());
    }
    void operator()(log::Level level, const std::string& msg) const {
        std::lock_guard lock(mu_);
        if (level != log::Level::debug) {
            std::fprintf(stderr, "dhcp daemon: %s\n", msg.c_str());
            std::fflush(stderr);
        }
        logger_.write(level, "dhcp daemon: " + msg);
    }
    // The info-level writer the lease store and attachments take.
    std::function<void(const std::string&)> info() const {
        return [this](const std::string& m) { (*this)(log::Level::info, m); };
    }

private:
    log::Logger logger_;
    mutable std::mutex mu_;
};

// The attachments and what each request does to them.
class Daemon {
public:
    Daemon(const DaemonOptions& o, const DaemonLog& log) : opts_(o), store_(o.hostprefix + o.lease_dir), log_(log) {}
    const DaemonLog& log() const { return log_; }

    // The records on disk, an attachment's DHCPv4 and DHCPv6 ones together, each resumed.
    void resume() {
        std::map<std::string, std::pair<std::optional<LeaseRecord>, std::optional<LeaseRecord>>> by_key;
        for (auto& rec : store_.load_all(log_.info())) {
            auto& slot = by_key[rec.key];
            (rec.v6 ? slot.second : slot.first) = std::move(rec);
        }
        for (auto& [key, recs] : by_key) {
            const LeaseRecord& rec = recs.first ? *recs.first : *recs.second;
            auto conf = parse_dhcp_conf(rec.config, rec.args);
            if (!conf) {
                log_(log::Level::error, "dropping the lease of " + shown(key) + ": " + conf.error().msg);
                store_.remove(key);
                continue;
            }
            std::optional<LeaseRecord> v4, v6;
            std::string addresses;
            if (recs.first && wants_v4(conf->protocol)) v4 = recs.first, addresses = v4->lease.address_text();
            if (recs.second && wants_v6(conf->protocol))
                v6 = recs.second, addresses += (addresses.empty() ? "" : ", ") + v6->lease6.address_text();
            log_(log::Level::info, "resuming the lease of " + shown(key) + " (" + addresses + ")");
            try {
                leases_[key] = start_attachment(rec, *conf, opts_.timing, store_, log_.info(), v4, v6);
            } catch (const std::system_error& e) {  // kept on record: the next start resumes it
                leases_.erase(key);
                log_(log::Level::error, "cannot resume the lease of " + shown(key) + " now: " + e.what());
            }
        }
    }

    // A request's reply; a failure to start a lease thread (std::system_error) is its error,
    // never an abort that would stop every renewal on the node. `hung_up` says whether the
    // client went away (an ADD waiting for its lease then stops waiting).
    std::string handle(std::string_view text, const std::function<bool()>& hung_up) {
        try {
            return dispatch(text, hung_up);
        } catch (const std::exception& e) {
            return encode_reply(fail(code::try_again_later, std::string("dhcp daemon: ") + e.what()));
        }
    }

    std::string dispatch(std::string_view text, const std::function<bool()>& hung_up) {
        auto req = decode_request(text);
        log_(log::Level::debug, "request: " + std::string(text));
        if (!req) return encode_reply(cni::Unexpected(req.error()));
        switch (req->op) {
        case Op::add: return encode_reply(add(*req, hung_up));
        case Op::del: return encode_reply(done(del(*req)));
        case Op::check: return encode_reply(done(check(*req)));
        case Op::gc: return encode_reply(done(gc(*req)));
        case Op::status: return encode_reply(std::optional<CniResult>{});
        }
        return encode_reply(fail(code::decoding_failure, "unknown op"));
    }

    void shutdown() {
        std::map<std::string, std::shared_ptr<Attachment>> all;
        {
            std::lock_guard lock(mu_);
            all.swap(leases_);
        }
        for (auto& [key, att] : all) att->stop(false);
    }

private:
    static DaemonReply done(const Status& st) {
        if (!st) return cni::Unexpected(st.error());
        return std::optional<CniResult>{};
    }

    static Status require_identity(const DaemonRequest& r) {
        if (r.container_id.empty()) return fail(code::invalid_env, "required env variables [CNI_CONTAINERID] missing");
        if (r.ifname.empty()) return fail(code::invalid_env, "required env variables [CNI_IFNAME] missing");
        return {};
    }

    DaemonReply add(const DaemonRequest& r, const std::function<bool()>& hung_up) {
        CNI_TRY(require_identity(r));
        if (r.netns.empty() || r.netns[0] != '/')
            return fail(code::invalid_netns, "the network namespace must be an absolute path, got \"" + r.netns + "\"");
        CNI_TRY_ASSIGN(auto conf, parse_dhcp_conf(r.config, r.args));
        std::string key = lease_key(r.container_id, conf.name, r.ifname);
        auto ticket = acquisitions_.admit(tenant_of(conf.name, r.args));  // held until the lease comes or the ADD ends
        if (!ticket) {
            log_(log::Level::error, "refused the ADD of " + shown(key) + ": " + ticket.error().msg);
            return cni::Unexpected(ticket.error().context("dhcp daemon"));
        }
        std::string netns = opts_.hostprefix + r.netns;
        std::shared_ptr<Attachment> att;
        while (!att) {
            std::shared_ptr<Attachment> stale;
            {
                std::lock_guard lock(mu_);
                auto& slot = leases_[key];
                if (slot && slot->identity().netns != netns) {
                    stale = slot;
                } else if (slot) {
                    CNI_TRY(same_protocol(conf, *slot, key));
                    att = slot;
                } else {
                    LeaseRecord rec{key, r.container_id, conf.name, r.ifname, netns, r.config, r.args, {}, false, {}};
                    try {
                        att = start_attachment(rec, conf, opts_.timing, store_, log_.info(), std::nullopt, std::nullopt);
                    } catch (const std::system_error& e) {
                        leases_.erase(key);
                        return fail(code::try_again_later, std::string("dhcp daemon: cannot start the lease's thread: ") + e.what());
                    }
                    slot = att;
                }
            }
            if (stale) {  // the same attachment in a new namespace: the old one's leases and records end first
                log_(log::Level::info, "ADD of " + shown(key) + " in another network namespace; releasing its leases in " +
                                           shown(stale->identity().netns));
                release(key, stale.get());
            }
        }
        auto result = att->wait_bound(hung_up);
        if (!result) return abandoned(key, *att, std::move(*ticket));
        if (!*result) {
            release(key, att.get());
            return cni::Unexpected(result->error());
        }
        return std::optional<CniResult>(std::move(**result));
    }

    // The attachment `held` of `key` leases what `conf` asks for; if not, the error ADD and CHECK
    // give (code 7).
    static Status same_protocol(const DhcpConf& conf, const Attachment& held, const std::string& key) {
        if (held.conf().protocol == conf.protocol) return {};
        return fail(code::invalid_config, "ipam.protocol \"" + std::string(protocol_name(conf.protocol)) + "\" differs from \"" +
                                              std::string(protocol_name(held.conf().protocol)) + "\" of the leases held for " +
                                              shown(key) + "; DEL the attachment first");
    }

    // An ADD whose client hung up while it waited: its acquisition stops, unless another ADD of
    // the same attachment waits for it. Its place is given back before the log says so, so one
    // who reads the line may take the place at once.
    DaemonReply abandoned(const std::string& key, Attachment& att, Acquisitions::Ticket place) {
        bool alone = att.unwaited();
        if (alone) release(key, &att);
        { auto given_back = std::move(place); }
        log_(log::Level::info, "the client of the ADD of " + shown(key) + " hung up" +
                                   (alone ? "; stopping its acquisition" : "; another ADD waits for the same lease"));
        return fail(code::try_again_later, "dhcp daemon: the ADD's client hung up");
    }

    Status del(const DaemonRequest& r) {
        CNI_TRY(require_identity(r));
        CNI_TRY_ASSIGN(auto conf, parse_dhcp_conf(r.config, r.args));
        release(lease_key(r.container_id, conf.name, r.ifname));
        return {};
    }

    // Ends the attachment of `key` (only when it is `only`, if given) and releases its lease.
    void release(const std::string& key, const Attachment* only = nullptr) {
        std::shared_ptr<Attachment> att;
        {
            std::lock_guard lock(mu_);
            auto it = leases_.find(key);
            if (it == leases_.end() || (only && it->second.get() != only)) return;  // nothing held: DEL is idempotent
            att = it->second;
            leases_.erase(it);
        }
        att->stop(true);
        store_.remove(key);
    }

    Status check(const DaemonRequest& r) {
        CNI_TRY(require_identity(r));
        CNI_TRY_ASSIGN(auto conf, parse_dhcp_conf(r.config, r.args));
        std::string key = lease_key(r.container_id, conf.name, r.ifname);
        std::shared_ptr<Attachment> att;
        {
            std::lock_guard lock(mu_);
            if (auto it = leases_.find(key); it != leases_.end()) att = it->second;
        }
        if (!att) return fail("the DHCP daemon holds no lease for " + shown(key));
        CNI_TRY(same_protocol(conf, *att, key));
        return att->check();
    }

    // GC releases the leases of the network `r` names, made by its config (docs/dhcp.md: Networks
    // of one name), whose attachment is not among its valid ones.
    Status gc(const DaemonRequest& r) {
        CNI_TRY_ASSIGN(auto nc, parse_netconf(r.config));
        if (!nc.valid_attachments) return {};
        int others = 0;
        for (auto& key : stale_leases(nc, others)) {
            log_(log::Level::info, "GC: releasing the lease of " + shown(key));
            release(key);
        }
        if (others > 0)
            log_(log::Level::info, "GC of network " + go_quote(shown(nc.name)) + ": left alone " + std::to_string(others) +
                                       " lease(s) of that name made by another network config (docs/dhcp.md)");
        return {};
    }

    // The keys of `nc`'s leases not in its valid attachments; `others` counts the leases of its
    // name made by another config.
    std::vector<std::string> stale_leases(const NetConf& nc, int& others) {
        const std::string digest = network_digest(nc.doc);
        auto valid = [&](const LeaseRecord& id) {
            return std::ranges::any_of(*nc.valid_attachments, [&](const cni::net::Attachment& a) {
                return a.container_id == id.container_id && a.ifname == id.ifname;
            });
        };
        std::vector<std::string> stale;
        std::lock_guard lock(mu_);
        for (auto& [key, att] : leases_) {
            if (att->identity().net_name != nc.name) continue;
            if (att->conf().network_digest != digest) ++others;
            else if (!valid(att->identity())) stale.push_back(key);
        }
        return stale;
    }

    const DaemonOptions& opts_;
    LeaseStore store_;
    const DaemonLog& log_;
    std::mutex mu_;
    std::map<std::string, std::shared_ptr<Attachment>> leases_;
    Acquisitions acquisitions_;
};

// Go flag: -name value, -name=value, --name; booleans take no separate value.
Result<DaemonOptions> parse_flags(std::span<const std::string> args) {
    DaemonOptions o;
    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string_view a = args[i];
        if (!a.starts_with('-')) return fail(code::invalid_config, "unexpected argument \"" + std::string(a) + "\"");
        a.remove_prefix(a.starts_with("--") ? 2 : 1);
        std::optional<std::string> value;
        if (auto eq = a.find('='); eq != std::string_view::npos) {
            value = std::string(a.substr(eq + 1));
            a = a.substr(0, eq);
        }
        std::string name(a);
        if (name == "broadcast") {
            o.timing.broadcast = !value || *value == "true" || *value == "1";
            if (value && !o.timing.broadcast && *value != "false" && *value != "0")
                return fail(code::invalid_config, "invalid boolean value \"" + *value + "\" for flag -broadcast");
            continue;
        }
        static constexpr std::string_view kValueFlags[] = {"pidfile", "hostprefix", "socketpath", "leasedir",
                                                           "timeout", "resendmax", "resendtimeout"};
        if (std::find(std::begin(kValueFlags), std::end(kValueFlags), name) == std::end(kValueFlags))
            return fail(code::invalid_config, "flag provided but not defined: -" + name);
        if (!value) {
            if (i + 1 >= args.size()) return fail(code::invalid_config, "flag needs an argument: -" + name);
            value = args[++i];
        }
        auto duration = [&](std::chrono::milliseconds& out) -> Status {
            auto d = parse_go_duration(*value);
            if (!d) return fail(code::invalid_config, "invalid value \"" + *value + "\" for flag -" + name + ": " + d.error().msg);
            out = *d;
            return {};
        };
        if (name == "pidfile") o.pidfile = *value;
        else if (name == "hostprefix") o.hostprefix = *value;
        else if (name == "socketpath") o.socket_path = *value;
        else if (name == "leasedir") o.lease_dir = *value;
        else if (name == "timeout") CNI_TRY(duration(o.timing.timeout));
        else if (name == "resendmax") CNI_TRY(duration(o.timing.resend_max));
        else if (name == "resendtimeout") CNI_TRY(duration(o.timing.resend_timeout));
    }
    if (!o.pidfile.empty() && o.pidfile[0] != '/') return fail(code::invalid_config, "-pidfile must be an absolute path");
    return o;
}

// systemd socket activation (sd_listen_fds): exactly one socket, fd 3.
Result<std::optional<int>> activated_socket() {
    const char* fds = std::getenv("LISTEN_FDS");
    const char* pid = std::getenv("LISTEN_PID");
    if (!fds) return std::optional<int>{};
    if (pid && std::to_string(::getpid()) != pid) return std::optional<int>{};
    if (std::string_view(fds) != "1")
        return fail("socket activation: expected exactly 1 socket, got LISTEN_FDS=" + std::string(fds));
    return std::optional<int>{3};
}

Result<os::UniqueFd> listen_on(const std::string& path) {
    auto addr = os::unix_address(path);
    if (!addr || path[0] == '@') return fail("socket path too long: " + path);
    CNI_TRY(os::mkdir_all(path.substr(0, path.rfind('/')), 0700));
    if (os::connect_unix(path)) return fail("another DHCP daemon is already listening on " + path);
    ::unlink(path.c_str());  // a stale socket from a daemon that died
    os::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) return os::sys_fail("socket", "AF_UNIX");
    // Made 0600 by bind itself (no window at the process umask); no thread runs yet, so the
    // process-wide umask can change for it.
    mode_t old_mask = ::umask(0177);
    int bound = ::bind(fd.get(), addr->get(), addr->len);
    int err = errno;
    ::umask(old_mask);
    if (bound != 0) return os::sys_fail("listen unix", path, err);
    if (::listen(fd.get(), 128) != 0) return os::sys_fail("listen unix", path);
    return fd;
}

// The request up to EOF, all of it within `deadline`, at most `limit` bytes.
Result<std::string> read_request(int fd, std::size_t limit, std::chrono::steady_clock::time_point deadline) {
    std::string out;
    char buf[16384];
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        pollfd p{fd, POLLIN, 0};
        int ready = left.count() > 0 ? ::poll(&p, 1, int(left.count())) : 0;
        if (ready < 0 && errno == EINTR) continue;
        if (ready < 0) return os::sys_fail("poll", "the request");
        if (ready == 0) return fail("the request was not complete within " + std::to_string(kRequestDeadline.count()) + " s");
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n == 0) return out;
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            return os::sys_fail("read", "the request");
        }
        if (out.size() + std::size_t(n) > limit) return fail("the request is larger than " + std::to_string(limit) + " bytes");
        out.append(buf, std::size_t(n));
    }
}

// The peer's uid as the kernel saw it at connect (SO_PEERCRED); nothing if it cannot be read.
std::optional<uid_t> peer_uid(int fd) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return std::nullopt;
    return cred.uid;
}

// Whether the client closed its end whole, not only for writing as it does after its request.
bool hung_up(int fd) {
    pollfd p{fd, 0, 0};
    return ::poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR));
}

void serve_connection(Daemon& d, os::UniqueFd fd) {
    timeval tv{std::chrono::duration_cast<std::chrono::seconds>(kRequestDeadline).count(), 0};
    ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);  // a reader that never reads
    std::string reply;
    if (auto uid = peer_uid(fd.get()); !uid || *uid != kAllowedUid) {
        d.log()(log::Level::error,
                "refused a request from uid " + (uid ? std::to_string(*uid) : std::string("unknown")) + ": only root may ask");
        reply = encode_reply(fail(code::io_failure, "dhcp daemon: permission denied: only root may send requests"));
    } else {
        auto text = read_request(fd.get(), kMaxConfigBytes, std::chrono::steady_clock::now() + kRequestDeadline);
        reply = text ? d.handle(*text, [fd = fd.get()] { return hung_up(fd); }) : encode_reply(fail(code::io_failure, "dhcp daemon: reading the request: " + text.error().msg));
    }
    (void)os::write_all(fd.get(), reply);
}

// SIGINT and SIGTERM, blocked (before any thread: threads inherit the mask) and read from the
// returned signalfd instead; SIGPIPE ignored.
os::UniqueFd stop_signal_fd() {
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    ::pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    ::signal(SIGPIPE, SIG_IGN);
    return os::UniqueFd(::signalfd(-1, &stop_signals, SFD_CLOEXEC));
}

// The socket requests come on: the one systemd passed, else one of our own at `path`.
struct Listener {
    os::UniqueFd fd;
    bool own = false;  // ours, at `path`: removed at shutdown
    std::string path;
};

Result<Listener> open_listener(const std::string& path) {
    CNI_TRY_ASSIGN(auto activated, activated_socket());
    if (activated) {
        os::UniqueFd fd(*activated);
        ::fcntl(fd.get(), F_SETFD, FD_CLOEXEC);
        return Listener{std::move(fd), false, path};
    }
    CNI_TRY_ASSIGN(auto fd, listen_on(path));
    return Listener{std::move(fd), true, path};
}

// Serves each connection `listener` accepts in a thread of its own, at most kMaxConnections at
// once (`active` counts them; one more is closed at once), until `stop_fd` (stop_signal_fd)
// is readable or poll fails.
void serve(Daemon& daemon, int listener, int stop_fd, std::atomic<int>& active) {
    bool refusing = false;
    for (;;) {
        pollfd p[2] = {{listener, POLLIN, 0}, {stop_fd, POLLIN, 0}};
        if (::poll(p, 2, -1) < 0) {
            if (errno == EINTR) continue;
            daemon.log()(log::Level::error, "poll: " + os::errno_text(errno));
            return;
        }
        if (p[1].revents) return;
        if (!p[0].revents) continue;
        os::UniqueFd conn(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
        if (!conn) continue;
        if (active >= kMaxConnections) {
            if (!refusing)
                daemon.log()(log::Level::error, "refusing connections: " + std::to_string(kMaxConnections) + " are being served");
            refusing = true;
            continue;  // closed: the client sees the connection end and may retry
        }
        refusing = false;
        ++active;
        try {
            std::thread([&daemon, &active, c = std::move(conn)]() mutable {
                serve_connection(daemon, std::move(c));
                --active;
            }).detach();
        } catch (const std::system_error& e) {  // no thread to be had: refuse this one, keep renewing
            --active;
            daemon.log()(log::Level::error, std::string("refused a connection: cannot start a thread: ") + e.what());
        }
    }
}

}  // namespace

// Go's time.ParseDuration as Go computes it: whole units in integer nanoseconds, a fraction
// through a float; then rounded to milliseconds.
Result<std::chrono::milliseconds> parse_go_duration(std::string_view s) {
    static constexpr std::pair<std::string_view, std::uint64_t> kUnits[] = {
        {"ns", 1}, {"us", 1'000}, {"µs", 1'000}, {"ms", 1'000'000}, {"s", 1'000'000'000},
        {"m", 60'000'000'000}, {"h", 3'600'000'000'000},
    };
    constexpr std::uint64_t kMax = std::uint64_t(1) << 63;  // Go's Duration is an int64
    if (s == "0") return std::chrono::milliseconds(0);
    auto invalid = [&] { return fail(code::invalid_config, "invalid duration \"" + std::string(s) + "\""); };
    if (s.empty()) return invalid();
    std::uint64_t total = 0;
    std::string_view rest = s;
    auto digit = [&](std::size_t i) { return i < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i])); };
    while (!rest.empty()) {
        std::size_t i = 0;
        std::uint64_t whole = 0, fraction = 0, scale = 1;
        for (; digit(i); ++i)
            if (__builtin_mul_overflow(whole, 10u, &whole) || __builtin_add_overflow(whole, unsigned(rest[i] - '0'), &whole)) return invalid();
        bool has_whole = i > 0, has_fraction = false;
        if (i < rest.size() && rest[i] == '.') {
            for (++i; digit(i); ++i) {
                has_fraction = true;
                if (scale < 1'000'000'000'000'000'000u) fraction = fraction * 10 + unsigned(rest[i] - '0'), scale *= 10;
            }
        }
        if (!has_whole && !has_fraction) return invalid();
        rest.remove_prefix(i);
        std::size_t u = 0;
        while (u < rest.size() && !digit(u) && rest[u] != '.') ++u;
        auto unit = rest.substr(0, u);
        auto it = std::find_if(std::begin(kUnits), std::end(kUnits), [&](auto& k) { return k.first == unit; });
        if (it == std::end(kUnits)) return fail(code::invalid_config, "missing or unknown unit in duration \"" + std::string(s) + "\"");
        std::uint64_t v = 0;
        if (__builtin_mul_overflow(whole, it->second, &v)) return invalid();
        v += std::uint64_t(double(fraction) * (double(it->second) / double(scale)));
        if (__builtin_add_overflow(total, v, &total) || total >= kMax) return invalid();
        rest.remove_prefix(u);
    }
    return std::chrono::milliseconds(std::int64_t((total + 500'000) / 1'000'000));
}

Result<DaemonOptions> parse_daemon_options(std::span<const std::string> args) { return parse_flags(args); }

// What -h (-help, --help) prints, as Go's flag package lists the reference's flags.
constexpr std::string_view kDaemonUsage =
    "Usage of dhcp daemon:\n"
    "  -broadcast\n\tbroadcast DHCP leases (ask servers to broadcast their replies)\n"
    "  -hostprefix string\n\toptional prefix to the host root, for the daemon's files and the namespaces' paths\n"
    "  -leasedir string\n\twhere leases are kept across restarts (default \"/run/cni/dhcp\")\n"
    "  -pidfile string\n\toptional absolute path to write the daemon's PID to\n"
    "  -resendmax duration\n\toptional max time to wait before resending a request (default 1m2s)\n"
    "  -resendtimeout duration\n\toptional time to keep resending before giving up (default 3m28s)\n"
    "  -socketpath string\n\toptional path of the daemon's socket (default \"/run/cni/dhcp.sock\")\n"
    "  -timeout duration\n\toptional time to wait for a lease (default 10s)\n";

int run_daemon(std::span<const std::string> args) {
    if (std::ranges::any_of(args, [](const std::string& a) { return a == "-h" || a == "-help" || a == "--help"; })) {
        std::fwrite(kDaemonUsage.data(), 1, kDaemonUsage.size(), stdout);
        return 0;
    }
    std::vector<std::string> env;
    for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
    const DaemonLog daemon_log(log::node_settings(env));
    auto opts = parse_daemon_options(args);
    if (!opts) {
        daemon_log(log::Level::error, opts.error().msg);
        return 2;
    }
    os::UniqueFd sigfd = stop_signal_fd();
    auto listener = open_listener(opts->hostprefix + opts->socket_path);
    if (!listener) {
        daemon_log(log::Level::error, listener.error().msg);
        return 1;
    }
    if (!opts->pidfile.empty())
        if (auto st = os::write_file(opts->pidfile, std::to_string(::getpid()) + "\n", 0644); !st) {
            daemon_log(log::Level::error, "writing the pidfile: " + st.error().msg);
            return 1;
        }

    Daemon daemon(*opts, daemon_log);
    daemon.resume();
    daemon_log(log::Level::info, "listening on " + (listener->own ? listener->path : std::string("the socket systemd passed")));
    std::atomic<int> active{0};
    serve(daemon, listener->fd.get(), sigfd.get(), active);
    daemon_log(log::Level::info, "shutting down; leases stay on record for the next start");
    listener->fd.reset();
    if (listener->own) ::unlink(listener->path.c_str());
    daemon.shutdown();  // ends pending ADDs too: their lease threads stop
    for (int i = 0; i < 100 && active > 0; ++i) std::this_thread::sleep_for(50ms);
    if (!opts->pidfile.empty()) ::unlink(opts->pidfile.c_str());
    if (active > 0) std::_Exit(0);  // a connection still writing; its Daemon must not be destroyed under it
    return 0;
}

}  // namespace cni::dhcp
