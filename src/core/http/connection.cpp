// SPDX-License-Identifier: Apache-2.0
// The HTTP/1.1 client (see connection.hpp): a non-blocking socket (wrapped in a TLS session for
// https://) polled against one deadline per request, the request written whole, the answer read
// until frame_answer finds its end (or the peer closes), what arrived after it kept for the next.
#include "core/http/connection.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

#include "core/os/errno_error.hpp"

namespace cni::http {
namespace {

using Clock = std::chrono::steady_clock;

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

Sockaddr sockaddr_of(const std::string& address, std::uint16_t port) {
    Sockaddr s;
    if (address.find(':') == std::string::npos) {
        auto* in = reinterpret_cast<sockaddr_in*>(&s.storage);
        in->sin_family = AF_INET;
        in->sin_port = htons(port);
        ::inet_pton(AF_INET, address.c_str(), &in->sin_addr);
        s.length = sizeof(sockaddr_in);
    } else {
        auto* in6 = reinterpret_cast<sockaddr_in6*>(&s.storage);
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(port);
        ::inet_pton(AF_INET6, address.c_str(), &in6->sin6_addr);
        s.length = sizeof(sockaddr_in6);
    }
    return s;
}

// What the resolver answered for a name: getaddrinfo's status and the addresses.
struct Lookup {
    std::mutex mu;
    std::condition_variable done;
    bool finished = false;
    int status = 0;
    std::vector<Sockaddr> addresses;
};

// The addresses of `to`: its literal, or what the resolver answers for its name by the
// deadline. The resolver (resolv.conf's timeouts and attempts, 30 s and more by default) runs in
// a thread of its own, which shares the Lookup: when the deadline passes first, the call goes on
// (code 11) and the thread finishes alone.
Result<std::vector<Sockaddr>> addresses_of(const Endpoint& to, const std::string& where, Clock::time_point deadline) {
    if (to.literal) return std::vector<Sockaddr>{sockaddr_of(to.address, to.port)};
    auto lookup = std::make_shared<Lookup>();
    auto resolve = [lookup, host = to.address, port = std::to_string(to.port)] {
        addrinfo hints{};
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_NUMERICSERV;
        addrinfo* list = nullptr;
        const int r = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &list);
        std::vector<Sockaddr> out;
        for (addrinfo* a = r == 0 ? list : nullptr; a; a = a->ai_next) {
            if (a->ai_addrlen > sizeof(sockaddr_storage)) continue;
            Sockaddr s;
            std::memcpy(&s.storage, a->ai_addr, a->ai_addrlen);
            s.length = a->ai_addrlen;
            out.push_back(s);
        }
        if (list) ::freeaddrinfo(list);
        std::lock_guard hold(lookup->mu);
        lookup->status = r;
        lookup->addresses = std::move(out);
        lookup->finished = true;
        lookup->done.notify_all();
    };
    try {
        std::thread(std::move(resolve)).detach();
    } catch (const std::system_error& e) {
        return fail(code::try_again_later, where + ": resolving " + to.address + ": cannot start a thread: " + e.what());
    }
    std::unique_lock hold(lookup->mu);
    if (!lookup->done.wait_until(hold, deadline, [&] { return lookup->finished; }))
        return fail(code::try_again_later, where + ": resolving " + to.address + ": no answer in time");
    if (lookup->status != 0)
        return fail(code::try_again_later, where + ": resolving " + to.address + ": " + ::gai_strerror(lookup->status));
    return std::move(lookup->addresses);
}

// One step of I/O on the plain socket, as a TLS session's steps are.
Result<Step> plain_write(int fd, std::string_view data) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n >= 0) return Step{std::size_t(n), 0};
    if (errno == EINTR || errno == EAGAIN) return Step{0, POLLOUT};
    return fail(code::try_again_later, "sending: " + os::errno_text(errno));
}

Result<Step> plain_read(int fd, char* buf, std::size_t size) {
    const ssize_t n = ::recv(fd, buf, size, 0);
    if (n >= 0) return Step{std::size_t(n), 0};
    if (errno == EINTR || errno == EAGAIN) return Step{0, POLLIN};
    if (errno == ECONNRESET) return Step{};
    return fail(code::try_again_later, "reading the answer: " + os::errno_text(errno));
}

}  // namespace

Connection::Connection(Endpoint to, std::shared_ptr<const TlsConfig> tls, std::size_t limit)
    : to_(std::move(to)), tls_config_(std::move(tls)), limit_(limit) {}
Connection::~Connection() = default;
Connection::Connection(Connection&&) noexcept = default;
Connection& Connection::operator=(Connection&&) noexcept = default;

void Connection::close() {
    tls_.reset();
    fd_.reset();
    buffered_.clear();
}

