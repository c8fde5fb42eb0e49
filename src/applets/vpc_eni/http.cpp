// SPDX-License-Identifier: Apache-2.0
// The metadata service's HTTP client (see http.hpp): a non-blocking socket polled against one
// deadline, the request written whole, the answer read until the peer closes or its declared
// length has arrived, then split into status, headers and body.
#include "applets/vpc_eni/http.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cctype>
#include <cerrno>

#include "core/net/ip.hpp"
#include "core/os/errno_error.hpp"
#include "core/os/unique_fd.hpp"
#include "core/strings.hpp"

namespace cni::vpc_eni {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kHeaderLimit = std::size_t(16) << 10;

std::optional<std::uint16_t> parse_port(std::string_view s) {
    if (s.empty() || s.size() > 5) return std::nullopt;
    unsigned v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return std::nullopt;
        v = v * 10 + unsigned(c - '0');
    }
    if (v == 0 || v > 65535) return std::nullopt;
    return std::uint16_t(v);
}

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
    return true;
}

// Waits until `fd` is ready for `events` or the deadline passes (false).
bool wait_for(int fd, short events, Clock::time_point deadline) {
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) return false;
        pollfd p{fd, events, 0};
        const int n = ::poll(&p, 1, int(left));
        if (n > 0) return true;
        if (n < 0 && errno != EINTR) return false;
    }
}

struct Sockaddr {
    sockaddr_storage storage{};
    socklen_t length = 0;
};

Sockaddr sockaddr_of(const HttpEndpoint& to) {
    Sockaddr s;
    if (to.address.find(':') == std::string::npos) {
        auto* in = reinterpret_cast<sockaddr_in*>(&s.storage);
        in->sin_family = AF_INET;
        in->sin_port = htons(to.port);
        ::inet_pton(AF_INET, to.address.c_str(), &in->sin_addr);
        s.length = sizeof(sockaddr_in);
    } else {
        auto* in6 = reinterpret_cast<sockaddr_in6*>(&s.storage);
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(to.port);
        ::inet_pton(AF_INET6, to.address.c_str(), &in6->sin6_addr);
        s.length = sizeof(sockaddr_in6);
    }
    return s;
}

// The body of a chunked answer; nothing when the chunks are garbled.
std::optional<std::string> unchunk(std::string_view in) {
    std::string out;
    for (;;) {
        const std::size_t eol = in.find("\r\n");
        if (eol == std::string_view::npos) return std::nullopt;
        std::string_view size_text = in.substr(0, eol);
        size_text = size_text.substr(0, size_text.find(';'));
        std::size_t size = 0;
        if (size_text.empty() || size_text.size() > 8) return std::nullopt;
        for (char c : size_text) {
            const char lower = char(c | 0x20);
            if (c >= '0' && c <= '9') size = size * 16 + std::size_t(c - '0');
            else if (lower >= 'a' && lower <= 'f') size = size * 16 + std::size_t(lower - 'a' + 10);
            else return std::nullopt;
        }
        in.remove_prefix(eol + 2);
        if (size == 0) return out;
        if (in.size() < size + 2 || in.substr(size, 2) != "\r\n") return std::nullopt;
        out.append(in.substr(0, size));
        in.remove_prefix(size + 2);
    }
}

struct Head {
    int status = 0;
    std::optional<std::size_t> content_length;
    bool chunked = false;
};

// The status line and the headers this client reads; nothing when they are not HTTP/1.x.
std::optional<Head> parse_head(std::string_view head) {
    const std::size_t eol = head.find("\r\n");
    std::string_view status_line = head.substr(0, eol);
    if (!status_line.starts_with("HTTP/1.") || status_line.size() < 12 || status_line[8] != ' ') return std::nullopt;
    Head h;
    for (char c : status_line.substr(9, 3)) {
        if (c < '0' || c > '9') return std::nullopt;
        h.status = h.status * 10 + (c - '0');
    }
    if (status_line.size() > 12 && status_line[12] != ' ') return std::nullopt;
    std::string_view rest = eol == std::string_view::npos ? std::string_view() : head.substr(eol + 2);
    while (!rest.empty()) {
        const std::size_t end = rest.find("\r\n");
        std::string_view line = rest.substr(0, end);
        rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 2);
        const std::size_t colon = line.find(':');
        if (colon == std::string_view::npos) return std::nullopt;
        std::string_view name = line.substr(0, colon), value = trim_space(line.substr(colon + 1));
        if (iequals(name, "content-length")) {
            std::size_t n = 0;
            if (value.empty() || value.size() > 9) return std::nullopt;
            for (char c : value) {
                if (c < '0' || c > '9') return std::nullopt;
                n = n * 10 + std::size_t(c - '0');
            }
            h.content_length = n;
        } else if (iequals(name, "transfer-encoding")) {
            h.chunked = iequals(value, "chunked");
            if (!h.chunked) return std::nullopt;
        }
    }
    return h;
}

}  // namespace

