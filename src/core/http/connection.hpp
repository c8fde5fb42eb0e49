// SPDX-License-Identifier: Apache-2.0
// The HTTP/1.1 client (docs/design.md, The HTTP client): a Connection to one endpoint, kept
// alive between requests (one request at a time; a connection the peer closed is opened again),
// plain or TLS, each request with a timeout for connecting, sending and reading, and an answer
// of bounded size; and a one-request call on a connection of its own ("Connection: close").
// A host name is resolved (getaddrinfo) when connecting, within the request's timeout (the
// resolver in a thread of its own), each of its addresses tried in turn. A TLS connection
// resumes the session its TlsConfig's TicketStore kept for the endpoint when the server takes
// it, and otherwise makes a full handshake.
// What the answer means is the caller's.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/http/answer.hpp"
#include "core/http/tls.hpp"
#include "core/http/url.hpp"
#include "core/os/unique_fd.hpp"
#include "core/result.hpp"

namespace cni::http {

struct Request {
    std::string_view method;
    std::string_view path;
    const Headers* headers = nullptr;
    std::string_view body;  // sent with its Content-Length when the method is PUT or POST, or not empty
};

class Connection {
public:
    // TLS when `to` is https:// (then `tls` must be given); answers of at most `limit` bytes.
    Connection(Endpoint to, std::shared_ptr<const TlsConfig> tls = nullptr, std::size_t limit = kAnswerLimit);
    ~Connection();
    Connection(Connection&&) noexcept;
    Connection& operator=(Connection&&) noexcept;

    const Endpoint& endpoint() const { return to_; }
    // The request on the open connection, or a new one, within `timeout`; an answer of any
    // status is a response. A kept connection found closed before any answer is opened again
    // once. A failure is an error naming the method and URL: code::try_again_later when it may
    // pass (connecting, TLS, sending, no answer in time, a connection closed early),
    // code::decoding_failure for an answer that is not HTTP/1.x, garbled or too long.
    Result<Response> request(const Request& r, std::chrono::milliseconds timeout);
    // Closes the connection (the next request opens a new one).
    void close();
    bool open() const { return bool(fd_); }
    std::uint64_t connects() const { return connects_; }  // connections opened so far
    // TLS handshakes so far: full ones (the server's certificate verified) and resumed ones.
    std::uint64_t full_handshakes() const { return full_handshakes_; }
    std::uint64_t resumed() const { return resumed_; }

private:
    using Clock = std::chrono::steady_clock;
    Status connect(const std::string& where, Clock::time_point deadline, const std::string& late, bool resume = true);
    Result<Response> exchange(const Request& r, const std::string& where, Clock::time_point deadline,
                              const std::string& late, bool& nothing_read);

    Endpoint to_;
    std::shared_ptr<const TlsConfig> tls_config_;
    std::size_t limit_;
    os::UniqueFd fd_;
    std::unique_ptr<TlsSession> tls_;
    std::string buffered_;  // what arrived past the last answer
    std::uint64_t connects_ = 0, full_handshakes_ = 0, resumed_ = 0;
};

// `method` `path` on `to` (plain http) on a connection of its own, closed after, within
// `timeout`; errors as Connection::request's.
Result<Response> request(const Endpoint& to, std::string_view method, std::string_view path, const Headers& headers,
                         std::chrono::milliseconds timeout);

}  // namespace cni::http
