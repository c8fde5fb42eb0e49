// SPDX-License-Identifier: Apache-2.0
// The DHCPv6 client side of RFC 8415 for one interface (docs/dhcp.md: DHCPv6): a UDP socket bound
// to the interface's link-local address, port 546 (opened once DAD has finished on it, waiting at
// most kDadWait), talking to ff02::1:2 port 547. acquire: SOLICIT (asking for Rapid Commit) then
// REQUEST to the server of the first ADVERTISE granting an address, or the REPLY at once when the
// server commits rapidly (answers granting none are passed over, and are the attempt's refusal
// only when nothing better came by its deadline); attempts on the schedule of retry.hpp, as DHCPv4's, given up after kMaxRefusals refusals
// or at -resendtimeout. renew: RENEW to the lease's server at T1, REBIND to any from T2, keeping
// only the address the pod got (a server moving it is a refusal: a new SOLICIT asks for it). release:
// RELEASE, not waited for. The identity is DUID-LL from the interface's MAC and an IAID from the
// lease key, both stable per attachment. DNS servers (23) and the search list (24) are asked for
// in every message and go into the result's dns; inform asks for them with an Information-request
// when the lease's REPLY carried neither, preferring the lease's server's REPLY. No routes (the default route comes from router
// advertisements) and each address is a /128 (on-link prefixes come from them too). The socket
// does not loop its multicast back: the pod's own processes never see the exchange.
#pragma once

#include <chrono>
#include <functional>
#include <random>

#include "applets/dhcp/client.hpp"
#include "applets/dhcp/config.hpp"
#include "applets/dhcp/message6.hpp"
#include "core/cni/cni_result.hpp"
#include "core/os/unique_fd.hpp"

namespace cni::dhcp {

inline constexpr std::chrono::milliseconds kDadWait{8000};
inline constexpr std::chrono::milliseconds kInformationWait{4000};

struct Lease6 {
    v6::Message reply;   // the REPLY that bound it
    std::uint32_t iaid = 0;
    std::int64_t bound_at = 0;  // wall-clock seconds when the REPLY arrived
    net::IpAddr leased;         // the address the pod got; its renewals keep only this one
    // The REPLY to an Information-request (RFC 8415 section 18.2.6), asked for when `reply`
    // carried no DNS options; kept across renewals.
    std::optional<v6::Message> info = std::nullopt;

    // `leased` as `reply` grants it: its lifetimes and the IA's T1/T2.
    v6::Granted grant() const { return v6::granted(reply, iaid, leased); }
    net::IpAddr address() const { return leased; }
    std::string address_text() const { return leased.str(); }
    bool degenerate() const { return v6::lease_times(grant()).degenerate; }
    std::int64_t t1() const { return bound_at + v6::lease_times(grant()).t1; }
    std::int64_t t2() const { return bound_at + v6::lease_times(grant()).t2; }
    std::int64_t expiry() const { return bound_at + v6::lease_times(grant()).lease; }
    bool wants_information() const { return reply.dns_servers.empty() && reply.search.empty(); }
    // The address as a /128, the DNS servers and search list (the REPLY's, else `info`'s); no routes.
    Result<CniResult> result(std::int64_t priority) const;
};

class Client6 {
public:
    using Lease = Lease6;
    // In the calling thread's network namespace; `key` is the lease key (the IAID's source).
    static Result<Client6> open(int ifindex, const Mac& mac, const std::string& key, const DhcpConf& conf, Timing timing,
                                std::function<bool()> stopping, std::function<void(const std::string&)> note);

    Result<Lease6> acquire(std::optional<net::IpAddr> previous = std::nullopt);
    // A REPLY that ends the lease's address (absent or valid lifetime 0) is a refusal even when it
    // offers another; one without our IA_NA counts as no answer (RFC 8415 section 18.2.10.1: the
    // lease is kept). `why` says what the server said when it refused or its answer counted as none.
    Result<RenewOutcome> renew(Lease6& lease, bool rebinding, std::string& why);
    Status release(const Lease6& lease);
    // One Information-request for the DNS options, on acquire's schedule for at most
    // kInformationWait, waiting that long for the REPLY of the lease's server; another server's
    // (one with DNS options) is taken only if that one never came. The REPLY goes into
    // `lease.info`; an error when none came.
    Status inform(Lease6& lease);

private:
    Client6(os::UniqueFd fd, int ifindex, const Mac& mac, const std::string& key, Timing timing,
            std::function<bool()> stopping, std::function<void(const std::string&)> note);
    // Sends a `type` message and waits for an answer until `deadline`, at most -timeout: the
    // first one for us whose type is in `wanted` and that `takes` (when given) accepts; one it
    // refuses is passed over (it may keep a copy) and the wait goes on.
    using Taker = std::function<bool(const v6::Message&)>;
    Result<std::optional<v6::Message>> exchange(v6::Type type, v6::Exchange x, std::initializer_list<v6::Type> wanted,
                                                std::chrono::steady_clock::time_point deadline, const Taker& takes = {});
    Status send(const v6::Message& m) const;
    // One SOLICIT/ADVERTISE/REQUEST/REPLY round; nothing when it got no lease, `why` says why.
    Result<std::optional<Lease6>> attempt(std::optional<net::IpAddr> previous, std::chrono::steady_clock::time_point until,
                                          std::string& why, bool& refused);
    bool sleep_until(std::chrono::steady_clock::time_point t);

    os::UniqueFd fd_;
    int ifindex_;
    Bytes duid_;
    std::uint32_t iaid_;
    Timing timing_;
    std::function<bool()> stopping_;
    std::function<void(const std::string&)> note_;
    std::mt19937 rng_;
    std::chrono::steady_clock::time_point began_{};  // the exchange's start, for Elapsed Time
};

}  // namespace cni::dhcp
