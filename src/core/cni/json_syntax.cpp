// SPDX-License-Identifier: Apache-2.0
// Go encoding/json's validity scan and its error wording (see json_syntax.hpp).
#include "core/cni/json_syntax.hpp"
#include "core/strings.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include <cstdio>
#include <vector>

namespace cni::json {
namespace {

constexpr std::size_t max_depth = 10000;  // Go's maxNestingDepth

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// Go quotes the offending byte as strconv.Quote(string(rune(b))) does, inside single quotes:
// the byte is read as the code point U+0000..U+00FF.
std::string quote_char(unsigned char c) {
    char buf[16];
    switch (c) {
    case '\'': return "'\\''";
    case '"': return "'\"'";
    case '\\': return "'\\\\'";
    case '\a': return "'\\a'";
    case '\b': return "'\\b'";
    case '\f': return "'\\f'";
    case '\n': return "'\\n'";
    case '\r': return "'\\r'";
    case '\t': return "'\\t'";
    case '\v': return "'\\v'";
    default: break;
    }
    if (c < 0x20 || c == 0x7f) {
        std::snprintf(buf, sizeof buf, "'\\x%02x'", c);
    } else if (c < 0x7f) {
        std::snprintf(buf, sizeof buf, "'%c'", c);
    } else if (c < 0xa1 || c == 0xad) {  // C1 controls, no-break space and soft hyphen are not printable
        std::snprintf(buf, sizeof buf, "'\\u%04x'", c);
    } else {  // printable Latin-1: the code point in UTF-8
        std::snprintf(buf, sizeof buf, "'%c%c'", char(0xc0 | (c >> 6)), char(0x80 | (c & 0x3f)));
    }
    return buf;
}

enum class State {
    begin_value,
    begin_value_or_empty,   // after '['
    begin_string_or_empty,  // after '{'
    begin_string,           // after ',' in an object
    in_string,
    in_string_escape,
    in_unicode_escape,      // `pending` hex digits to go
    negative,
    integer,                // after the first digit of a number other than 0
    zero,
    dot,
    fraction,
    exponent,
    exponent_sign,
    exponent_digits,
    literal,                // the rest of true/false/null in `pending_text`
    end_value,
    end_top,
};

enum class Frame : char { object_key, object_value, array_value };

class Scanner {
public:
    // Feeds one byte; false once an error is recorded.
    bool step(char c) {
        switch (state_) {
        case State::begin_value_or_empty:
            if (is_space(c)) return true;
            if (c == ']') return end_value(c);
            return begin_value(c);
        case State::begin_value: return begin_value(c);
        case State::begin_string_or_empty:
            if (is_space(c)) return true;
            if (c == '}') {
                stack_.back() = Frame::object_value;
                return end_value(c);
            }
            return begin_string(c);
        case State::begin_string: return begin_string(c);
        case State::in_string:
        case State::in_string_escape:
        case State::in_unicode_escape: return step_string(c);
        case State::negative:
        case State::integer:
        case State::zero:
        case State::dot:
        case State::fraction:
        case State::exponent:
        case State::exponent_sign:
        case State::exponent_digits: return step_number(c);
        case State::literal:
            if (c != literal_rest_.front())
                return fail(c, "in literal " + std::string(literal_) + " (expecting '" + literal_rest_.front() + "')");
            literal_rest_.remove_prefix(1);
            if (literal_rest_.empty()) state_ = State::end_value;
            return true;
        case State::end_value: return end_value(c);
        case State::end_top:
            if (!is_space(c)) return fail(c, "after top-level value");
            return true;
        }
        return true;
    }

    // Go's scanner.eof: a value that a space would end (a number) is complete.
    std::optional<std::string> finish() {
        if (error_) return error_;
        if (state_ == State::end_top) return std::nullopt;
        step(' ');
        if (state_ == State::end_top) return std::nullopt;
        if (error_) return error_;
        return "unexpected end of JSON input";
    }

    const std::optional<std::string>& error() const { return error_; }

