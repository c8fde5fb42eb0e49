// SPDX-License-Identifier: Apache-2.0
// DHCPv4 messages (RFC 2131 header, RFC 2132 options) as plain values: encode to the wire,
// decode from it (repeated options concatenated, RFC 3396), and read the options the dhcp IPAM
// turns into a CNI result: subnet mask, routers, static routes (33), classless routes (121,
// RFC 3442) and the lease times (51/58/59, with RFC 2131's T1 = T/2 and T2 = 7T/8 defaults as
// the reference uses them: 60 min, T/2 and 0.85 T).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/net/ip.hpp"
#include "core/result.hpp"

namespace cni::dhcp {

namespace opt {
inline constexpr std::uint8_t subnet_mask = 1;
inline constexpr std::uint8_t routers = 3;
inline constexpr std::uint8_t host_name = 12;
inline constexpr std::uint8_t static_routes = 33;
inline constexpr std::uint8_t requested_ip = 50;
inline constexpr std::uint8_t lease_time = 51;
inline constexpr std::uint8_t message_type = 53;
inline constexpr std::uint8_t server_id = 54;
inline constexpr std::uint8_t parameter_request_list = 55;
inline constexpr std::uint8_t message = 56;
inline constexpr std::uint8_t renewal_time = 58;
inline constexpr std::uint8_t rebinding_time = 59;
inline constexpr std::uint8_t vendor_class = 60;
inline constexpr std::uint8_t client_id = 61;
inline constexpr std::uint8_t user_class = 77;
inline constexpr std::uint8_t classless_routes = 121;
}  // namespace opt

enum class MessageType : std::uint8_t { discover = 1, offer, request, decline, ack, nak, release, inform };

using Mac = std::array<std::uint8_t, 6>;
using Bytes = std::vector<std::uint8_t>;

struct Option {
    std::uint8_t code = 0;
    Bytes data;
    bool operator==(const Option&) const = default;
};

struct Message {
    std::uint8_t op = 1;  // 1 BOOTREQUEST, 2 BOOTREPLY
    std::uint32_t xid = 0;
    std::uint16_t secs = 0;
    std::uint16_t flags = 0;  // 0x8000: ask the server to broadcast its reply
    std::uint32_t ciaddr = 0, yiaddr = 0, siaddr = 0, giaddr = 0;  // host byte order
    Mac chaddr{};
    std::vector<Option> options;  // in wire order, one entry per code

    const Bytes* find(std::uint8_t code) const;
    void set(std::uint8_t code, Bytes data);  // replaces an option of the same code
    std::optional<MessageType> type() const;
    std::optional<std::uint32_t> address_option(std::uint8_t code) const;  // the first address
    std::optional<std::uint32_t> u32_option(std::uint8_t code) const;
    bool operator==(const Message&) const = default;
};

inline constexpr std::uint16_t kBroadcastFlag = 0x8000;

Bytes encode(const Message& m);
Result<Message> decode(std::span<const std::uint8_t> wire);

// Network byte order, for the DHCP message and the IP/UDP headers around it.
inline void put16(std::uint8_t* p, std::uint16_t v) {
    p[0] = std::uint8_t(v >> 8);
    p[1] = std::uint8_t(v);
}
inline void put32(std::uint8_t* p, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = std::uint8_t(v >> (24 - 8 * i));
}
inline std::uint16_t get16(const std::uint8_t* p) { return std::uint16_t(p[0] << 8 | p[1]); }
inline std::uint32_t get32(const std::uint8_t* p) {
    return std::uint32_t(p[0]) << 24 | std::uint32_t(p[1]) << 16 | std::uint32_t(p[2]) << 8 | p[3];
}
Bytes u32_bytes(std::uint32_t v);
net::IpAddr v4(std::uint32_t host_order);

struct StaticRoute {
    net::IpNet dst;
    std::uint32_t gateway = 0;  // 0.0.0.0: on-link
};
// RFC 3442: {width, significant destination octets, router}...
Result<std::vector<StaticRoute>> parse_classless_routes(const Bytes& data);
// RFC 2132 option 33: {destination, router} pairs, the destination's mask from its class.
Result<std::vector<StaticRoute>> parse_static_routes(const Bytes& data);

// A lease's times with floors under them: a server answering a lease time of 0 (so T1 = 0) would
// otherwise make the daemon renew in a tight loop. `degenerate` says the server's own times
// were below the floors; the daemon then backs off between renewals.
inline constexpr std::uint32_t kMinLeaseSeconds = 10, kMinRenewSeconds = 2;
struct LeaseTimes {
    std::uint32_t lease = 0, t1 = 0, t2 = 0;  // seconds
    bool degenerate = false;
};
LeaseTimes lease_times(const Message& ack);

}  // namespace cni::dhcp
