// SPDX-License-Identifier: Apache-2.0
// One lease's thread (see attachment.hpp).
#include "applets/dhcp/attachment.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "applets/dhcp/client6.hpp"
#include "applets/dhcp/retry.hpp"
#include "core/net/mac.hpp"
#include "core/nl/link.hpp"
#include "core/os/netns.hpp"

namespace cni::dhcp {
namespace {

constexpr std::int64_t kMinRetrySeconds = 2, kMaxRetrySeconds = 60;
constexpr std::int64_t kClockCheckSeconds = 60;  // the longest a lease's thread sleeps without looking at the clock
constexpr std::chrono::milliseconds kRunningWait{3000};  // how long a raised link may take to run
constexpr std::chrono::milliseconds kCheckWait{5000};    // a CHECK's wait for an acquisition in flight
constexpr std::chrono::milliseconds kHangUpPoll{200};    // how often a waiting ADD asks whether its client hung up

// RFC 2131 4.4.5: after an unanswered renewal wait half the time left, but not too little.
std::int64_t retry_at(std::int64_t now, std::int64_t until) {
    return now + std::clamp((until - now) / 2, kMinRetrySeconds, kMaxRetrySeconds);
}

// 2, 4, 8 ... 60 s, doubling with `streak`, which it counts up.
std::int64_t back_off(int& streak) { return std::min(kMinRetrySeconds << std::min(streak++, 5), kMaxRetrySeconds); }

// The lease a record holds for client C's family.
template <class L>
std::optional<L> lease_in(const std::optional<LeaseRecord>& r) {
    if (!r) return std::nullopt;
    if constexpr (std::is_same_v<L, Lease6>) return r->lease6;
    else return r->lease;
}

// One lease of an attachment, DHCPv4's or DHCPv6's (C: Client or Client6), and its thread.
template <class C>
class Keeper final : public Attachment {
public:
    using L = typename C::Lease;
    Keeper(LeaseRecord record, DhcpConf conf, Timing timing, const LeaseStore& store, Logger log,
           const std::optional<LeaseRecord>& resumed);
    ~Keeper() override { stop(false); }
    Keeper(const Keeper&) = delete;
    Keeper& operator=(const Keeper&) = delete;

    std::optional<Result<CniResult>> wait_bound(const std::function<bool()>& hung_up) override;
    bool unwaited() override;
    Status check() override;
    void stop(bool release) override;
    const LeaseRecord& identity() const override { return record_; }
    const DhcpConf& conf() const override { return conf_; }

private:
    using Opener = std::function<Result<C>()>;

    void run();
    Status bind_link(int& ifindex, Mac& mac);
    // The lease ADD waits for: the resumed one, or one acquired now with `client`. False, settled
    // with the error, when there is none.
    bool first_lease(std::optional<C>& client);
    // A lease just acquired: DHCPv6's without DNS options asks for them (client6.hpp: inform).
    void complete(C& client, L& lease);
    // Renewals, rebinds and new acquisitions until stopped, or until the link is gone; `client`
    // is opened with `open` first when it is not (a resumed lease whose client could not start).
    void maintain(std::optional<C>& client, const Opener& open, const os::Netns& ns, int ifindex);
    // The link is still the one the lease is for (its namespace and index); if not, the lease
    // is forgotten.
    bool link_still_there(const os::Netns& ns, int ifindex);
    // Renewing `cur` at `now` (from T2: rebinding): when to try next; a refusal sets `ended_`,
    // and the next try acquires anew.
    std::int64_t renew(C& client, L cur, std::int64_t now);
    // A new lease, asking for `cur`'s address again: when to renew it, or to try again (still
    // acquiring: `ended_` stays).
    std::int64_t reacquire(C& client, const L& cur);
    // Logs `what` + `then` and keeps `what` as the last miss, which CHECK names once the lease expired.
    void missed(const std::string& what, const std::string& then = "");
    void settle(std::optional<Error> failure);
    void persist(const L& lease);
    bool sleep_until(std::int64_t wall_seconds);  // false when stopping
    // When to renew `l`: its T1, or for a degenerate lease (lease_times) 2, 4, 8 ... 60 s after
    // now, doubling with each degenerate lease in a row.
    std::int64_t next_renewal(const L& l);
    // When to try again after a renewal without an answer at `now` (`l` not yet expired): half
    // the time to T2 (to expiry once past it), 2 to 60 s; an expired `l`, a minute later.
    static std::int64_t retry_renewal(const L& l, std::int64_t now);

    const LeaseRecord record_;
    const std::string shown_key_;  // record_.key as log lines and errors show it (config.hpp: shown)
    const DhcpConf conf_;
    const Timing timing_;
    const LeaseStore& store_;
    Logger log_;
    const std::optional<L> resumed_;
    const std::optional<net::IpAddr> resumed_given_;  // the record's "given", when it moved
    int degenerate_streak_ = 0;
    int refusal_streak_ = 0;  // renewals refused in a row

