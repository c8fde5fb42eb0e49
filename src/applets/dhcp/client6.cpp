// SPDX-License-Identifier: Apache-2.0
// RFC 8415 client exchanges (see client6.hpp).
#include "applets/dhcp/client6.hpp"

#include <linux/if_addr.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "core/nl/addr.hpp"
#include "core/os/errno_error.hpp"

namespace cni::dhcp {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kScopeLink = 253;  // RT_SCOPE_LINK
constexpr auto kDadPoll = 100ms;

// The interface's link-local address once DAD has finished on it.
Result<net::IpAddr> link_local(int ifindex, const std::function<bool()>& stopping) {
    CNI_TRY_ASSIGN(auto nl, nl::Socket::open());
    const auto deadline = Clock::now() + kDadWait;
    for (;;) {
        CNI_TRY_ASSIGN(auto addrs, nl::list_addrs(nl, ifindex, AF_INET6));
        for (const auto& a : addrs) {
            if (a.scope != kScopeLink) continue;
            if (a.flags & IFA_F_DADFAILED) return fail("DAD failed on the link-local address " + a.local.ip.str());
            if (!(a.flags & IFA_F_TENTATIVE)) return a.local.ip;
        }
        if (Clock::now() >= deadline || stopping())
            return fail("no link-local IPv6 address finished DAD on the interface within " +
                        std::to_string(kDadWait.count() / 1000) + " s");
        std::this_thread::sleep_for(kDadPoll);
    }
}

sockaddr_in6 endpoint(const net::IpAddr& a, std::uint16_t port, int ifindex) {
    sockaddr_in6 sa{};
    sa.sin6_family = AF_INET6;
    sa.sin6_port = htons(port);
    std::memcpy(&sa.sin6_addr, a.bytes().data(), 16);
    sa.sin6_scope_id = std::uint32_t(ifindex);
    return sa;
}

std::string status_text(const v6::StatusCode& s) {
    return "status " + std::to_string(s.code) + (s.message.empty() ? "" : " (\"" + printable(s.message) + "\")");
}

// What a REPLY to RENEW/REBIND says of the lease's address `ours` in our IA_NA `ia`, for the log.
std::string said_of(const v6::IaNa& ia, const net::IpAddr& ours) {
    std::string said = "the REPLY leaves " + ours.str() + " out", offers;
    if (ia.status && ia.status->code != v6::status::success) said = "the REPLY's IA_NA has " + status_text(*ia.status);
    for (const auto& a : ia.addresses) {
        if (a.address == ours)
            said = "the REPLY lists " + ours.str() +
                   (a.status && a.status->code != v6::status::success
                        ? " with " + status_text(*a.status)
                        : " with preferred lifetime " + std::to_string(a.preferred) + " and valid lifetime " + std::to_string(a.valid));
        else if (a.valid != 0)
            offers += (offers.empty() ? "" : ", ") + a.address.str();
    }
    return offers.empty() ? said : said + " and offers " + offers;
}

}  // namespace

Result<CniResult> Lease6::result(std::int64_t) const {
    auto g = grant();
    if (!g.address) return fail("the DHCPv6 REPLY leases no address: " + status_text(g.status));
    CniResult r;
    r.ips.push_back(IpConfig{std::nullopt, net::IpNet{g.address->address, 128, 128}, std::nullopt});
    const v6::Message& dns = wants_information() && info ? *info : reply;
    for (const auto& s : dns.dns_servers) r.dns.nameservers.push_back(s.str());
    r.dns.search = dns.search;
    return r;
}

Client6::Client6(os::UniqueFd fd, int ifindex, const Mac& mac, const std::string& key, Timing timing,
                 std::function<bool()> stopping, std::function<void(const std::string&)> note)
    : fd_(std::move(fd)), ifindex_(ifindex), duid_(v6::duid_ll(mac)), iaid_(v6::iaid_of(key)), timing_(timing),
      stopping_(std::move(stopping)), note_(std::move(note)), rng_(std::random_device{}()) {}

Result<Client6> Client6::open(int ifindex, const Mac& mac, const std::string& key, const DhcpConf&, Timing timing,
                              std::function<bool()> stopping, std::function<void(const std::string&)> note) {
    CNI_TRY_ASSIGN(auto local, link_local(ifindex, stopping));
    os::UniqueFd fd(::socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd) return os::sys_fail("socket", "AF_INET6");
    unsigned idx = unsigned(ifindex);
    if (::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_MULTICAST_IF, &idx, sizeof idx) != 0)
        return os::sys_fail("setsockopt", "IPV6_MULTICAST_IF");
    int loop = 0;  // the pod's processes in the namespace must not read our xid, DUID and IAID
    if (::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_MULTICAST_LOOP, &loop, sizeof loop) != 0)
        return os::sys_fail("setsockopt", "IPV6_MULTICAST_LOOP");
    auto sa = endpoint(local, v6::kClientPort, ifindex);
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
        return os::sys_fail("bind", "[" + local.str() + "]:546");
    return Client6(std::move(fd), ifindex, mac, key, timing, std::move(stopping), std::move(note));
}

