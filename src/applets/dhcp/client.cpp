// SPDX-License-Identifier: Apache-2.0
// RFC 2131 client exchanges (see client.hpp).
#include "applets/dhcp/client.hpp"

#include <time.h>

#include <algorithm>

namespace cni::dhcp {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kAnyAddress = 0, kBroadcastAddress = 0xffffffff;
constexpr int kFastRetries = 4;
constexpr auto kPollSlice = 200ms;  // how often a wait looks at the stop predicate

Error stopped() { return Error{code::try_again_later, "DHCP client stopped (the lease was released)", {}}; }

}  // namespace

std::uint32_t Lease::server() const { return ack.address_option(opt::server_id).value_or(ack.siaddr); }

std::int64_t wall_seconds() {
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec;
}

Client::Client(PacketSocket& socket, Identity id, Timing timing, std::function<bool()> stopping)
    : socket_(socket), id_(std::move(id)), timing_(timing), stopping_(std::move(stopping)), rng_(std::random_device{}()) {}

Message Client::request_base(MessageType type) const {
    Message m;
    m.xid = 0;
    m.chaddr = id_.mac;
    m.set(opt::message_type, {std::uint8_t(type)});
    m.set(opt::client_id, id_.client_id);
    if (type != MessageType::release) {
        if (!id_.request_list.empty()) m.set(opt::parameter_request_list, id_.request_list);
        for (const auto& o : id_.provide) m.set(o.code, o.data);  // a provided client id wins
    }
    return m;
}

std::chrono::milliseconds Client::backoff(int attempt) {
    std::uniform_int_distribution<int> jitter(-1000, 1000);
    std::chrono::milliseconds base = 2s;
    if (attempt >= kFastRetries) base = std::min<std::chrono::milliseconds>(4s * (1 << std::min(attempt - kFastRetries, 10)), timing_.resend_max);
    return std::max<std::chrono::milliseconds>(base + std::chrono::milliseconds(jitter(rng_)), 500ms);
}

Result<std::optional<Reply>> Client::exchange(const Message& request, std::uint32_t src, std::uint32_t dst, const Mac& to,
                                              std::chrono::milliseconds wait) {
    Message m = request;
    m.xid = std::uniform_int_distribution<std::uint32_t>()(rng_);
    CNI_TRY(socket_.listen(m.xid));
    CNI_TRY(socket_.send(m, src, dst, to));
    auto deadline = Clock::now() + std::min(wait, timing_.timeout);
    std::optional<Reply> reply;
    while (!reply && Clock::now() < deadline) {
        if (stopping_()) return cni::Unexpected(stopped());
        CNI_TRY_ASSIGN(reply, socket_.receive(m.xid, std::min(deadline, Clock::now() + kPollSlice)));
    }
    CNI_TRY(socket_.listen(std::nullopt));
    return reply;
}

Result<Lease> Client::acquire(std::optional<std::uint32_t> previous) {
    auto give_up = Clock::now() + timing_.resend_timeout;
    std::string last_refusal;
    for (int attempt = 0; Clock::now() < give_up; ++attempt) {
        if (stopping_()) return cni::Unexpected(stopped());
        Message discover = request_base(MessageType::discover);
        if (timing_.broadcast) discover.flags = kBroadcastFlag;
        if (previous) discover.set(opt::requested_ip, u32_bytes(*previous));
        CNI_TRY_ASSIGN(auto offer, exchange(discover, kAnyAddress, kBroadcastAddress, kBroadcastMac, backoff(attempt)));
        if (!offer || offer->msg.type() != MessageType::offer) continue;

        Message request = request_base(MessageType::request);
        if (timing_.broadcast) request.flags = kBroadcastFlag;
        request.set(opt::requested_ip, u32_bytes(offer->msg.yiaddr));
        if (auto sid = offer->msg.address_option(opt::server_id)) request.set(opt::server_id, u32_bytes(*sid));
        CNI_TRY_ASSIGN(auto ack, exchange(request, kAnyAddress, kBroadcastAddress, kBroadcastMac, backoff(attempt)));
        if (!ack) continue;
        if (ack->msg.type() == MessageType::nak) {
            const Bytes* why = ack->msg.find(opt::message);
            last_refusal = why ? std::string(why->begin(), why->end()) : "DHCPNAK";
            continue;
        }
        if (ack->msg.type() != MessageType::ack) continue;
        return Lease{std::move(ack->msg), ack->from, wall_seconds()};
    }
    return fail("no DHCP lease on the interface after " + std::to_string(timing_.resend_timeout.count() / 1000) + "s" +
                (last_refusal.empty() ? std::string(" (no answer from a DHCP server)") : " (last refusal: " + last_refusal + ")"));
}

Result<RenewOutcome> Client::renew(Lease& lease, bool rebinding) {
    Message request = request_base(MessageType::request);
    request.ciaddr = lease.address();
    if (rebinding && timing_.broadcast) request.flags = kBroadcastFlag;
    std::uint32_t dst = rebinding ? kBroadcastAddress : lease.server();
    const Mac& to = rebinding ? kBroadcastMac : lease.server_mac;
    CNI_TRY_ASSIGN(auto reply, exchange(request, lease.address(), dst, to, timing_.timeout));
    if (!reply) return RenewOutcome::silent;
    if (reply->msg.type() == MessageType::nak) return RenewOutcome::refused;
    if (reply->msg.type() != MessageType::ack) return RenewOutcome::silent;
    lease = Lease{std::move(reply->msg), reply->from, wall_seconds()};
    return RenewOutcome::acked;
}

Status Client::release(const Lease& lease) {
    Message m = request_base(MessageType::release);
    m.ciaddr = lease.address();
    m.set(opt::server_id, u32_bytes(lease.server()));
    m.xid = std::uniform_int_distribution<std::uint32_t>()(rng_);
    return socket_.send(m, lease.address(), lease.server(), lease.server_mac);
}

}  // namespace cni::dhcp
