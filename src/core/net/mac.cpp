// SPDX-License-Identifier: Apache-2.0
// MAC address parsing (see mac.hpp).
#include "core/net/mac.hpp"

#include "core/strings.hpp"

namespace cni::net {
namespace {
int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}
}  // namespace

std::optional<std::string> parse_mac(std::string_view s) {
    unsigned char b[6];
    if (s.size() == 17 && (s[2] == ':' || s[2] == '-')) {
        for (int i = 0; i < 6; ++i) {
            if (i > 0 && s[i * 3 - 1] != s[2]) return std::nullopt;
            int hi = hex(s[i * 3]), lo = hex(s[i * 3 + 1]);
            if (hi < 0 || lo < 0) return std::nullopt;
            b[i] = static_cast<unsigned char>(hi << 4 | lo);
        }
    } else if (s.size() == 14 && s[4] == '.' && s[9] == '.') {
        for (int i = 0, pos = 0; i < 6; ++i, pos += 2) {
            if (pos == 4 || pos == 9) ++pos;
            int hi = hex(s[pos]), lo = hex(s[pos + 1]);
            if (hi < 0 || lo < 0) return std::nullopt;
            b[i] = static_cast<unsigned char>(hi << 4 | lo);
        }
    } else {
        return std::nullopt;
    }
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (int i = 0; i < 6; ++i) {
        if (i) out += ':';
        out += kHex[b[i] >> 4];
        out += kHex[b[i] & 15];
    }
    return out;
}

std::optional<std::array<std::uint8_t, 6>> mac_bytes(std::string_view text) {
    auto norm = parse_mac(text);
    if (!norm) return std::nullopt;
    std::array<std::uint8_t, 6> out{};
    for (std::size_t i = 0; i < 6; ++i) out[i] = std::uint8_t(std::stoul(norm->substr(i * 3, 2), nullptr, 16));
    return out;
}

std::string mac_text(const std::array<std::uint8_t, 6>& mac) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string s;
    for (auto b : mac) {
        if (!s.empty()) s += ':';
        s += kHex[b >> 4];
        s += kHex[b & 15];
    }
    return s;
}

Result<std::string> configured_mac(std::string_view text, MacWording wording) {
    if (text.empty()) return std::string();
    if (auto mac = parse_mac(text)) return *mac;
    std::string t(text);
    if (wording == MacWording::plain) return fail("invalid MAC address " + go_quote(t));
    return fail("invalid args " + t + " for MAC addr: address " + t + ": invalid MAC address");
}

}  // namespace cni::net
