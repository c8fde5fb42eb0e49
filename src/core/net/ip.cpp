// SPDX-License-Identifier: Apache-2.0
// Parsing and printing of IP addresses and prefixes, matching Go's net package (see ip.hpp).
#include "core/net/ip.hpp"

#include <charconv>
#include <cstdio>

namespace cni::net {
namespace {

constexpr std::array<std::uint8_t, 12> kV4Prefix{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

// Go parseIPv4: four decimal fields 0-255, at most 3 digits, no leading zero. One pass over the
// bytes: node files list thousands of addresses.
std::optional<std::array<std::uint8_t, 4>> parse_v4(std::string_view s) {
    std::array<std::uint8_t, 4> out{};
    const char* p = s.data();
    const char* const end = p + s.size();
    for (int i = 0; i < 4; ++i) {
        if (i > 0 && (p == end || *p++ != '.')) return std::nullopt;
        const char* const start = p;
        unsigned v = 0;
        for (; p != end && unsigned(*p - '0') < 10; ++p) v = v * 10 + unsigned(*p - '0');
        const auto n = p - start;
        if (n == 0 || n > 3 || v > 255 || (n > 1 && *start == '0')) return std::nullopt;
        out[std::size_t(i)] = std::uint8_t(v);
    }
    if (p != end) return std::nullopt;
    return out;
}

int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Go parseIPv6: hex groups, one "::", an optional trailing dotted IPv4, no zone.
std::optional<std::array<std::uint8_t, 16>> parse_v6(std::string_view s) {
    std::array<std::uint8_t, 16> ip{};
    int ellipsis = -1;
    if (s.size() >= 2 && s[0] == ':' && s[1] == ':') {
        ellipsis = 0;
        s.remove_prefix(2);
        if (s.empty()) return ip;
    }
    int i = 0;
    while (i < 16) {
        std::size_t n = 0;
        unsigned v = 0;
        while (n < s.size() && hexval(s[n]) >= 0) {
            v = v * 16 + unsigned(hexval(s[n]));
            if (++n > 4) return std::nullopt;
        }
        if (n == 0) return std::nullopt;
        if (n < s.size() && s[n] == '.') {  // embedded IPv4 must end the address
            if (ellipsis < 0 && i != 12) return std::nullopt;
            if (i + 4 > 16) return std::nullopt;
            auto v4 = parse_v4(s);
            if (!v4) return std::nullopt;
            for (int k = 0; k < 4; ++k) ip[i + k] = (*v4)[k];
            i += 4;
            s = {};
            break;
        }
        ip[i] = std::uint8_t(v >> 8);
        ip[i + 1] = std::uint8_t(v);
        i += 2;
        s.remove_prefix(n);
        if (s.empty()) break;
        if (s[0] != ':' || s.size() == 1) return std::nullopt;
        s.remove_prefix(1);
        if (s[0] == ':') {
            if (ellipsis >= 0) return std::nullopt;
            ellipsis = i;
            s.remove_prefix(1);
            if (s.empty()) break;
        }
    }
    if (!s.empty()) return std::nullopt;
    if (i < 16) {
        if (ellipsis < 0) return std::nullopt;
        int n = 16 - i;
        for (int j = i - 1; j >= ellipsis; --j) ip[j + n] = ip[j];
        for (int j = ellipsis + n - 1; j >= ellipsis; --j) ip[j] = 0;
    } else if (ellipsis >= 0) {
        return std::nullopt;  // "::" must stand for at least one group
    }
    return ip;
}

}  // namespace

std::optional<IpAddr> IpAddr::parse(std::string_view text) {
    for (char c : text) {
        if (c == '.') {
            auto v4 = parse_v4(text);
            if (!v4) return std::nullopt;
            std::array<std::uint8_t, 16> b{};
            for (int k = 0; k < 12; ++k) b[k] = kV4Prefix[k];
            for (int k = 0; k < 4; ++k) b[12 + k] = (*v4)[k];
            return from_bytes(b);
        }
        if (c == ':') {
            auto v6 = parse_v6(text);
            if (!v6) return std::nullopt;
            return from_bytes(*v6);
        }
    }
    return std::nullopt;
}

IpAddr IpAddr::from_v4(std::uint32_t h) {
    std::array<std::uint8_t, 16> b{};
    for (int k = 0; k < 12; ++k) b[k] = kV4Prefix[k];
    b[12] = std::uint8_t(h >> 24);
    b[13] = std::uint8_t(h >> 16);
    b[14] = std::uint8_t(h >> 8);
    b[15] = std::uint8_t(h);
    return from_bytes(b);
}

std::uint32_t IpAddr::v4() const {
    return std::uint32_t(b_[12]) << 24 | std::uint32_t(b_[13]) << 16 | std::uint32_t(b_[14]) << 8 | b_[15];
}

std::string IpAddr::str() const {
    if (is_v4()) {  // by hand: this runs once per reservation file in host-local
        char buf[16];
        char* p = buf;
        for (int k = 12; k < 16; ++k) {
            unsigned v = b_[k];
            if (v >= 100) *p++ = char('0' + v / 100);
            if (v >= 10) *p++ = char('0' + v / 10 % 10);
            *p++ = char('0' + v % 10);
            if (k < 15) *p++ = '.';
        }
        return std::string(buf, std::size_t(p - buf));
    }
    static constexpr char kHex[] = "0123456789abcdef";
    // RFC 5952: compress the longest run (>= 2 groups, first on ties) of zero groups.
    int best = -1, best_len = 0;
    for (int g = 0; g < 8;) {
        if (b_[2 * g] == 0 && b_[2 * g + 1] == 0) {
            int e = g;
            while (e < 8 && b_[2 * e] == 0 && b_[2 * e + 1] == 0) ++e;
            if (e - g > best_len) { best = g; best_len = e - g; }
            g = e;
        } else {
            ++g;
        }
    }
    if (best_len < 2) best = -1;
    std::string out;
    for (int g = 0; g < 8; ++g) {
        if (g == best) {
            out += "::";
            g += best_len - 1;
            continue;
        }
        if (!out.empty() && out.back() != ':') out += ':';
        unsigned v = unsigned(b_[2 * g]) << 8 | b_[2 * g + 1];
        bool started = false;
        for (int shift = 12; shift >= 0; shift -= 4) {
            unsigned nibble = (v >> shift) & 15;
            if (nibble || started || shift == 0) {
                out += kHex[nibble];
                started = true;
            }
        }
    }
    return out;
}

IpAddr IpAddr::next() const {
    IpAddr r = *this;
    for (int k = 15; k >= 0; --k)
        if (++r.b_[k] != 0) break;
    return r;
}

IpAddr IpAddr::prev() const {
    IpAddr r = *this;
    for (int k = 15; k >= 0; --k)
        if (r.b_[k]-- != 0) break;
    return r;
}

bool IpAddr::is_unspecified() const {
    if (is_v4()) return v4() == 0;
    for (auto x : b_)
        if (x) return false;
    return true;
}

bool IpAddr::is_loopback() const {
    if (is_v4()) return b_[12] == 127;
    for (int k = 0; k < 15; ++k)
        if (b_[k]) return false;
    return b_[15] == 1;
}

bool IpAddr::is_link_local_unicast() const {
    if (is_v4()) return b_[12] == 169 && b_[13] == 254;
    return b_[0] == 0xfe && (b_[1] & 0xc0) == 0x80;
}

bool IpAddr::is_global_unicast() const {
    if (is_v4()) {
        if (v4() == 0xffffffffu) return false;
        if (b_[12] >= 224 && b_[12] <= 239) return false;  // multicast
    } else if (b_[0] == 0xff) {
        return false;
    }
    return !is_unspecified() && !is_loopback() && !is_link_local_unicast();
}

std::optional<IpNet> IpNet::parse(std::string_view text) {
    auto slash = text.find('/');
    if (slash == std::string_view::npos) return std::nullopt;
    auto addr_text = text.substr(0, slash);
    auto len_text = text.substr(slash + 1);
    auto ip = IpAddr::parse(addr_text);
    if (!ip) return std::nullopt;
    int mask_bits = addr_text.find(':') == std::string_view::npos ? 32 : 128;
    int prefix = 0;
    // Go dtoi: decimal digits only, no sign, no leading garbage.
    if (len_text.empty() || len_text.size() > 3) return std::nullopt;
    for (char c : len_text)
        if (c < '0' || c > '9') return std::nullopt;
    std::from_chars(len_text.data(), len_text.data() + len_text.size(), prefix);
    if (prefix > mask_bits) return std::nullopt;
    return IpNet{*ip, prefix, mask_bits};
}

namespace {
// The mask of a prefix in the 16-byte form: `ones` leading one bits.
std::array<std::uint8_t, 16> mask_of(int ones) {
    std::array<std::uint8_t, 16> m{};
    for (int k = 0; k < 16; ++k, ones -= 8)
        m[k] = ones >= 8 ? 0xff : ones <= 0 ? 0 : std::uint8_t(0xff << (8 - ones));
    return m;
}
}  // namespace

IpAddr IpNet::network() const {
    auto b = ip.bytes();
    auto m = mask_of((128 - mask_bits) + prefix);
    for (int k = 0; k < 16; ++k) b[k] &= m[k];
    return IpAddr::from_bytes(b);
}

IpAddr IpNet::last() const {
    auto b = ip.bytes();
    auto m = mask_of((128 - mask_bits) + prefix);
    for (int k = 0; k < 16; ++k) b[k] |= std::uint8_t(~m[k]);
    return IpAddr::from_bytes(b);
}

bool IpNet::contains(const IpAddr& a) const {
    if (a.is_v4() != ip.is_v4()) return false;
    auto m = mask_of((128 - mask_bits) + prefix);
    for (int k = 0; k < 16; ++k)
        if ((a.bytes()[k] & m[k]) != (ip.bytes()[k] & m[k])) return false;
    return true;
}

std::string IpNet::str() const { return is_nil() ? "<nil>" : ip.str() + "/" + std::to_string(prefix); }

}  // namespace cni::net
