// SPDX-License-Identifier: Apache-2.0
// The plain HTTP/1.1 client node-setup speaks to the instance metadata service with
// (docs/vpc-eni.md, The node from the instance metadata service): one request per connection
// ("Connection: close") to an address literal, never a name (no resolver is asked), with one
// deadline for connecting, sending and reading, and an answer of bounded size (its body read by
// Content-Length, chunks, or up to the close). What the answer means is the caller's.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"

namespace cni::vpc_eni {

struct HttpEndpoint {
    std::string url;   // as given, without a trailing "/", for messages and to prefix paths
    std::string host;  // the Host header: the address as written, with its port when not 80
    std::string address;  // the address literal, without brackets
    std::uint16_t port = 80;
};

// "http://<IPv4>[:port]" or "http://[<IPv6>][:port]", with nothing after but an optional "/".
Result<HttpEndpoint> parse_http_url(std::string_view url);

struct HttpResponse {
    int status = 0;
    std::string body;
};

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

inline constexpr std::size_t kHttpAnswerLimit = std::size_t(64) << 10;

// An answer as read up to the peer's close (or the length its headers declare), `where` naming
// the request in errors: its status and body (chunks joined), or the error http_request gives.
Result<HttpResponse> parse_http_answer(std::string_view answer, const std::string& where);

// `method` `path` on `to`, within `timeout`; an answer of any status is a response. A failure is
// an error naming the URL: code::try_again_later when it may pass (connecting, sending, no
// answer in time, a connection closed early), code::decoding_failure for an answer that is not
// HTTP/1.x, garbled or too long.
Result<HttpResponse> http_request(const HttpEndpoint& to, std::string_view method, std::string_view path,
                                  const HttpHeaders& headers, std::chrono::milliseconds timeout);

}  // namespace cni::vpc_eni