    // Inside a string, bytes other than '"', '\\' and controls change nothing: the caller
    // skips them without a step each (most of a config's bytes are in strings).
    bool in_string() const { return state_ == State::in_string; }

private:
    // step() inside a string: its characters, escapes and the four digits of a unicode escape.
    bool step_string(char c) {
        switch (state_) {
        case State::in_string:
            if (c == '"') state_ = State::end_value;
            else if (c == '\\') state_ = State::in_string_escape;
            else if (static_cast<unsigned char>(c) < 0x20) return fail(c, "in string literal");
            return true;
        case State::in_string_escape:
            switch (c) {
            case 'b': case 'f': case 'n': case 'r': case 't': case '\\': case '/': case '"':
                state_ = State::in_string;
                return true;
            case 'u':
                state_ = State::in_unicode_escape;
                pending_ = 4;
                return true;
            default: return fail(c, "in string escape code");
            }
        case State::in_unicode_escape:
            if (!is_hex(c)) return fail(c, "in \\u hexadecimal character escape");
            if (--pending_ == 0) state_ = State::in_string;
            return true;
        default: return true;  // not one of its states: step() calls it for its own only
        }
    }

    // step() inside a number: sign, digits, fraction and exponent.
    bool step_number(char c) {
        switch (state_) {
        case State::negative:
            if (c == '0') state_ = State::zero;
            else if (is_digit(c)) state_ = State::integer;
            else return fail(c, "in numeric literal");
            return true;
        case State::integer:
            if (is_digit(c)) return true;
            return after_zero(c);
        case State::zero: return after_zero(c);
        case State::dot:
            if (!is_digit(c)) return fail(c, "after decimal point in numeric literal");
            state_ = State::fraction;
            return true;
        case State::fraction:
            if (is_digit(c)) return true;
            if (c == 'e' || c == 'E') {
                state_ = State::exponent;
                return true;
            }
            return end_value(c);
        case State::exponent:
            if (c == '+' || c == '-') {
                state_ = State::exponent_sign;
                return true;
            }
            return exponent_sign(c);
        case State::exponent_sign: return exponent_sign(c);
        case State::exponent_digits:
            if (is_digit(c)) return true;
            return end_value(c);
        default: return true;  // not one of its states: step() calls it for its own only
        }
    }

    bool fail(char c, const std::string& context) {
        error_ = "invalid character " + quote_char(static_cast<unsigned char>(c)) + " " + context;
        return false;
    }

    bool push(char c, Frame f, State next) {
        stack_.push_back(f);
        if (stack_.size() > max_depth) return fail(c, "exceeded max depth");
        state_ = next;
        return true;
    }

    bool begin_value(char c) {
        if (is_space(c)) return true;
        switch (c) {
        case '{': return push(c, Frame::object_key, State::begin_string_or_empty);
        case '[': return push(c, Frame::array_value, State::begin_value_or_empty);
        case '"': state_ = State::in_string; return true;
        case '-': state_ = State::negative; return true;
        case '0': state_ = State::zero; return true;
        case 't': return begin_literal("true");
        case 'f': return begin_literal("false");
        case 'n': return begin_literal("null");
        default:
            if (is_digit(c)) {
                state_ = State::integer;
                return true;
            }
            return fail(c, "looking for beginning of value");
        }
    }

    bool begin_literal(std::string_view word) {
        literal_ = word;
        literal_rest_ = word.substr(1);
        state_ = State::literal;
        return true;
    }

    bool begin_string(char c) {
        if (is_space(c)) return true;
        if (c != '"') return fail(c, "looking for beginning of object key string");
        state_ = State::in_string;
        return true;
    }

    bool after_zero(char c) {
        if (c == '.') state_ = State::dot;
        else if (c == 'e' || c == 'E') state_ = State::exponent;
        else return end_value(c);
        return true;
    }

    bool exponent_sign(char c) {
        if (!is_digit(c)) return fail(c, "in exponent of numeric literal");
        state_ = State::exponent_digits;
        return true;
    }

    bool end_value(char c) {
        if (stack_.empty()) {
            state_ = State::end_top;
            return step(c);
        }
        state_ = State::end_value;
        if (is_space(c)) return true;
        switch (stack_.back()) {
        case Frame::object_key:
            if (c != ':') return fail(c, "after object key");
            stack_.back() = Frame::object_value;
            state_ = State::begin_value;
            return true;
        case Frame::object_value:
            if (c == ',') {
                stack_.back() = Frame::object_key;
                state_ = State::begin_string;
                return true;
            }
            if (c != '}') return fail(c, "after object key:value pair");
            stack_.pop_back();
            return true;
        case Frame::array_value:
            if (c == ',') {
                state_ = State::begin_value;
                return true;
            }
            if (c != ']') return fail(c, "after array element");
            stack_.pop_back();
            return true;
        }
        return true;
    }