bool Client6::sleep_until(Clock::time_point t) { return sleep_polling(t, stopping_); }

Status Client6::send(const v6::Message& m) const {
    auto wire = v6::encode(m);
    auto to = endpoint(*net::IpAddr::parse(v6::kAllServers), v6::kServerPort, ifindex_);
    if (::sendto(fd_.get(), wire.data(), wire.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to) < 0)
        return os::sys_fail("sendto", "[ff02::1:2]:547");
    return {};
}

Result<std::optional<v6::Message>> Client6::exchange(v6::Type type, v6::Exchange x, std::initializer_list<v6::Type> wanted,
                                                     Clock::time_point deadline, const Taker& takes) {
    if (stopping_()) return cni::Unexpected(stopped_error());
    x.xid = std::uniform_int_distribution<std::uint32_t>(0, 0xffffff)(rng_);
    x.duid = duid_;
    x.iaid = iaid_;
    auto hundredths = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - began_).count() / 10;
    x.elapsed = std::uint16_t(std::clamp<std::int64_t>(hundredths, 0, 0xffff));
    CNI_TRY(send(v6::client_message(type, x)));
    deadline = std::min(deadline, Clock::now() + timing_.timeout);
    std::uint8_t buf[65536];
    while (Clock::now() < deadline) {
        if (stopping_()) return cni::Unexpected(stopped_error());
        auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(std::min(deadline - Clock::now(), Clock::duration(200ms)));
        pollfd p{fd_.get(), POLLIN, 0};
        if (::poll(&p, 1, int(std::max<std::int64_t>(wait.count(), 1))) <= 0) continue;
        auto n = ::recv(fd_.get(), buf, sizeof buf, 0);
        if (n <= 0) continue;
        auto m = v6::decode(std::span<const std::uint8_t>(buf, std::size_t(n)));
        if (!m || v6::answers(*m, x.xid, duid_).code != v6::status::success) continue;  // not ours, or malformed: discarded
        // RFC 8415 section 18.2.10: a REPLY to SOLICIT without Rapid Commit, or one from another
        // server than the one a REQUEST or RENEW names, is discarded.
        if (type == v6::Type::solicit && m->type == v6::Type::reply && !m->rapid_commit) continue;
        if (!x.server_id.empty() && m->server_id != x.server_id) continue;
        if (std::find(wanted.begin(), wanted.end(), m->type) == wanted.end() || (takes && !takes(*m))) continue;
        return std::optional<v6::Message>(std::move(*m));
    }
    return std::optional<v6::Message>{};
}

Result<std::optional<Lease6>> Client6::attempt(std::optional<net::IpAddr> previous, Clock::time_point until, std::string& why,
                                               bool& refused) {
    v6::Exchange x;
    x.rapid_commit = true;
    if (previous) x.addresses = {*previous};
    // RFC 8415 section 18.2.9: an answer granting no address is passed over (a full server, or
    // anyone on the link, must not end the attempt); it is the attempt's refusal only when
    // nothing better came before its deadline.
    std::string empty;
    auto grants = [&](const v6::Message& m) {
        auto granting = v6::granted(m, iaid_);
        if (!granting.address)
            empty = "the DHCPv6 server " + std::string(m.type == v6::Type::reply ? "replied" : "advertised") + " no address: " +
                    status_text(granting.status);
        return granting.address.has_value();
    };
    CNI_TRY_ASSIGN(auto first, exchange(v6::Type::solicit, x, {v6::Type::advertise, v6::Type::reply}, until, grants));
    if (!first) {
        refused = !empty.empty();
        why = refused ? empty : "no DHCPv6 server answered the SOLICIT";
        return std::nullopt;
    }
    auto g = v6::granted(*first, iaid_);
    if (first->type == v6::Type::reply) return Lease6{std::move(*first), iaid_, wall_seconds(), g.address->address};  // rapid commit
    x.rapid_commit = false;
    x.server_id = first->server_id;
    x.addresses = {g.address->address};
    CNI_TRY_ASSIGN(auto reply, exchange(v6::Type::request, x, {v6::Type::reply}, until));
    if (!reply) {
        why = "no answer to the REQUEST for the advertised address " + g.address->address.str();
        return std::nullopt;
    }
    auto got = v6::granted(*reply, iaid_);
    if (!got.address) {
        refused = true;
        why = "the DHCPv6 server refused the REQUEST for " + g.address->address.str() + ": " + status_text(got.status);
        return std::nullopt;
    }
    return Lease6{std::move(*reply), iaid_, wall_seconds(), got.address->address};
}

