// SPDX-License-Identifier: Apache-2.0
// One lease's thread (see attachment.hpp).
#include "applets/dhcp/attachment.hpp"

#include <chrono>

#include "applets/dhcp/lease_result.hpp"
#include "core/net/mac.hpp"
#include "core/nl/link.hpp"
#include "core/os/netns.hpp"

namespace cni::dhcp {
namespace {

constexpr std::int64_t kMinRetrySeconds = 2, kMaxRetrySeconds = 60;
constexpr std::chrono::milliseconds kRunningWait{3000};  // how long a raised link may take to run
constexpr std::chrono::milliseconds kCheckWait{5000};    // a CHECK's wait for an acquisition in flight
constexpr std::chrono::milliseconds kHangUpPoll{200};    // how often a waiting ADD asks whether its client hung up

// RFC 2131 4.4.5: after an unanswered renewal wait half the time left, but not too little.
std::int64_t retry_at(std::int64_t now, std::int64_t until) {
    return now + std::clamp((until - now) / 2, kMinRetrySeconds, kMaxRetrySeconds);
}

}  // namespace

Attachment::Attachment(LeaseRecord record, DhcpConf conf, Timing timing, const LeaseStore& store, Logger log, bool resume)
    : record_(std::move(record)), shown_key_(shown(record_.key)), conf_(std::move(conf)), timing_(timing), store_(store),
      log_(std::move(log)), resume_(resume) {
    thread_ = std::thread([this] { run(); });
}

Attachment::~Attachment() { stop(false); }

void Attachment::stop(bool release) {
    {
        std::lock_guard lock(mu_);
        if (!stopping_) release_ = release;
        stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

void Attachment::settle(std::optional<Error> failure) {
    {
        std::lock_guard lock(mu_);
        settled_ = true;
        failure_ = std::move(failure);
    }
    cv_.notify_all();
}

std::optional<Result<CniResult>> Attachment::wait_bound(const std::function<bool()>& hung_up) {
    std::unique_lock lock(mu_);
    ++waiters_;
    while (!cv_.wait_for(lock, kHangUpPoll, [this] { return settled_; }))
        if (hung_up()) {
            --waiters_;
            return std::nullopt;
        }
    --waiters_;
    if (failure_) return Result<CniResult>(cni::Unexpected(*failure_));
    if (!lease_) return Result<CniResult>(fail("no DHCP lease for " + shown_key_));
    return lease_result(lease_->ack, conf_.priority);
}

bool Attachment::unwaited() {
    std::lock_guard lock(mu_);
    return waiters_ == 0 && !settled_;
}

Status Attachment::check() {
    std::unique_lock lock(mu_);
    wake_ = true;
    cv_.notify_all();
    if (!cv_.wait_for(lock, kCheckWait, [this] { return settled_; }))
        return fail(code::try_again_later, "the DHCP daemon is still acquiring a lease for " + shown_key_);
    if (failure_) return cni::Unexpected(*failure_);
    if (!lease_) return fail("no DHCP lease held for " + shown_key_);
    return {};
}

std::int64_t Attachment::next_renewal(const Lease& l) {
    if (!lease_times(l.ack).degenerate) {
        degenerate_streak_ = 0;
        return l.t1();
    }
    std::int64_t delay = std::min(kMinRetrySeconds << std::min(degenerate_streak_++, 5), kMaxRetrySeconds);
    log_("the DHCP server gave " + shown_key_ + " a lease too short to renew at its T1; renewing in " + std::to_string(delay) + " s");
    return std::max(l.t1(), wall_seconds() + delay);
}

bool Attachment::sleep_until(std::int64_t wall) {
    std::unique_lock lock(mu_);
    cv_.wait_until(lock, std::chrono::system_clock::from_time_t(wall), [this] { return stopping_.load() || wake_; });
    wake_ = false;
    return !stopping_;
}

void Attachment::persist(const Lease& lease) {
    LeaseRecord r = record_;
    r.lease = lease;
    if (auto st = store_.save(r); !st) log_("saving the lease of " + shown_key_ + ": " + st.error().msg);
    std::lock_guard lock(mu_);
    lease_ = lease;
}

Status Attachment::bind_link(int& ifindex, Mac& mac) {
    CNI_TRY_ASSIGN(auto sock, nl::Socket::open());
    CNI_TRY_ASSIGN(auto link, nl::require_link(sock, record_.ifname));
    if (!link.up()) CNI_TRY(nl::set_link_up(sock, link, true));
    // A DISCOVER sent before the raised link runs is dropped, and repeated only seconds later.
    CNI_TRY_ASSIGN(link, nl::wait_until_running(sock, record_.ifname, kRunningWait));
    auto bytes = net::mac_bytes(link.mac);
    if (!bytes) return fail("interface " + record_.ifname + " has no Ethernet address");
    ifindex = link.index;
    mac = *bytes;
    return {};
}

void Attachment::run() {
    auto give_up = [this](const Error& e) {
        if (resume_) {  // a lease from before a restart whose container is gone
            log_("dropping the lease of " + shown_key_ + ": " + e.msg);
            store_.remove(record_.key);
        }
        settle(e);
    };
    auto ns = os::Netns::open(record_.netns);
    if (!ns) return give_up(ns.error());
    auto guard = os::NetnsGuard::enter(*ns);
    if (!guard) return give_up(guard.error());
    int ifindex = 0;
    Mac mac{};
    if (auto st = bind_link(ifindex, mac); !st) return give_up(st.error());
    auto socket = PacketSocket::open(ifindex, mac);
    if (!socket) return give_up(socket.error());
    Client client(*socket, Identity{mac, client_id_for(record_.key), conf_.request_list, conf_.provide}, timing_,
                  [this] { return stopping_.load(); }, [this](const std::string& m) { log_("no lease yet for " + shown_key_ + ", " + m); });
    if (!first_lease(client)) return;
    maintain(client, *ns, ifindex);
    std::lock_guard lock(mu_);
    if (release_ && lease_) {
        if (auto st = client.release(*lease_); !st) log_("releasing the lease of " + shown_key_ + ": " + st.error().msg);
        else log_("released the lease of " + shown_key_);
    }
}

bool Attachment::first_lease(Client& client) {
    if (resume_) {
        std::lock_guard lock(mu_);
        lease_ = record_.lease;
    } else {
        auto lease = client.acquire();
        if (!lease) {
            settle(lease.error().context("error acquiring a DHCP lease on " + record_.ifname));
            return false;
        }
        persist(*lease);
    }
    settle(std::nullopt);
    log_("lease of " + shown_key_ + ": " + v4(lease_->address()).str());
    return true;
}

void Attachment::maintain(Client& client, const os::Netns& ns, int ifindex) {
    std::int64_t next_attempt = next_renewal(*lease_);
    while (sleep_until(next_attempt)) {
        std::int64_t now = wall_seconds();
        if (now < next_attempt) continue;  // woken by a CHECK
        if (!link_still_there(ns, ifindex)) return;
        Lease cur;
        {
            std::lock_guard lock(mu_);
            cur = *lease_;
        }
        std::optional<std::int64_t> renewed;
        if (now < cur.expiry()) renewed = renew(client, cur, now);
        next_attempt = renewed ? *renewed : reacquire(client, cur);
    }
}

bool Attachment::link_still_there(const os::Netns& ns, int ifindex) {
    auto now_ns = os::Netns::open(record_.netns);
    int idx = 0;
    Mac m{};
    if (now_ns && now_ns->same_as(ns) && bind_link(idx, m) && idx == ifindex) return true;
    log_("interface " + record_.ifname + " of " + shown_key_ + " is gone; forgetting its lease");
    store_.remove(record_.key);
    std::lock_guard lock(mu_);
    lease_.reset();
    return false;
}

std::optional<std::int64_t> Attachment::renew(Client& client, Lease cur, std::int64_t now) {
    bool rebinding = now >= cur.t2();
    auto outcome = client.renew(cur, rebinding);
    if (!outcome && stopping_) return now;  // the loop's sleep ends it
    if (outcome && *outcome == RenewOutcome::acked) {
        if (rebinding) log_("rebound the lease of " + shown_key_ + " (" + v4(cur.address()).str() + ")");
        persist(cur);
        return next_renewal(cur);
    }
    if (outcome && *outcome == RenewOutcome::refused) {
        log_("the DHCP server refused to renew the lease of " + shown_key_ + "; acquiring a new one");
        return std::nullopt;
    }
    if (!outcome) log_("renewing the lease of " + shown_key_ + ": " + outcome.error().msg);
    else log_("no answer to " + std::string(rebinding ? "rebinding" : "renewing") + " the lease of " + shown_key_);
    return std::min(retry_at(now, now < cur.t2() ? cur.t2() : cur.expiry()), cur.expiry());
}

std::int64_t Attachment::reacquire(Client& client, const Lease& cur) {
    auto fresh = client.acquire(cur.address());
    if (!fresh) {
        if (!stopping_) log_("re-acquiring the lease of " + shown_key_ + ": " + fresh.error().msg);
        return wall_seconds() + kMaxRetrySeconds;  // the acquisition took its time: from its end (the loop's sleep ends a stop)
    }
    if (fresh->address() != cur.address())
        log_("the lease of " + shown_key_ + " moved from " + v4(cur.address()).str() + " to " + v4(fresh->address()).str() +
             "; the container keeps the old address until it is re-created");
    persist(*fresh);
    return next_renewal(*fresh);
}

}  // namespace cni::dhcp