    State state_ = State::begin_value;
    std::vector<Frame> stack_;
    int pending_ = 0;
    std::string_view literal_, literal_rest_;
    std::optional<std::string> error_;
};

unsigned hex_value(std::string_view four) {
    unsigned v = 0;
    for (char c : four) v = v * 16 + unsigned(is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10);
    return v;
}

bool is_high_surrogate(unsigned u) { return u >= 0xd800 && u < 0xdc00; }
bool is_low_surrogate(unsigned u) { return u >= 0xdc00 && u < 0xe000; }

}  // namespace

std::optional<SyntaxError> find_syntax_error(std::string_view text) {
    Scanner s;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (s.in_string()) {
            while (i < text.size() && text[i] != '"' && text[i] != '\\' && static_cast<unsigned char>(text[i]) >= 0x20) ++i;
            if (i == text.size()) break;
        }
        if (!s.step(text[i])) return SyntaxError{*s.error(), i};
    }
    if (auto error = s.finish()) return SyntaxError{*error, text.size()};
    return std::nullopt;
}

std::optional<std::string> go_syntax_error(std::string_view text) {
    auto e = find_syntax_error(text);
    return e ? std::optional<std::string>(e->message) : std::nullopt;
}

std::string replace_lone_surrogates(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        char c = text[i];
        if (!in_string || c != '\\') {
            if (c == '"') in_string = !in_string;
            out += c;
            continue;
        }
        if (text[i + 1] != 'u') {  // a two-byte escape, copied whole
            out.append(text.substr(i, 2));
            ++i;
            continue;
        }
        unsigned u = hex_value(text.substr(i + 2, 4));
        bool paired = is_high_surrogate(u) && i + 12 <= text.size() && text.substr(i + 6, 2) == "\\u" &&
                      is_low_surrogate(hex_value(text.substr(i + 8, 4)));
        if (paired) {
            out.append(text.substr(i, 12));
            i += 11;
        } else if (is_high_surrogate(u) || is_low_surrogate(u)) {
            out += "\\ufffd";
            i += 5;
        } else {
            out.append(text.substr(i, 6));
            i += 5;
        }
    }
    return out;
}

namespace {

// Whether every byte is ASCII, looked at eight at a time (a node file is hundreds of KB).
bool ascii(std::string_view text) {
    std::size_t i = 0;
    for (std::uint64_t w; i + 8 <= text.size(); i += 8) {
        std::memcpy(&w, text.data() + i, 8);
        if (w & 0x8080808080808080ULL) return false;
    }
    return std::all_of(text.begin() + std::ptrdiff_t(i), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

}  // namespace

std::string replace_invalid_utf8(std::string_view text) {
    if (ascii(text)) return {};
    std::string out;
    bool changed = false;
    for (std::size_t i = 0; i < text.size();) {
        if (static_cast<unsigned char>(text[i]) < 0x80) {
            out += text[i++];
            continue;
        }
        auto [rune, n] = decode_rune(text, i);
        if (rune == kReplacementRune && n == 1) {
            out += "\xEF\xBF\xBD";
            changed = true;
        } else {
            out.append(text.substr(i, n));
        }
        i += n;
    }
    return changed ? out : std::string();
}

std::string clamp_number_at(std::string_view text, std::size_t offset) {
    std::size_t end = offset;
    while (end < text.size() && (is_digit(text[end]) || std::string_view("+-.eE").find(text[end]) != std::string_view::npos))
        ++end;
    std::string_view literal = text.substr(offset, end - offset);
    std::string_view significand = literal.substr(0, literal.find_first_of("eE"));
    bool zero = significand.find_first_of("123456789") == std::string_view::npos;  // 0.000e400 is zero
    std::string out(text.substr(0, offset));
    out += text[offset] == '-' ? (zero ? "-0.0" : "-1.7976931348623157e308") : (zero ? "0.0" : "1.7976931348623157e308");
    out.append(text.substr(end));
    return out;
}

}  // namespace cni::json
