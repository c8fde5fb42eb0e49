// SPDX-License-Identifier: Apache-2.0
// The DHCPv4 client side of RFC 2131 for one interface: acquire (DISCOVER/OFFER/REQUEST/ACK
// attempts on the schedule of retry.hpp: four about 2 s apart, then a doubling back-off up to
// -resendmax, each wait for a reply at most -timeout; an attempt refused at once sleeps out its
// slot; given up after kMaxRefusals refusals or at -resendtimeout), renew (REQUEST unicast to
// the server at T1), rebind (REQUEST broadcast at T2) and release (unicast to the server from
// the leased address, so servers like dnsmasq honour it, unlike the reference's 0.0.0.0 source).
// Every wait and sleep polls a stop predicate so a DEL never waits for a retry to finish.
#pragma once

#include <chrono>
#include <functional>
#include <random>

#include "applets/dhcp/config.hpp"
#include "applets/dhcp/packet_socket.hpp"
#include "applets/dhcp/retry.hpp"
#include "core/cni/cni_result.hpp"

namespace cni::dhcp {

struct Timing {
    std::chrono::milliseconds timeout{10'000};
    std::chrono::milliseconds resend_max{62'000};
    std::chrono::milliseconds resend_timeout{208'000};
    bool broadcast = false;  // ask servers to broadcast their replies (the -broadcast flag)
};

// What the client says about itself in every message.
struct Identity {
    Mac mac{};
    Bytes client_id;
    Bytes request_list;
    std::vector<Option> provide;
};

struct Lease {
    Message ack;
    Mac server_mac{};
    std::int64_t bound_at = 0;  // wall-clock seconds when the ACK arrived

    std::uint32_t address() const { return ack.yiaddr; }
    std::uint32_t server() const;  // option 54, else the header's siaddr
    std::int64_t t1() const { return bound_at + lease_times(ack).t1; }
    std::int64_t t2() const { return bound_at + lease_times(ack).t2; }
    std::int64_t expiry() const { return bound_at + lease_times(ack).lease; }
    std::string address_text() const { return v4(address()).str(); }
    bool degenerate() const { return lease_times(ack).degenerate; }
    Result<CniResult> result(std::int64_t priority) const;  // lease_result.hpp
};

std::int64_t wall_seconds();
// The error of an exchange cut short by the stop predicate.
Error stopped_error();
// Sleeps until `t`, polling `stopping`; false when it said stop.
bool sleep_polling(std::chrono::steady_clock::time_point t, const std::function<bool()>& stopping);

enum class RenewOutcome { acked, refused, silent };  // ACK, NAK, no answer within the timeout

class Client {
public:
    using Lease = dhcp::Lease;
    // `note` hears of each attempt that got no lease and when the next one starts.
    Client(PacketSocket socket, Identity id, Timing timing, std::function<bool()> stopping,
           std::function<void(const std::string&)> note);
    // On interface `ifindex` (whose address is `mac`) of the calling thread's namespace, for
    // the attachment of lease key `key`.
    static Result<Client> open(int ifindex, const Mac& mac, const std::string& key, const DhcpConf& conf, Timing timing,
                               std::function<bool()> stopping, std::function<void(const std::string&)> note);

    // A new lease, preferring `previous` (option 50) when given.
    Result<Lease> acquire(std::optional<std::uint32_t> previous = std::nullopt);
    // One renewal (unicast) or rebinding (broadcast) exchange; `lease` is updated on ACK, `why`
    // names a NAK and its message.
    Result<RenewOutcome> renew(Lease& lease, bool rebinding, std::string& why);
    Status release(const Lease& lease);

private:
    Message request_base(MessageType type) const;
    // Sends `m` and waits for its reply until `deadline`, at most -timeout.
    Result<std::optional<Reply>> exchange(const Message& m, std::uint32_t src, std::uint32_t dst, const Mac& to,
                                          std::chrono::steady_clock::time_point deadline);
    // One DISCOVER/OFFER/REQUEST/ACK round, each wait at most `slot` and never past `give_up`;
    // nothing when it got no lease, and `tally` says why.
    Result<std::optional<Lease>> attempt(std::optional<std::uint32_t> previous, std::chrono::milliseconds slot,
                                         std::chrono::steady_clock::time_point give_up, RetryTally& tally);
    bool sleep_until(std::chrono::steady_clock::time_point t);  // false when stopping

    PacketSocket socket_;
    Identity id_;
    Timing timing_;
    std::function<bool()> stopping_;
    std::function<void(const std::string&)> note_;
    std::mt19937 rng_;
};

}  // namespace cni::dhcp
