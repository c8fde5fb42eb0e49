// SPDX-License-Identifier: Apache-2.0
// Go's quoting of a string, UTF-8 decoding and reading the environment (see strings.hpp).
#include "core/strings.hpp"

#include <cstdio>

namespace cni {

std::string go_quote(std::string_view s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
            if (c < 0x20 || c == 0x7f) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\x%02x", c);
                out += buf;
            } else {
                out += static_cast<char>(c);
            }
        }
    }
    return out + "\"";
}

std::string cut_text(std::string_view s, std::size_t keep) {
    if (s.size() <= keep) return std::string(s);
    while (keep > 0 && (static_cast<unsigned char>(s[keep]) & 0xC0) == 0x80) --keep;
    return std::string(s.substr(0, keep)) + "...[truncated " + std::to_string(s.size() - keep) + " bytes]";
}

std::pair<char32_t, std::size_t> decode_rune(std::string_view s, std::size_t i) {
    auto byte = [&](std::size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
    unsigned b0 = byte(0);
    if (b0 < 0x80) return {b0, 1};
    std::size_t len = b0 >= 0xC2 && b0 <= 0xDF ? 2 : b0 >= 0xE0 && b0 <= 0xEF ? 3 : b0 >= 0xF0 && b0 <= 0xF4 ? 4 : 0;
    if (len == 0) return {kReplacementRune, 1};
    unsigned lo = b0 == 0xE0 ? 0xA0 : b0 == 0xF0 ? 0x90 : 0x80;  // no overlong forms
    unsigned hi = b0 == 0xED ? 0x9F : b0 == 0xF4 ? 0x8F : 0xBF;  // no surrogates, nothing past U+10FFFF
    if (byte(1) < lo || byte(1) > hi) return {kReplacementRune, 1};
    char32_t r = b0 & (0x7F >> len);
    for (std::size_t k = 1; k < len; ++k) {
        unsigned b = byte(k);
        if (b < 0x80 || b > 0xBF) return {kReplacementRune, 1};
        r = (r << 6) | (b & 0x3F);
    }
    return {r, len};
}

std::string env_value(std::span<const std::string> environ, std::string_view key) {
    std::string value;
    for (auto& kv : environ)
        if (kv.size() > key.size() && kv.compare(0, key.size(), key) == 0 && kv[key.size()] == '=')
            value = kv.substr(key.size() + 1);
    return value;
}

}  // namespace cni
