// SPDX-License-Identifier: Apache-2.0
// DHCPv6 messages (RFC 8415) as plain values: the client's messages (SOLICIT, REQUEST, RENEW,
// REBIND, RELEASE, INFORMATION-REQUEST) built and encoded, and the server's (ADVERTISE, REPLY)
// decoded with every option bounded: client and server identifiers, IA_NA with its IAADDRs and
// status codes, rapid commit, preference, status code, DNS servers (23) and the domain search
// list (24, RFC 3646: uncompressed DNS names, labels checked). Options the client does not use are
// skipped; a malformed one of those it uses makes the message a decoding error (RFC 8415 section
// 16: such a message is discarded). Also the lease's times with floors under them, as for DHCPv4
// (docs/dhcp.md).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "applets/dhcp/message.hpp"
#include "core/net/ip.hpp"
#include "core/result.hpp"

namespace cni::dhcp::v6 {

inline constexpr std::uint16_t kClientPort = 546, kServerPort = 547;
inline constexpr std::string_view kAllServers = "ff02::1:2";  // All_DHCP_Relay_Agents_and_Servers

namespace opt {
inline constexpr std::uint16_t client_id = 1;
inline constexpr std::uint16_t server_id = 2;
inline constexpr std::uint16_t ia_na = 3;
inline constexpr std::uint16_t iaaddr = 5;
inline constexpr std::uint16_t oro = 6;
inline constexpr std::uint16_t preference = 7;
inline constexpr std::uint16_t elapsed_time = 8;
inline constexpr std::uint16_t status_code = 13;
inline constexpr std::uint16_t rapid_commit = 14;
inline constexpr std::uint16_t dns_servers = 23;
inline constexpr std::uint16_t domain_list = 24;
}  // namespace opt

enum class Type : std::uint8_t {
    solicit = 1, advertise, request, confirm, renew, rebind, reply, release, decline, reconfigure, information_request
};
std::string_view type_name(Type t);

namespace status {
inline constexpr std::uint16_t success = 0, unspec_fail = 1, no_addrs_avail = 2, no_binding = 3, not_on_link = 4,
                               use_multicast = 5;
}

struct StatusCode {
    std::uint16_t code = status::success;
    std::string message;  // the server's text as sent; shown only through printable()
    bool operator==(const StatusCode&) const = default;
};

struct IaAddress {
    net::IpAddr address;
    std::uint32_t preferred = 0, valid = 0;  // seconds; 0xffffffff: infinity
    std::optional<StatusCode> status;
    bool operator==(const IaAddress&) const = default;
};

struct IaNa {
    std::uint32_t iaid = 0, t1 = 0, t2 = 0;
    std::vector<IaAddress> addresses;
    std::optional<StatusCode> status;
    bool operator==(const IaNa&) const = default;
};

struct Message {
    Type type = Type::solicit;
    std::uint32_t xid = 0;  // 24 bits
    Bytes client_id, server_id;  // DUIDs; empty: absent
    std::vector<IaNa> ia_na;
    bool rapid_commit = false;
    std::optional<std::uint8_t> preference;
    std::optional<std::uint16_t> elapsed;  // hundredths of a second
    std::vector<std::uint16_t> requested;  // option request option (6)
    std::optional<StatusCode> status;
    std::vector<net::IpAddr> dns_servers;
    std::vector<std::string> search;  // domain names, dotted, no trailing dot
    bool operator==(const Message&) const = default;

    const IaNa* find_ia(std::uint32_t iaid) const;
};

// A message of at most 64 KiB (a UDP payload); anything longer is refused.
Bytes encode(const Message& m);
Result<Message> decode(std::span<const std::uint8_t> wire);

// The client's side of an exchange: what it sends, built from the attachment's identity.
struct Exchange {
    std::uint32_t xid = 0;
    Bytes duid;                      // the client's
    Bytes server_id;                 // REQUEST, RENEW, RELEASE: the server's DUID
    std::uint32_t iaid = 0;
    std::vector<net::IpAddr> addresses;  // REQUEST/RENEW/REBIND/RELEASE: the leased addresses
    std::uint16_t elapsed = 0;       // hundredths of a second since the exchange began
    bool rapid_commit = false;       // SOLICIT: ask for a REPLY at once
};
Message client_message(Type type, const Exchange& x);

// DUID-LL (RFC 8415 section 11.4): type 3, hardware type 1 (Ethernet), the MAC.
Bytes duid_ll(const Mac& mac);
// The IAID of an attachment: the first 4 bytes of the SHA-512 of its lease key (docs/dhcp.md).
std::uint32_t iaid_of(std::string_view lease_key);

// A server's message is an answer to ours: its transaction ID, our DUID, a server DUID.
StatusCode answers(const Message& reply, std::uint32_t xid, const Bytes& duid);

// The address an ADVERTISE or REPLY leases to IA `iaid`, if any, with a status explaining why not:
// its first usable one, or only `only` when given (a REPLY to RENEW/REBIND, which may end the
// lease's address with lifetime 0 and offer another: docs/dhcp.md, DHCPv6).
struct Granted {
    std::optional<IaAddress> address;
    std::uint32_t t1 = 0, t2 = 0;
    StatusCode status;  // success when address is set
};
Granted granted(const Message& m, std::uint32_t iaid, std::optional<net::IpAddr> only = std::nullopt);

// Lease times with floors, as DHCPv4's (message.hpp): valid lifetime at least 10 s, T1 at least
// 2 s; T1 and T2 of 0 are the client's choice (RFC 8415 section 21.4): 0.5 and 0.8 times the
// preferred lifetime. And ceilings: T1 at most kMaxRenewSeconds, T2 at most kMaxRebindSeconds,
// so a forged REPLY with infinite lifetimes (anyone on the link reads the multicast RENEW) cannot
// end renewals; the real server is asked again within the hour (docs/dhcp.md, DHCPv6: Floors).
inline constexpr std::uint32_t kMaxRenewSeconds = 3600, kMaxRebindSeconds = 5760;
LeaseTimes lease_times(const Granted& g);

// A DNS name from its uncompressed wire form; every name in `data` (option 24).
Result<std::vector<std::string>> decode_names(std::span<const std::uint8_t> data);
Result<Bytes> encode_name(std::string_view name);

}  // namespace cni::dhcp::v6