    std::mutex mu_;
    std::condition_variable cv_;
    std::atomic<bool> stopping_{false};
    bool release_ = false;
    bool wake_ = false;
    bool settled_ = false;
    int waiters_ = 0;  // ADDs in wait_bound
    std::optional<Error> failure_;
    std::optional<L> lease_;
    std::string ended_;   // why the server ended lease_ (a refusal), until a lease is granted again
    std::string missed_;  // the last renewal or acquisition that failed, until one succeeds
    std::string given_;  // the address the pod got (ADD's result, or the resumed record's)
    std::thread thread_;
};

// A dual-stack attachment: its DHCPv4 and DHCPv6 leases, one result.
class Dual final : public Attachment {
public:
    Dual(std::shared_ptr<Attachment> v4, std::shared_ptr<Attachment> v6) : v4_(std::move(v4)), v6_(std::move(v6)) {}
    std::optional<Result<CniResult>> wait_bound(const std::function<bool()>& hung_up) override;
    bool unwaited() override { return waiters_ == 0 && (v4_->unwaited() || v6_->unwaited()); }
    Status check() override {
        CNI_TRY(v4_->check());
        return v6_->check();
    }
    void stop(bool release) override {
        v4_->stop(release);
        v6_->stop(release);
    }
    const LeaseRecord& identity() const override { return v4_->identity(); }
    const DhcpConf& conf() const override { return v4_->conf(); }

private:
    std::shared_ptr<Attachment> v4_, v6_;
    std::atomic<int> waiters_{0};
};

}  // namespace

std::optional<Result<CniResult>> Dual::wait_bound(const std::function<bool()>& hung_up) {
    ++waiters_;
    auto r4 = v4_->wait_bound(hung_up);
    auto r6 = r4 ? v6_->wait_bound(hung_up) : std::nullopt;
    --waiters_;
    if (!r4 || !r6) return std::nullopt;
    if (!*r4) return r4;
    if (!*r6) return r6;
    CniResult r = std::move(**r4);
    for (auto& ip : (*r6)->ips) r.ips.push_back(ip);
    r.dns = (*r6)->dns;
    return Result<CniResult>(std::move(r));
}

std::shared_ptr<Attachment> start_attachment(const LeaseRecord& identity, const DhcpConf& conf, Timing timing,
                                             const LeaseStore& store, Logger log, const std::optional<LeaseRecord>& v4_rec,
                                             const std::optional<LeaseRecord>& v6_rec) {
    LeaseRecord id = identity;
    id.v6 = false;
    id.given.reset();
    std::shared_ptr<Attachment> v4, v6;
    if (wants_v4(conf.protocol)) v4 = std::make_shared<Keeper<Client>>(id, conf, timing, store, log, v4_rec);
    if (wants_v6(conf.protocol)) {
        id.v6 = true;
        v6 = std::make_shared<Keeper<Client6>>(id, conf, timing, store, log, v6_rec);
    }
    if (v4 && v6) return std::make_shared<Dual>(std::move(v4), std::move(v6));
    return v4 ? v4 : v6;
}

template <class C>
Keeper<C>::Keeper(LeaseRecord record, DhcpConf conf, Timing timing, const LeaseStore& store, Logger log,
                  const std::optional<LeaseRecord>& resumed)
    : record_(std::move(record)), shown_key_(shown(record_.key)), conf_(std::move(conf)), timing_(timing), store_(store),
      log_(std::move(log)), resumed_(lease_in<L>(resumed)), resumed_given_(resumed ? resumed->given : std::nullopt) {
    thread_ = std::thread([this] { run(); });
}

template <class C>
void Keeper<C>::stop(bool release) {
    {
        std::lock_guard lock(mu_);
        if (!stopping_) release_ = release;
        stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

template <class C>
void Keeper<C>::settle(std::optional<Error> failure) {
    {
        std::lock_guard lock(mu_);
        settled_ = true;
        failure_ = std::move(failure);
    }
    cv_.notify_all();
}

template <class C>
std::optional<Result<CniResult>> Keeper<C>::wait_bound(const std::function<bool()>& hung_up) {
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
    return lease_->result(conf_.priority);
}

template <class C>
bool Keeper<C>::unwaited() {
    std::lock_guard lock(mu_);
    return waiters_ == 0 && !settled_;
}

template <class C>
Status Keeper<C>::check() {
    std::unique_lock lock(mu_);
    wake_ = true;
    cv_.notify_all();
    if (!cv_.wait_for(lock, kCheckWait, [this] { return settled_; }))
        return fail(code::try_again_later, "the DHCP daemon is still acquiring a lease for " + shown_key_);
    if (failure_) return cni::Unexpected(*failure_);
    if (!lease_) return fail("no DHCP lease held for " + shown_key_);
    if (!ended_.empty()) return fail(ended_ + "; acquiring a new one");
    if (std::int64_t late = wall_seconds() - lease_->expiry(); late >= 0)
        return fail("the lease of " + shown_key_ + " (" + lease_->address_text() + ") expired " + std::to_string(late) +
                    " s ago" + (missed_.empty() ? "" : "; not renewed: " + missed_));
    if (lease_->address_text() != given_)
        return fail("the lease of " + shown_key_ + " moved from " + given_ + " to " + lease_->address_text() +
                    ": the container's address is no longer leased; re-create the container");
    return {};
}

template <class C>
std::int64_t Keeper<C>::next_renewal(const L& l) {
    if (!l.degenerate()) {
        degenerate_streak_ = 0;
        return l.t1();
    }
    std::int64_t delay = back_off(degenerate_streak_);
    log_("the DHCP server gave " + shown_key_ + " a lease too short to renew at its T1; renewing in " + std::to_string(delay) + " s");
    return std::max(l.t1(), wall_seconds() + delay);
}

template <class C>
std::int64_t Keeper<C>::retry_renewal(const L& l, std::int64_t now) {
    if (now >= l.expiry()) return now + kMaxRetrySeconds;
    return std::min(retry_at(now, now < l.t2() ? l.t2() : l.expiry()), l.expiry());
}

template <class C>
bool Keeper<C>::sleep_until(std::int64_t wall) {
    std::unique_lock lock(mu_);
    cv_.wait_until(lock, std::chrono::system_clock::from_time_t(wall), [this] { return stopping_.load() || wake_; });
    wake_ = false;
    return !stopping_;
}

template <class C>
void Keeper<C>::persist(const L& lease) {
    LeaseRecord r = record_;
    put_lease(r, lease);
    if (lease.address_text() != given_) r.given = net::IpAddr::parse(given_);
    if (auto st = store_.save(r); !st) log_("saving the lease of " + shown_key_ + ": " + st.error().msg);
    std::lock_guard lock(mu_);
    lease_ = lease;
    ended_.clear();
    missed_.clear();
}

template <class C>
void Keeper<C>::missed(const std::string& what, const std::string& then) {
    log_(what + then);
    std::lock_guard lock(mu_);
    missed_ = what;
}

template <class C>
Status Keeper<C>::bind_link(int& ifindex, Mac& mac) {
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

template <class C>
void Keeper<C>::run() {
    auto give_up = [this](const Error& e) {
        if (resumed_) {  // a lease from before a restart whose container is gone
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
    Opener open = [&] {
        return C::open(ifindex, mac, record_.key, conf_, timing_, [this] { return stopping_.load(); },
                       [this](const std::string& m) { log_("no lease yet for " + shown_key_ + ", " + m); });
    };
    std::optional<C> client;
    if (auto c = open()) client.emplace(std::move(*c));
    else if (!resumed_) return give_up(c.error());
    else log_("keeping the lease of " + shown_key_ + ", whose client cannot start: " + c.error().msg +
              "; trying again on its renewal schedule");
    if (!first_lease(client)) return;
    maintain(client, open, *ns, ifindex);
    std::optional<L> held;
    {
        std::lock_guard lock(mu_);
        if (!release_ || !lease_) return;
        held = lease_;
    }
    if (!client) {  // a resumed lease whose client could not start: by DEL, the port is usually free
        auto c = open();
        if (!c) return log_("not releasing the lease of " + shown_key_ + ": its client cannot start: " + c.error().msg);
        client.emplace(std::move(*c));
    }
    if (auto st = client->release(*held); !st) log_("releasing the lease of " + shown_key_ + ": " + st.error().msg);
    else log_("released the lease of " + shown_key_);
}

template <class C>
bool Keeper<C>::first_lease(std::optional<C>& client) {
    if (resumed_) {
        std::lock_guard lock(mu_);
        lease_ = resumed_;
        given_ = resumed_given_ ? resumed_given_->str() : resumed_->address_text();
    } else {
        auto lease = client->acquire();
        if (!lease) {
            const char* what = record_.v6 ? "error acquiring a DHCPv6 lease on " : "error acquiring a DHCP lease on ";
            settle(lease.error().context(what + record_.ifname));
            return false;
        }
        complete(*client, *lease);
        {
            std::lock_guard lock(mu_);
            given_ = lease->address_text();
        }
        persist(*lease);
    }
    settle(std::nullopt);
    log_("lease of " + shown_key_ + ": " + lease_->address_text());
    return true;
}

template <class C>
void Keeper<C>::complete(C& client, L& lease) {
    if constexpr (std::is_same_v<C, Client6>) {
        if (!lease.wants_information()) return;
        if (auto st = client.inform(lease); !st && !stopping_)
            log_("the DHCPv6 lease of " + shown_key_ + " came without DNS servers, and an Information-request got none: " +
                 st.error().msg);
    }
}

template <class C>
void Keeper<C>::maintain(std::optional<C>& client, const Opener& open, const os::Netns& ns, int ifindex) {
    std::int64_t next = next_renewal(*lease_);
    if (std::int64_t now = wall_seconds(); lease_->bound_at > now) {
        // A record dated ahead of the clock (set back since): renewed now, not that much later.
        log_("the lease of " + shown_key_ + " is dated " + std::to_string(lease_->bound_at - now) +
             " s ahead of the clock; renewing it now");
        std::lock_guard lock(mu_);
        lease_->bound_at = now;
        next = now;
    }
    std::int64_t wall = wall_seconds();
    auto steady = std::chrono::steady_clock::now();
    while (sleep_until(std::min(next, wall_seconds() + kClockCheckSeconds))) {
        std::int64_t now = wall_seconds();
        auto steady_now = std::chrono::steady_clock::now();
        if (std::int64_t back = clock_set_back(wall, now, steady_now - steady); back > 0) {
            // The lease's times are wall-clock ones: set back with the clock, or every renewal waits the step.
            log_("the clock was set back " + std::to_string(back) + " s; the times of the lease of " + shown_key_ + " move with it");
            std::lock_guard lock(mu_);
            lease_->bound_at -= back;
            next -= back;
        }
        wall = now;
        steady = steady_now;
        if (now < next) continue;  // woken by a CHECK, or to look at the clock
        if (!link_still_there(ns, ifindex)) return;
        std::optional<L> cur;
        bool ended = false;
        {
            std::lock_guard lock(mu_);
            cur = lease_;
            ended = !ended_.empty();
        }
        if (!client) {
            auto c = open();
            if (!c) {
                next = retry_renewal(*cur, now);
                missed("the client of " + shown_key_ + " still cannot start: " + c.error().msg,
                       "; trying again in " + std::to_string(next - now) + " s");
                continue;
            }
            client.emplace(std::move(*c));
        }
        next = !ended && now < cur->expiry() ? renew(*client, *cur, now) : reacquire(*client, *cur);
    }
}

template <class C>
bool Keeper<C>::link_still_there(const os::Netns& ns, int ifindex) {
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

template <class C>
std::int64_t Keeper<C>::renew(C& client, L cur, std::int64_t now) {
    bool rebinding = now >= cur.t2();
    std::string why;
    auto outcome = client.renew(cur, rebinding, why);
    if (!outcome && stopping_) return now;  // the loop's sleep ends it
    if (outcome && *outcome == RenewOutcome::acked) {
        if (rebinding) log_("rebound the lease of " + shown_key_ + " (" + cur.address_text() + ")");
        refusal_streak_ = 0;
        persist(cur);
        return next_renewal(cur);
    }
    if (outcome && *outcome == RenewOutcome::refused) {
        // Waited for, growing with refusals in a row: a server (or a forger on the link) that
        // refuses every renewal and grants every SOLICIT does not cycle the lease at the T1 floor.
        std::int64_t delay = back_off(refusal_streak_);
        {
            std::lock_guard lock(mu_);
            ended_ = "the DHCP server ended the lease of " + shown_key_ + " (" + cur.address_text() + ")" + (why.empty() ? "" : ": " + why);
        }
        log_("the DHCP server refused to renew the lease of " + shown_key_ + " (" + cur.address_text() + ")" +
             (why.empty() ? "" : ": " + why) + "; acquiring a new one in " + std::to_string(delay) + " s");
        return now + delay;
    }
    const std::string verb = rebinding ? "rebinding" : "renewing";
    if (!outcome) missed(verb + " the lease of " + shown_key_ + ": " + outcome.error().msg);
    else if (!why.empty()) missed(verb + " the lease of " + shown_key_ + ": " + why);
    else missed("no answer to " + verb + " the lease of " + shown_key_);
    return retry_renewal(cur, now);
}

template <class C>
std::int64_t Keeper<C>::reacquire(C& client, const L& cur) {
    auto fresh = client.acquire(cur.address());
    if (!fresh) {
        if (!stopping_) missed("re-acquiring the lease of " + shown_key_ + ": " + fresh.error().msg);
        return wall_seconds() + kMaxRetrySeconds;  // the acquisition took its time: from its end (the loop's sleep ends a stop)
    }
    complete(client, *fresh);
    persist(*fresh);  // first: once the line below is logged, CHECK names the move
    if (fresh->address() != cur.address())
        log_("the lease of " + shown_key_ + " moved from " + cur.address_text() + " to " + fresh->address_text() +
             "; the container keeps the old address until it is re-created, and CHECK fails");
    return next_renewal(*fresh);
}

}  // namespace cni::dhcp
