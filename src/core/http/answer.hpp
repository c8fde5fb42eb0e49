// SPDX-License-Identifier: Apache-2.0
// HTTP/1.1 answers as the client reads them off a connection (docs/design.md, The HTTP client):
// where the answer ends (its declared Content-Length, its last chunk, or the peer's close),
// whether the peer keeps the connection, and the answer split into status and body, of bounded
// size. What the answer means is the caller's.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"

namespace cni::http {

struct Response {
    int status = 0;
    std::string body;
};

using Headers = std::vector<std::pair<std::string, std::string>>;

inline constexpr std::size_t kAnswerLimit = std::size_t(64) << 10;  // the default body limit
inline constexpr std::size_t kHeaderLimit = std::size_t(16) << 10;

// How much of `buffered` (what arrived so far) is one answer.
struct Framing {
    enum class State { more, whole, until_close, bad };
    State state = State::more;
    std::size_t length = 0;  // whole: the answer's length in `buffered`
    bool keep_alive = false; // the peer keeps the connection after this answer
};
Framing frame_answer(std::string_view buffered);

// An answer as read up to the peer's close (or the end frame_answer found), `where` naming the
// request in errors: its status and body (chunks joined), of at most `limit` bytes.
// code::try_again_later for an answer cut short, code::decoding_failure for one that is not
// HTTP/1.x, garbled or too long.
Result<Response> parse_answer(std::string_view answer, const std::string& where, std::size_t limit = kAnswerLimit);

}  // namespace cni::http
