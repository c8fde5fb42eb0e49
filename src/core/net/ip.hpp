// SPDX-License-Identifier: Apache-2.0
// IP addresses and prefixes with Go `net` semantics, because every address the reference
// plugins print or store goes through net.IP.String() and net.ParseIP/ParseCIDR: IPv4 fields
// without leading zeros, no zones, IPv4-mapped IPv6 treated (and printed) as IPv4, IPv6 printed
// per RFC 5952. Addresses are kept as 16 bytes (IPv4 in mapped form) so arithmetic and ordering
// are one code path for both families.
#pragma once

#include <array>
#include <bit>
#include <compare>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cni::net {

// 128-bit counts of addresses (an IPv6 range can hold 2^128 of them).
__extension__ typedef unsigned __int128 U128;

class IpAddr {
public:
    IpAddr() = default;
    // Go net.ParseIP: nullopt for anything Go rejects.
    static std::optional<IpAddr> parse(std::string_view text);
    static IpAddr from_v4(std::uint32_t host_order);
    static IpAddr from_bytes(const std::array<std::uint8_t, 16>& b) { IpAddr a; a.b_ = b; return a; }

    bool is_v4() const { return value() >> 32 == 0xffff; }  // Go To4() != nil: ::ffff:a.b.c.d
    int bits() const { return is_v4() ? 32 : 128; }
    std::string str() const;  // Go String()
    const std::array<std::uint8_t, 16>& bytes() const { return b_; }
    // As it goes on the wire: 4 bytes for IPv4, 16 for IPv6.
    std::vector<std::uint8_t> wire_bytes() const {
        return is_v4() ? std::vector<std::uint8_t>(b_.end() - 4, b_.end()) : std::vector<std::uint8_t>(b_.begin(), b_.end());
    }
    std::uint32_t v4() const;  // host order; only for is_v4()
    // The 16 bytes as one number: ordered as the addresses are, cheaper to sort and compare.
    U128 value() const {
        std::uint64_t hi, lo;
        std::memcpy(&hi, b_.data(), 8);
        std::memcpy(&lo, b_.data() + 8, 8);
        if constexpr (std::endian::native == std::endian::little) {
            hi = __builtin_bswap64(hi);
            lo = __builtin_bswap64(lo);
        }
        return U128(hi) << 64 | lo;
    }

    IpAddr next() const;  // +1 with carry (Go ip.NextIP)
    IpAddr prev() const;
    bool is_unspecified() const;
    bool is_loopback() const;
    bool is_link_local_unicast() const;
    bool is_global_unicast() const;  // Go IP.IsGlobalUnicast

    auto operator<=>(const IpAddr&) const = default;

private:
    std::array<std::uint8_t, 16> b_{};
};

// A CIDR as Go types.IPNet holds it: the address keeps its host bits ("10.1.0.5/16"). A result
// that leaves an address or a route's dst out holds Go's zero IPNet, which prints as "<nil>":
// nil() here (mask_bits 0), never produced by parse().
struct IpNet {
    IpAddr ip;
    int prefix = 0;
    int mask_bits = 32;  // 32 or 128: the family of the mask, which Go keeps apart from the IP; 0: nil

    // Go types.ParseCIDR: the address as written plus the prefix length.
    static std::optional<IpNet> parse(std::string_view text);
    static IpNet nil() { return IpNet{IpAddr{}, 0, 0}; }
    bool is_nil() const { return mask_bits == 0; }

    IpAddr network() const;         // host bits cleared
    IpAddr last() const;            // all host bits set (broadcast for IPv4)
    bool contains(const IpAddr& a) const;
    bool family_matches() const { return ip.bits() == mask_bits; }
    std::string str() const;        // "ip/prefix", or "<nil>"
    IpNet masked() const { return IpNet{network(), prefix, mask_bits}; }

    bool operator==(const IpNet&) const = default;
};

}  // namespace cni::net