Result<Lease6> Client6::acquire(std::optional<net::IpAddr> previous) {
    began_ = Clock::now();
    const auto give_up = began_ + timing_.resend_timeout;
    std::uniform_int_distribution<int> jitter(-int(kMaxJitter.count()), int(kMaxJitter.count()));
    int attempts = 0, refusals = 0;
    std::string why;
    for (;;) {
        auto attempt_start = Clock::now();
        auto slot = retry_delay(attempts++, timing_.resend_max, std::chrono::milliseconds(jitter(rng_)));
        bool refused = false;
        CNI_TRY_ASSIGN(auto lease, attempt(previous, std::min(attempt_start + slot, give_up), why, refused));
        if (lease) return std::move(*lease);
        refusals += refused;
        auto next = attempt_start + slot;
        if (refusals >= kMaxRefusals || next >= give_up) break;
        note_("attempt " + std::to_string(attempts) + ": " + why);
        if (!sleep_until(next)) return cni::Unexpected(stopped_error());
    }
    return fail("no DHCPv6 lease after " + std::to_string(attempts) + (attempts == 1 ? " attempt" : " attempts") + " in " +
                std::to_string(std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - began_).count()) +
                " s: " + why);
}

Result<RenewOutcome> Client6::renew(Lease6& lease, bool rebinding, std::string& why) {
    began_ = Clock::now();
    v6::Exchange x;
    if (!rebinding) x.server_id = lease.reply.server_id;
    x.addresses = {lease.leased};
    CNI_TRY_ASSIGN(auto reply, exchange(rebinding ? v6::Type::rebind : v6::Type::renew, x, {v6::Type::reply},
                                        Clock::now() + timing_.timeout));
    if (!reply) return RenewOutcome::silent;
    auto g = v6::granted(*reply, iaid_, lease.leased);
    if (g.address) {  // other addresses in the IA are not ours: the pod has only `leased`
        lease = Lease6{std::move(*reply), iaid_, wall_seconds(), lease.leased, std::move(lease.info)};
        return RenewOutcome::acked;
    }
    if (g.status.code == v6::status::use_multicast || g.status.code == v6::status::unspec_fail) {
        why = "the DHCPv6 server answered " + status_text(g.status);
        return RenewOutcome::silent;
    }
    const v6::IaNa* ia = reply->find_ia(iaid_);
    bool top_level = reply->status && reply->status->code != v6::status::success;
    if (!ia && !top_level) {
        why = "the DHCPv6 server's REPLY holds no IA_NA for it; keeping it";
        return RenewOutcome::silent;
    }
    why = ia && !top_level ? said_of(*ia, lease.leased) : status_text(g.status);
    return RenewOutcome::refused;  // NoBinding, NotOnLink, NoAddrsAvail, the address ended or left out: it is gone
}

Status Client6::inform(Lease6& lease) {
    began_ = Clock::now();
    const auto give_up = began_ + kInformationWait;
    std::uniform_int_distribution<int> jitter(-int(kMaxJitter.count()), int(kMaxJitter.count()));
    int attempts = 0;
    std::optional<v6::Message> other;  // the first REPLY with DNS options from another server
    auto of_lease_server = [&](const v6::Message& m) {
        if (m.status && m.status->code != v6::status::success) return false;
        if (m.server_id == lease.reply.server_id) return true;
        if (!other && (!m.dns_servers.empty() || !m.search.empty())) other = m;
        return false;
    };
    while (Clock::now() < give_up) {
        auto slot_end = std::min(Clock::now() + retry_delay(attempts++, timing_.resend_max, std::chrono::milliseconds(jitter(rng_))),
                                 give_up);
        CNI_TRY_ASSIGN(auto reply,
                       exchange(v6::Type::information_request, v6::Exchange{}, {v6::Type::reply}, slot_end, of_lease_server));
        if (reply) {
            lease.info = std::move(*reply);
            return {};
        }
        if (!sleep_until(slot_end)) return cni::Unexpected(stopped_error());
    }
    if (other) {
        lease.info = std::move(*other);
        return {};
    }
    return fail("no answer to " + std::to_string(attempts) + " INFORMATION-REQUEST" + (attempts == 1 ? "" : "s") + " in " +
                std::to_string(kInformationWait.count() / 1000) + " s");
}

Status Client6::release(const Lease6& lease) {
    v6::Exchange x;
    x.xid = std::uniform_int_distribution<std::uint32_t>(0, 0xffffff)(rng_);
    x.duid = duid_;
    x.iaid = iaid_;
    x.server_id = lease.reply.server_id;
    x.addresses = {lease.leased};
    return send(v6::client_message(v6::Type::release, x));
}

}  // namespace cni::dhcp
