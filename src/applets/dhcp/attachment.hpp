// SPDX-License-Identifier: Apache-2.0
// One attachment's DHCP lease, kept alive by its own thread. The thread enters the container's
// network namespace once (the netns guard's rule for threaded code: only a dedicated thread
// switches) and stays there: it sets the link up, acquires a lease (or resumes a persisted one),
// then sleeps until T1 and renews (unicast), rebinds from T2 (broadcast), and acquires again if
// the lease expired or the server refused it (an acquisition that fails is tried again a minute
// after it ended; client.hpp backs off within one). Every ACK is persisted. The link disappearing (the
// container went away without a DEL) ends the thread and drops the record. stop(release) ends
// it, sending a DHCPRELEASE first when asked (DEL, GC) and keeping the record otherwise (daemon
// shutdown, so a restarted daemon resumes).
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "applets/dhcp/client.hpp"
#include "applets/dhcp/config.hpp"
#include "applets/dhcp/lease_store.hpp"
#include "core/cni/cni_result.hpp"
#include "core/os/netns.hpp"

namespace cni::dhcp {

using Logger = std::function<void(const std::string&)>;

class Attachment {
public:
    // `record.lease` is used when `resume` is set (a record loaded at daemon start).
    Attachment(LeaseRecord record, DhcpConf conf, Timing timing, const LeaseStore& store, Logger log, bool resume);
    ~Attachment();  // stop(false)
    Attachment(const Attachment&) = delete;
    Attachment& operator=(const Attachment&) = delete;

    // Waits for the first lease (ADD) and returns it as a CNI result, or why there is none;
    // nothing when `hung_up` (asked every 200 ms) says the ADD's client went away first.
    std::optional<Result<CniResult>> wait_bound(const std::function<bool()>& hung_up);
    // After a wait that ended in a hang-up: no other ADD waits for this acquisition still in
    // flight, so it may stop.
    bool unwaited();
    // CHECK: wakes the loop and reports whether a lease is held right now; an acquisition in flight
    // (its ADD's, or a resumed lease's first seconds) is waited for at most 5 s, so a CHECK holds
    // none of the daemon's connections for long.
    Status check();
    void stop(bool release);

    const LeaseRecord& identity() const { return record_; }  // the fields set at construction
    const DhcpConf& conf() const { return conf_; }

private:
    void run();
    Status bind_link(int& ifindex, Mac& mac);
    // The lease ADD waits for: the resumed one, or one acquired now. False, settled with the
    // error, when there is none.
    bool first_lease(Client& client);
    // Renewals, rebinds and new acquisitions until stopped, or until the link is gone.
    void maintain(Client& client, const os::Netns& ns, int ifindex);
    // The link is still the one the lease is for (its namespace and index); if not, the lease
    // is forgotten.
    bool link_still_there(const os::Netns& ns, int ifindex);
    // Renewing `cur` at `now` (from T2: rebinding): when to try next, or nullopt when the server
    // refused and a new lease is wanted.
    std::optional<std::int64_t> renew(Client& client, Lease cur, std::int64_t now);
    // A new lease, asking for `cur`'s address again: when to renew it, or to try again.
    std::int64_t reacquire(Client& client, const Lease& cur);
    void settle(std::optional<Error> failure);
    void persist(const Lease& lease);
    bool sleep_until(std::int64_t wall_seconds);  // false when stopping
    // When to renew `l`: its T1, or for a degenerate lease (lease_times) 2, 4, 8 ... 60 s after
    // now, doubling with each degenerate lease in a row.
    std::int64_t next_renewal(const Lease& l);

    const LeaseRecord record_;
    const std::string shown_key_;  // record_.key as log lines and errors show it (config.hpp: shown)
    const DhcpConf conf_;
    const Timing timing_;
    const LeaseStore& store_;
    Logger log_;
    const bool resume_;
    int degenerate_streak_ = 0;

    std::mutex mu_;
    std::condition_variable cv_;
    std::atomic<bool> stopping_{false};
    bool release_ = false;
    bool wake_ = false;
    bool settled_ = false;
    int waiters_ = 0;  // ADDs in wait_bound
    std::optional<Error> failure_;
    std::optional<Lease> lease_;
    std::thread thread_;
};

}  // namespace cni::dhcp
