// SPDX-License-Identifier: Apache-2.0
// SHA-1 over a string in memory (see sha1.hpp).
#include "applets/vpc_eni/sha1.hpp"

#include <array>
#include <bit>
#include <cstdint>

namespace cni::vpc_eni {

std::string sha1_hex(std::string_view data) {
    std::array<std::uint32_t, 5> h{0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
    std::string msg(data);
    const std::uint64_t bits = std::uint64_t(data.size()) * 8;
    msg.push_back(char(0x80));
    while (msg.size() % 64 != 56) msg.push_back('\0');
    for (int i = 7; i >= 0; --i) msg.push_back(char(bits >> (i * 8)));
    for (std::size_t block = 0; block < msg.size(); block += 64) {
        std::array<std::uint32_t, 80> w{};
        for (int i = 0; i < 16; ++i)
            for (int b = 0; b < 4; ++b) w[i] = (w[i] << 8) | std::uint8_t(msg[block + std::size_t(i * 4 + b)]);
        for (int i = 16; i < 80; ++i) w[i] = std::rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
        auto [a, b, c, d, e] = h;
        for (int i = 0; i < 80; ++i) {
            std::uint32_t f, k;
            if (i < 20) f = (b & c) | (~b & d), k = 0x5A827999;
            else if (i < 40) f = b ^ c ^ d, k = 0x6ED9EBA1;
            else if (i < 60) f = (b & c) | (b & d) | (c & d), k = 0x8F1BBCDC;
            else f = b ^ c ^ d, k = 0xCA62C1D6;
            std::uint32_t t = std::rotl(a, 5) + f + e + k + w[i];
            e = d, d = c, c = std::rotl(b, 30), b = a, a = t;
        }
        h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
    }
    constexpr char hex[] = "0123456789abcdef";
    std::string out;
    for (auto v : h)
        for (int i = 28; i >= 0; i -= 4) out.push_back(hex[(v >> i) & 15]);
    return out;
}

}  // namespace cni::vpc_eni
