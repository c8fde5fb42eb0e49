// SPDX-License-Identifier: Apache-2.0
// The string operations the Go reference leans on everywhere, with Go's semantics:
// strings.Split (an empty input gives one empty field; separators at the ends give empty
// fields), strings.TrimSpace and strings.Fields (ASCII white space), %q (strconv.Quote), and
// utf8.DecodeRuneInString; and os.Getenv's reading of a KEY=VALUE environment.
#pragma once

#include <span>
#include <string>
#include <utility>
#include <string_view>
#include <vector>

namespace cni {

inline std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> out;
    std::size_t start = 0;
    while (true) {
        auto pos = s.find(sep, start);
        out.push_back(s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
        if (pos == std::string_view::npos) return out;
        start = pos + 1;
    }
}

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

inline std::string_view trim_space(std::string_view s) {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return s;
}

// The words of `s` between runs of white space; none for a blank string.
inline std::vector<std::string_view> fields(std::string_view s) {
    std::vector<std::string_view> out;
    for (std::size_t i = 0; i < s.size();) {
        while (i < s.size() && is_space(s[i])) ++i;
        std::size_t start = i;
        while (i < s.size() && !is_space(s[i])) ++i;
        if (i > start) out.push_back(s.substr(start, i - start));
    }
    return out;
}

// The rune at s[i] and its length in bytes, as Go's utf8.DecodeRuneInString reads it: a byte that
// does not start a valid, shortest, non-surrogate sequence up to U+10FFFF is U+FFFD, one byte long.
std::pair<char32_t, std::size_t> decode_rune(std::string_view s, std::size_t i);
inline constexpr char32_t kReplacementRune = 0xFFFD;

// Go %q of a string (strconv.Quote for the ASCII cases that occur here).
std::string go_quote(std::string_view s);

// `s` whole when it has at most `keep` bytes; else its first `keep` bytes (fewer rather than part
// of a UTF-8 character) and "...[truncated N bytes]" saying how many were left out: how a log line
// or an error shows text someone else chose.
std::string cut_text(std::string_view s, std::size_t keep);

// The value of `key` in a KEY=VALUE environment ("" when unset); the last definition wins, as
// with Go's os.Getenv on a deduplicated environment.
std::string env_value(std::span<const std::string> environ, std::string_view key);

}  // namespace cni
