// SPDX-License-Identifier: Apache-2.0
// RFC 2131 client exchanges (see client.hpp).
#include "applets/dhcp/client.hpp"

#include "applets/dhcp/lease_result.hpp"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <thread>

namespace cni::dhcp {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kAnyAddress = 0, kBroadcastAddress = 0xffffffff;
constexpr auto kPollSlice = 200ms;  // how often a wait looks at the stop predicate

std::string seconds(Clock::duration d) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f s", std::chrono::duration<double>(d).count());
    return buf;
}

}  // namespace

Error stopped_error() { return Error{code::try_again_later, "DHCP client stopped (the lease was released)", {}}; }

bool sleep_polling(Clock::time_point t, const std::function<bool()>& stopping) {
    for (auto now = Clock::now(); now < t; now = Clock::now()) {
        if (stopping()) return false;
        std::this_thread::sleep_for(std::min<Clock::duration>(t - now, kPollSlice));
    }
    return !stopping();
}

Result<CniResult> Lease::result(std::int64_t priority) const { return lease_result(ack, priority); }

std::uint32_t Lease::server() const { return ack.address_option(opt::server_id).value_or(ack.siaddr); }

std::int64_t wall_seconds() {
    timespec ts{};
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec;
}

Client::Client(PacketSocket socket, Identity id, Timing timing, std::function<bool()> stopping,
               std::function<void(const std::string&)> note)
    : socket_(std::move(socket)), id_(std::move(id)), timing_(timing), stopping_(std::move(stopping)), note_(std::move(note)),
      rng_(std::random_device{}()) {}

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

bool Client::sleep_until(Clock::time_point t) { return sleep_polling(t, stopping_); }

Result<Client> Client::open(int ifindex, const Mac& mac, const std::string& key, const DhcpConf& conf, Timing timing,
                            std::function<bool()> stopping, std::function<void(const std::string&)> note) {
    CNI_TRY_ASSIGN(auto socket, PacketSocket::open(ifindex, mac));
    return Client(std::move(socket), Identity{mac, client_id_for(key), conf.request_list, conf.provide}, timing,
                  std::move(stopping), std::move(note));
}

Result<std::optional<Reply>> Client::exchange(const Message& request, std::uint32_t src, std::uint32_t dst, const Mac& to,
                                              Clock::time_point deadline) {
    if (stopping_()) return cni::Unexpected(stopped_error());
    Message m = request;
    m.xid = std::uniform_int_distribution<std::uint32_t>()(rng_);
    CNI_TRY(socket_.listen(m.xid));
    CNI_TRY(socket_.send(m, src, dst, to));
    deadline = std::min(deadline, Clock::now() + timing_.timeout);
    std::optional<Reply> reply;
    while (!reply && Clock::now() < deadline) {
        if (stopping_()) return cni::Unexpected(stopped_error());
        CNI_TRY_ASSIGN(reply, socket_.receive(m.xid, std::min(deadline, Clock::now() + kPollSlice)));
    }
    CNI_TRY(socket_.listen(std::nullopt));
    return reply;
}

Result<std::optional<Lease>> Client::attempt(std::optional<std::uint32_t> previous, std::chrono::milliseconds slot,
                                             Clock::time_point give_up, RetryTally& tally) {
    Message discover = request_base(MessageType::discover);
    if (timing_.broadcast) discover.flags = kBroadcastFlag;
    if (previous) discover.set(opt::requested_ip, u32_bytes(*previous));
    CNI_TRY_ASSIGN(auto offer, exchange(discover, kAnyAddress, kBroadcastAddress, kBroadcastMac, std::min(Clock::now() + slot, give_up)));
    if (!offer || offer->msg.type() != MessageType::offer) {
        tally.record(offer ? Miss::odd_reply : Miss::no_offer);
        return std::nullopt;
    }

    Message request = request_base(MessageType::request);
    if (timing_.broadcast) request.flags = kBroadcastFlag;
    request.set(opt::requested_ip, u32_bytes(offer->msg.yiaddr));
    if (auto sid = offer->msg.address_option(opt::server_id)) request.set(opt::server_id, u32_bytes(*sid));
    CNI_TRY_ASSIGN(auto ack, exchange(request, kAnyAddress, kBroadcastAddress, kBroadcastMac, std::min(Clock::now() + slot, give_up)));
    if (ack && ack->msg.type() == MessageType::ack) return Lease{std::move(ack->msg), ack->from, wall_seconds()};
    if (!ack) {
        tally.record(Miss::no_answer_to_request, offer->msg.yiaddr);
    } else if (ack->msg.type() == MessageType::nak) {
        const Bytes* why = ack->msg.find(opt::message);
        tally.record(Miss::nak, offer->msg.yiaddr, why ? std::string(why->begin(), why->end()) : std::string());
    } else {
        tally.record(Miss::odd_reply, offer->msg.yiaddr);
    }
    return std::nullopt;
}

Result<Lease> Client::acquire(std::optional<std::uint32_t> previous) {
    const auto started = Clock::now();
    const auto give_up = started + timing_.resend_timeout;
    std::uniform_int_distribution<int> jitter(-int(kMaxJitter.count()), int(kMaxJitter.count()));
    RetryTally tally;
    for (;;) {
        auto attempt_start = Clock::now();
        auto slot = retry_delay(tally.attempts(), timing_.resend_max, std::chrono::milliseconds(jitter(rng_)));
        CNI_TRY_ASSIGN(auto lease, attempt(previous, slot, give_up, tally));
        if (lease) return std::move(*lease);
        auto next = attempt_start + slot;
        if (tally.refusals() >= kMaxRefusals || next >= give_up) break;
        note_("attempt " + std::to_string(tally.attempts()) + ": " + tally.last() + "; retrying in " +
              seconds(std::max<Clock::duration>(next - Clock::now(), Clock::duration::zero())));
        if (!sleep_until(next)) return cni::Unexpected(stopped_error());
    }
    return fail("no DHCP lease after " + std::to_string(tally.attempts()) + (tally.attempts() == 1 ? " attempt" : " attempts") +
                " in " + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - started).count()) +
                " s: " + tally.summary());
}

Result<RenewOutcome> Client::renew(Lease& lease, bool rebinding, std::string& why) {
    Message request = request_base(MessageType::request);
    request.ciaddr = lease.address();
    if (rebinding && timing_.broadcast) request.flags = kBroadcastFlag;
    std::uint32_t dst = rebinding ? kBroadcastAddress : lease.server();
    const Mac& to = rebinding ? kBroadcastMac : lease.server_mac;
    CNI_TRY_ASSIGN(auto reply, exchange(request, lease.address(), dst, to, Clock::now() + timing_.timeout));
    if (!reply) return RenewOutcome::silent;
    if (reply->msg.type() == MessageType::nak) {
        const Bytes* text = reply->msg.find(opt::message);
        why = "NAK" + (text ? " (\"" + printable(std::string(text->begin(), text->end())) + "\")" : std::string());
        return RenewOutcome::refused;
    }
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
