// SPDX-License-Identifier: Apache-2.0
// Plugin-call and daemon logging (see logger.hpp).
#include "core/log/logger.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>

#include "core/os/unique_fd.hpp"
#include "core/strings.hpp"

namespace cni::log {
namespace {

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

// `text` after `line`, which stays under `limit` bytes: past it, the text is cut (cut_text).
void append_capped(std::string& line, std::string_view text, std::size_t limit) {
    constexpr std::size_t kMarkerRoom = 48;  // "...[truncated <up to 20 digits> bytes]"
    if (line.size() + text.size() <= limit) line += text;
    else line += cut_text(text, limit > line.size() + kMarkerRoom ? limit - line.size() - kMarkerRoom : 0);
}

}  // namespace

Logger::Logger(const Settings& s)
    : level_(s.level), syslog_(s.syslog), line_limit_(std::size_t(std::min<std::int64_t>(kLineLimit, s.max_bytes))), problem_(s.problem) {
    if (level_ == Level::off || s.folder.empty()) return;
    if (auto folder = os::Dir::open_trusted(s.folder, 0700)) file_.emplace(std::move(*folder), s.name, s.max_bytes, s.keep);
    else problem_ = folder.error().msg;
}

void Logger::write(Level l, std::string_view text) const noexcept {
    if (!enabled(l)) return;
    try {
        std::string line = utc_now() + " " + std::string(name_of(l)) + " ";
        append_capped(line, text, line_limit_ - 1);
        for (char& c : line)
            if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';  // one record, one line, no terminal controls
        line += '\n';
        if (syslog_) to_syslog(l, line);
        else file_->append(line);
    } catch (...) {
        // out of memory: the call goes on without its log line
    }
}

// One datagram to /dev/log: "<priority>cni-all[pid]: line" (facility daemon).
void Logger::to_syslog(Level l, const std::string& line) const {
    static constexpr char kDevLog[] = "/dev/log";
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, kDevLog, sizeof kDevLog);
    os::UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd) return;
    int severity = l == Level::error ? 3 : l == Level::info ? 6 : 7;
    std::string msg = "<" + std::to_string(3 * 8 + severity) + ">cni-all[" + std::to_string(::getpid()) + "]: " + line;
    (void)::sendto(fd.get(), msg.data(), msg.size(), MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
}

}  // namespace cni::log
