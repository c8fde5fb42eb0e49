// SPDX-License-Identifier: Apache-2.0
// Plugin-call and daemon logging (see logger.hpp).
#include "core/log/logger.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <ctime>
#include <optional>

#include "core/cni/json.hpp"
#include "core/os/fs.hpp"
#include "core/os/unique_fd.hpp"

namespace cni::log {
namespace {

std::optional<Level> level_named(std::string_view s) {
    if (s == "off" || s == "none") return Level::off;
    if (s == "error") return Level::error;
    if (s == "info" || s == "verbose") return Level::info;
    if (s == "debug") return Level::debug;
    return std::nullopt;
}

// The keys of `obj` that say something about logging, over `s`; a value of the wrong type or
// an unknown level is ignored (logging never fails a call).
void apply(const json::Value& obj, Settings& s) {
    if (!obj.IsObject()) return;
    if (const json::Value* v = json::find_exact(obj, "logLevel"); v && v->IsString())
        if (auto l = level_named(std::string_view(v->GetString(), v->GetStringLength()))) s.level = *l;
    if (const json::Value* v = json::find_exact(obj, "logFile"); v && v->IsString()) s.target.assign(v->GetString(), v->GetStringLength());
    if (const json::Value* v = json::find_exact(obj, "logMaxSize"); v && v->IsInt64() && v->GetInt64() >= 4096) s.max_bytes = v->GetInt64();
    if (const json::Value* v = json::find_exact(obj, "logKeep"); v && v->IsInt() && v->GetInt() >= 0 && v->GetInt() <= 20) s.keep = v->GetInt();
}

std::string env_value(std::span<const std::string> environ, std::string_view key) {
    for (auto& kv : environ)
        if (kv.size() > key.size() && kv.starts_with(key) && kv[key.size()] == '=') return kv.substr(key.size() + 1);
    return {};
}

std::string utc_now() {
    auto now = std::chrono::system_clock::now();
    std::time_t t = std::chrono::system_clock::to_time_t(now);
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    char buf[96];  // room for any int the format could print
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                  tm.tm_min, tm.tm_sec, int(ms));
    return buf;
}

}  // namespace

std::string_view name_of(Level l) {
    switch (l) {
    case Level::error: return "error";
    case Level::info: return "info";
    case Level::debug: return "debug";
    default: return "off";
    }
}

Settings node_settings(std::span<const std::string> environ) {
    Settings s;
    std::string path = env_value(environ, "CNI_ALL_LOG_CONFIG");
    auto text = os::read_state_file(path.empty() ? kNodeSettings : path, 64 * 1024);
    if (!text || !*text) return s;
    if (auto doc = json::parse(**text)) apply(*doc, s);
    return s;
}

Settings call_settings(std::span<const std::string> environ, std::string_view config) {
    Settings s = node_settings(environ);
    // Most configs say nothing about logging: they are not parsed a second time for it.
    if (config.find("\"log") == std::string_view::npos) return s;
    if (auto doc = json::parse(config)) apply(*doc, s);
    return s;
}

void Logger::write(Level l, std::string_view text) const noexcept {
    if (!enabled(l)) return;
    try {
        std::string line = utc_now() + " " + std::string(name_of(l)) + " " + std::string(text);
        for (char& c : line)
            if (c == '\n' || c == '\r') c = ' ';  // one record, one line
        line += '\n';
        if (s_.target == "syslog" || s_.target.starts_with("syslog:")) to_syslog(l, line);
        else to_file(line);
    } catch (...) {
        // out of memory: the call goes on without its log line
    }
}

// Appends under an flock of the file; past max_bytes, file.<n-1> becomes file.<n> ... and the
// file itself file.1, and a new one is started. The lock is tried for a bounded time only.
void Logger::to_file(const std::string& line) const {
    if (!s_.target.starts_with('/')) return;
    os::UniqueFd fd(::open(s_.target.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600));
    if (!fd) return;
    struct stat st{};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return;
    bool locked = false;
    for (int i = 0; i < 20 && !locked; ++i) {
        locked = ::flock(fd.get(), LOCK_EX | LOCK_NB) == 0;
        if (!locked) ::usleep(1000);
    }
    if (locked && st.st_size + std::int64_t(line.size()) > s_.max_bytes) {
        struct stat now{};
        // still the file we opened (nobody rotated it meanwhile)
        if (::stat(s_.target.c_str(), &now) == 0 && now.st_ino == st.st_ino) {
            if (s_.keep == 0) ::unlink(s_.target.c_str());
            for (int n = s_.keep; n >= 1; --n) {  // the oldest is overwritten
                std::string from = n == 1 ? s_.target : s_.target + "." + std::to_string(n - 1);
                ::rename(from.c_str(), (s_.target + "." + std::to_string(n)).c_str());
            }
            os::UniqueFd fresh(::open(s_.target.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
            if (fresh) fd = std::move(fresh);
        }
    }
    (void)os::write_all(fd.get(), line);
}

// One datagram to the syslog socket: "<priority>cni-all[pid]: line" (facility daemon).
void Logger::to_syslog(Level l, const std::string& line) const {
    std::string path = s_.target == "syslog" ? "/dev/log" : s_.target.substr(7);
    sockaddr_un addr{};
    if (path.size() >= sizeof addr.sun_path) return;
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    os::UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd) return;
    int severity = l == Level::error ? 3 : l == Level::info ? 6 : 7;
    std::string msg = "<" + std::to_string(3 * 8 + severity) + ">cni-all[" + std::to_string(::getpid()) + "]: " + line;
    (void)::sendto(fd.get(), msg.data(), msg.size(), MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
}

}  // namespace cni::log