Result<HttpEndpoint> parse_http_url(std::string_view url) {
    const std::string shown(url);
    auto bad = [&](std::string_view why) {
        return fail("metadata URL \"" + shown + "\": " + std::string(why) +
                    " (http://<IPv4 address>[:port] or http://[<IPv6 address>][:port])");
    };
    if (!url.starts_with("http://")) return bad("not an http:// URL");
    std::string_view rest = url.substr(7);
    if (rest.ends_with('/')) rest.remove_suffix(1);
    HttpEndpoint e;
    std::string_view address, port;
    if (rest.starts_with('[')) {
        const std::size_t close = rest.find(']');
        if (close == std::string_view::npos) return bad("no ] after the IPv6 address");
        address = rest.substr(1, close - 1);
        std::string_view after = rest.substr(close + 1);
        if (!after.empty() && !after.starts_with(':')) return bad("a path or more after the address");
        if (!after.empty()) port = after.substr(1);
        if (!after.empty() && port.empty()) return bad("an empty port");
        if (address.find(':') == std::string_view::npos) return bad("not an IPv6 address in brackets");
    } else {
        const std::size_t colon = rest.find(':');
        address = rest.substr(0, colon);
        if (colon != std::string_view::npos) {
            port = rest.substr(colon + 1);
            if (port.empty()) return bad("an empty port");
        }
        if (address.find_first_of("/?#@") != std::string_view::npos || port.find_first_of("/?#@") != std::string_view::npos)
            return bad("a path or more after the address");
        if (address.find_first_not_of("0123456789.") != std::string_view::npos) return bad("not an address literal (no name is resolved)");
    }
    auto ip = net::IpAddr::parse(address);
    if (!ip || address.find('%') != std::string_view::npos) return bad("not an address literal (no name is resolved)");
    if (!port.empty()) {
        auto p = parse_port(port);
        if (!p) return bad("port \"" + std::string(port) + "\" is not within 1..65535");
        e.port = *p;
    }
    e.address = std::string(address);
    e.url = "http://" + std::string(rest);
    e.host = std::string(rest);
    return e;
}

Result<HttpResponse> http_request(const HttpEndpoint& to, std::string_view method, std::string_view path,
                                  const HttpHeaders& headers, std::chrono::milliseconds timeout) {
    const std::string where = std::string(method) + " " + to.url + std::string(path);
    const auto deadline = Clock::now() + timeout;
    const std::string late = where + ": no answer within " + std::to_string(timeout.count()) + " ms";
    const Sockaddr sa = sockaddr_of(to);
    os::UniqueFd fd(::socket(sa.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd) return os::sys_fail("socket for", where);
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&sa.storage), sa.length) != 0) {
        if (errno != EINPROGRESS) return fail(code::try_again_later, where + ": connecting: " + os::errno_text(errno));
        if (!wait_for(fd.get(), POLLOUT, deadline)) return fail(code::try_again_later, late + " (connecting)");
        int err = 0;
        socklen_t len = sizeof err;
        if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
        if (err != 0) return fail(code::try_again_later, where + ": connecting: " + os::errno_text(err));
    }
    std::string request = std::string(method) + " " + std::string(path) + " HTTP/1.1\r\nHost: " + to.host +
                          "\r\nAccept: */*\r\nConnection: close\r\n";
    for (auto& [name, value] : headers) request += name + ": " + value + "\r\n";
    if (method == "PUT" || method == "POST") request += "Content-Length: 0\r\n";
    request += "\r\n";
    for (std::string_view left = request; !left.empty();) {
        if (!wait_for(fd.get(), POLLOUT, deadline)) return fail(code::try_again_later, late + " (sending)");
        const ssize_t n = ::send(fd.get(), left.data(), left.size(), MSG_NOSIGNAL);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n < 0) return fail(code::try_again_later, where + ": sending: " + os::errno_text(errno));
        left.remove_prefix(std::size_t(n));
    }
    std::string answer;
    for (;;) {
        // Enough once the headers declare a length that has arrived, or are not HTTP at all.
        if (const std::size_t end = answer.find("\r\n\r\n"); end != std::string::npos) {
            auto head = parse_head(std::string_view(answer).substr(0, end));
            if (!head || (head->content_length && answer.size() >= end + 4 + *head->content_length)) break;
        } else if (answer.size() > kHeaderLimit) {
            break;
        }
        if (!wait_for(fd.get(), POLLIN, deadline)) return fail(code::try_again_later, late);
        char buf[4096];
        const ssize_t n = ::recv(fd.get(), buf, sizeof buf, 0);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n < 0) return fail(code::try_again_later, where + ": reading the answer: " + os::errno_text(errno));
        if (n == 0) break;
        answer.append(buf, std::size_t(n));
        if (answer.size() > kHeaderLimit + kHttpAnswerLimit) break;
    }
    return parse_http_answer(answer, where);
}

Result<HttpResponse> parse_http_answer(std::string_view answer, const std::string& where) {
    if (answer.size() > kHeaderLimit + kHttpAnswerLimit) return fail(code::decoding_failure, where + ": an answer of more than 64 KiB");
    const std::size_t end = answer.find("\r\n\r\n");
    if (end == std::string_view::npos) {
        if (answer.size() > kHeaderLimit) return fail(code::decoding_failure, where + ": an answer whose headers pass 16 KiB");
        return fail(code::try_again_later, where + ": the connection closed before a whole HTTP answer");
    }
    auto head = parse_head(answer.substr(0, end));
    if (!head) return fail(code::decoding_failure, where + ": not an HTTP/1.x answer");
    std::string_view body = answer.substr(end + 4);
    HttpResponse r{head->status, {}};
    if (head->chunked) {
        auto whole = unchunk(body);
        if (!whole) return fail(code::decoding_failure, where + ": a garbled chunked answer");
        r.body = std::move(*whole);
    } else if (head->content_length) {
        if (body.size() < *head->content_length)
            return fail(code::try_again_later, where + ": the connection closed before the whole answer");
        r.body = std::string(body.substr(0, *head->content_length));
    } else {
        r.body = std::string(body);
    }
    if (r.body.size() > kHttpAnswerLimit) return fail(code::decoding_failure, where + ": an answer of more than 64 KiB");
    return r;
}

}  // namespace cni::vpc_eni