Status Connection::connect(const std::string& where, Clock::time_point deadline, const std::string& late, bool resume) {
    close();
    if (to_.tls && !tls_config_) return fail(code::invalid_config, where + ": an https:// URL without TLS settings");
    CNI_TRY_ASSIGN(auto addresses, addresses_of(to_, where, deadline));
    std::string why = "no address";
    for (const Sockaddr& sa : addresses) {
        os::UniqueFd fd(::socket(sa.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
        if (!fd) return os::sys_fail("socket for", where);
        // Each write is a whole request or TLS flight: sent at once, not held back by Nagle's
        // algorithm until the peer's delayed ACK (40 ms per TLS handshake: docs/cluster-ipam.md, Bench).
        int one = 1;
        if (::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) return os::sys_fail("setsockopt TCP_NODELAY for", where);
        int err = 0;
        if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&sa.storage), sa.length) != 0) {
            if (errno != EINPROGRESS) {
                why = os::errno_text(errno);
                continue;
            }
            if (!wait_for(fd.get(), POLLOUT, deadline)) return fail(code::try_again_later, late + " (connecting)");
            socklen_t len = sizeof err;
            if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
        }
        if (err != 0) {
            why = os::errno_text(err);
            continue;
        }
        fd_ = std::move(fd);
        break;
    }
    if (!fd_) return fail(code::try_again_later, where + ": connecting: " + why);
    ++connects_;
    if (to_.tls) {
        tls_ = std::make_unique<TlsSession>(*tls_config_, fd_.get(), to_, resume);
        for (;;) {
            auto s = tls_->handshake();
            if (!s) {
                // A saved session the server would not resume is gone: once more, a full handshake.
                const bool again = tls_->offered();
                close();
                if (again) return connect(where, deadline, late, false);
                return fail(s.error().code, where + ": " + s.error().msg);
            }
            if (s->wait == 0) break;
            if (!wait_for(fd_.get(), s->wait, deadline)) {
                close();
                return fail(code::try_again_later, late + " (TLS handshake)");
            }
        }
        ++(tls_->resumed() ? resumed_ : full_handshakes_);
    }
    return {};
}

Result<Response> Connection::exchange(const Request& r, const std::string& where, Clock::time_point deadline,
                                      const std::string& late, bool& nothing_read) {
    nothing_read = true;
    std::string text = std::string(r.method) + " " + std::string(r.path) + " HTTP/1.1\r\nHost: " + to_.host +
                       "\r\nAccept: */*\r\n";
    if (r.headers)
        for (auto& [name, value] : *r.headers) text += name + ": " + value + "\r\n";
    if (r.method == "PUT" || r.method == "POST" || !r.body.empty()) text += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
    text += "\r\n";
    text += r.body;
    for (std::string_view left = text; !left.empty();) {
        auto s = tls_ ? tls_->write(left) : plain_write(fd_.get(), left);
        if (!s) return fail(s.error().code, where + ": " + s.error().msg);
        if (s->wait != 0 && !wait_for(fd_.get(), s->wait, deadline)) return fail(code::try_again_later, late + " (sending)");
        left.remove_prefix(s->bytes);
    }
    // Read until the answer's end has arrived, or is past the limit, or the peer closes.
    const std::size_t most = kHeaderLimit + limit_ + limit_ / 4 + 64;
    for (;;) {
        const Framing f = frame_answer(buffered_);
        if (f.state == Framing::State::whole) {
            const std::string answer = buffered_.substr(0, f.length);
            buffered_.erase(0, f.length);
            if (!f.keep_alive) close();
            return parse_answer(answer, where, limit_);
        }
        if (f.state == Framing::State::bad || buffered_.size() > most) break;
        char buf[16384];
        auto s = tls_ ? tls_->read(buf, sizeof buf) : plain_read(fd_.get(), buf, sizeof buf);
        if (!s) return fail(s.error().code, where + ": " + s.error().msg);
        if (s->wait != 0) {
            if (!wait_for(fd_.get(), s->wait, deadline)) return fail(code::try_again_later, late);
            continue;
        }
        if (s->bytes == 0) break;  // the peer's close
        nothing_read = false;
        buffered_.append(buf, s->bytes);
    }
    const std::string answer = std::move(buffered_);
    close();
    return parse_answer(answer, where, limit_);
}

Result<Response> Connection::request(const Request& r, std::chrono::milliseconds timeout) {
    const std::string where = std::string(r.method) + " " + to_.url + std::string(r.path);
    const auto deadline = Clock::now() + timeout;
    const std::string late = where + ": no answer within " + std::to_string(timeout.count()) + " ms";
    const bool kept = bool(fd_);
    if (!kept) CNI_TRY(connect(where, deadline, late));
    bool nothing_read = true;
    auto answer = exchange(r, where, deadline, late, nothing_read);
    if (!answer) close();
    // A kept connection the peer had closed meanwhile: the request never reached it; once more.
    if (!answer && kept && nothing_read && answer.error().code == code::try_again_later && Clock::now() < deadline &&
        answer.error().msg.find(late) != 0) {
        CNI_TRY(connect(where, deadline, late));
        answer = exchange(r, where, deadline, late, nothing_read);
        if (!answer) close();
    }
    return answer;
}

Result<Response> request(const Endpoint& to, std::string_view method, std::string_view path, const Headers& headers,
                         std::chrono::milliseconds timeout) {
    Headers h = headers;
    h.emplace_back("Connection", "close");
    Connection c(to);
    return c.request(Request{method, path, &h, {}}, timeout);
}

}  // namespace cni::http
