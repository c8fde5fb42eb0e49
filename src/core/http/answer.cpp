// SPDX-License-Identifier: Apache-2.0
// HTTP/1.1 answers (see answer.hpp): the status line and the headers this client reads, the
// chunked encoding walked chunk by chunk, and the answer's end found without reading past it, so
// a kept-alive connection's next answer starts where this one ends.
#include "core/http/answer.hpp"

#include <cctype>
#include <optional>

#include "core/strings.hpp"

namespace cni::http {
namespace {

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
    return true;
}

struct Head {
    int status = 0;
    bool http10 = false;
    std::optional<std::size_t> content_length;
    bool chunked = false;
    std::optional<bool> keep_alive;  // the Connection header's word, when it has one
};

// The status line and the headers this client reads; nothing when they are not HTTP/1.x.
std::optional<Head> parse_head(std::string_view head) {
    const std::size_t eol = head.find("\r\n");
    std::string_view status_line = head.substr(0, eol);
    if (!status_line.starts_with("HTTP/1.") || status_line.size() < 12 || status_line[8] != ' ') return std::nullopt;
    Head h;
    h.http10 = status_line[7] == '0';
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
            if (h.content_length && *h.content_length != n) return std::nullopt;
            h.content_length = n;
        } else if (iequals(name, "transfer-encoding")) {
            h.chunked = iequals(value, "chunked");
            if (!h.chunked) return std::nullopt;
        } else if (iequals(name, "connection")) {
            if (iequals(value, "close")) h.keep_alive = false;
            else if (iequals(value, "keep-alive")) h.keep_alive = true;
        }
    }
    return h;
}

enum class Chunks { more, whole, bad };

// Walks a chunked body: whole (with `used`, its length up to the end of the trailer, and the
// joined chunks in `out` when given), more when it has not all arrived, bad when garbled.
Chunks walk_chunks(std::string_view in, std::size_t& used, std::string* out) {
    const std::size_t total = in.size();
    for (;;) {
        const std::size_t eol = in.find("\r\n");
        if (eol == std::string_view::npos) return in.size() > 1024 ? Chunks::bad : Chunks::more;
        std::string_view size_text = in.substr(0, eol);
        size_text = size_text.substr(0, size_text.find(';'));
        std::size_t size = 0;
        if (size_text.empty() || size_text.size() > 8) return Chunks::bad;
        for (char c : size_text) {
            const char lower = char(c | 0x20);
            if (c >= '0' && c <= '9') size = size * 16 + std::size_t(c - '0');
            else if (lower >= 'a' && lower <= 'f') size = size * 16 + std::size_t(lower - 'a' + 10);
            else return Chunks::bad;
        }
        in.remove_prefix(eol + 2);
        if (size == 0) {
            // The trailer: header lines up to an empty one.
            for (;;) {
                const std::size_t end = in.find("\r\n");
                if (end == std::string_view::npos) return in.size() > kHeaderLimit ? Chunks::bad : Chunks::more;
                in.remove_prefix(end + 2);
                if (end == 0) {
                    used = total - in.size();
                    return Chunks::whole;
                }
            }
        }
        if (in.size() < size + 2) return Chunks::more;
        if (in.substr(size, 2) != "\r\n") return Chunks::bad;
        if (out) out->append(in.substr(0, size));
        in.remove_prefix(size + 2);
    }
}

// An answer without a body whatever its headers say (1xx, 204, 304).
bool bodiless(int status) { return status / 100 == 1 || status == 204 || status == 304; }

}  // namespace

Framing frame_answer(std::string_view buffered) {
    Framing f;
    const std::size_t end = buffered.find("\r\n\r\n");
    if (end == std::string_view::npos) {
        if (buffered.size() > kHeaderLimit) f.state = Framing::State::bad;
        return f;
    }
    auto head = parse_head(buffered.substr(0, end));
    if (!head) {
        f.state = Framing::State::bad;
        return f;
    }
    f.keep_alive = head->keep_alive.value_or(!head->http10);
    const std::string_view body = buffered.substr(end + 4);
    if (bodiless(head->status)) {
        f.state = Framing::State::whole;
        f.length = end + 4;
    } else if (head->chunked) {
        std::size_t used = 0;
        switch (walk_chunks(body, used, nullptr)) {
        case Chunks::whole: f.state = Framing::State::whole; f.length = end + 4 + used; break;
        case Chunks::bad: f.state = Framing::State::bad; break;
        case Chunks::more: break;
        }
    } else if (head->content_length) {
        if (body.size() >= *head->content_length) {
            f.state = Framing::State::whole;
            f.length = end + 4 + *head->content_length;
        }
    } else {
        f.state = Framing::State::until_close;
        f.keep_alive = false;
    }
    return f;
}

Result<Response> parse_answer(std::string_view answer, const std::string& where, std::size_t limit) {
    const std::string too_long = where + ": an answer of more than " + std::to_string(limit >> 10) + " KiB";
    if (answer.size() > kHeaderLimit + limit + limit / 4 + 64) return fail(code::decoding_failure, too_long);
    const std::size_t end = answer.find("\r\n\r\n");
    if (end == std::string_view::npos) {
        if (answer.size() > kHeaderLimit) return fail(code::decoding_failure, where + ": an answer whose headers pass 16 KiB");
        return fail(code::try_again_later, where + ": the connection closed before a whole HTTP answer");
    }
    auto head = parse_head(answer.substr(0, end));
    if (!head) return fail(code::decoding_failure, where + ": not an HTTP/1.x answer");
    std::string_view body = answer.substr(end + 4);
    Response r{head->status, {}};
    if (bodiless(head->status)) {
        // no body
    } else if (head->chunked) {
        std::size_t used = 0;
        const Chunks c = walk_chunks(body, used, &r.body);
        if (c == Chunks::bad) return fail(code::decoding_failure, where + ": a garbled chunked answer");
        if (c == Chunks::more) return fail(code::try_again_later, where + ": the connection closed before the whole answer");
    } else if (head->content_length) {
        if (body.size() < *head->content_length)
            return fail(code::try_again_later, where + ": the connection closed before the whole answer");
        r.body = std::string(body.substr(0, *head->content_length));
    } else {
        r.body = std::string(body);
    }
    if (r.body.size() > limit) return fail(code::decoding_failure, too_long);
    return r;
}

}  // namespace cni::http
