// SPDX-License-Identifier: Apache-2.0
// One attachment's DHCP lease, kept alive by its own thread. The thread enters the container's
// network namespace once (the netns guard's rule for threaded code: only a dedicated thread
// switches) and stays there: it sets the link up, acquires a lease (or resumes a persisted one),
// then sleeps until T1 and renews (unicast), rebinds from T2 (broadcast), and acquires again if the
// lease expired or the server refused it (a refusal waits 2, 4 ... 60 s first, growing with
// refusals in a row; an acquisition that fails is tried again, again as an acquisition, a minute
// after it ended; client.hpp backs off within one). Every ACK is persisted. The thread looks at the
// clock at least every minute, and a clock set back moves the lease's times back with it
// (retry.hpp: clock_set_back); a resumed record dated ahead of the clock is renewed at once. A
// resumed lease whose client cannot start (its socket's bind refused, say) is kept and the start
// tried again on the renewal schedule, and once more to release it. The link disappearing (the
// container went away without a DEL) ends the thread and drops the record. stop(release) ends it,
// sending a DHCPRELEASE first when asked (DEL, GC) and keeping the record otherwise (daemon
// shutdown, so a restarted daemon resumes). A lease that moved to another address than the pod's,
// one the server ended and one past its expiry fail CHECK. DHCPv4 (client.hpp) and DHCPv6
// (client6.hpp) leases run the same loop, one thread each; a dual-stack attachment is both, its
// ADD's result holding both addresses (and the DHCPv6 DNS servers).
#pragma once

#include <memory>

#include "applets/dhcp/client.hpp"
#include "applets/dhcp/config.hpp"
#include "applets/dhcp/lease_store.hpp"
#include "core/cni/cni_result.hpp"

namespace cni::dhcp {

using Logger = std::function<void(const std::string&)>;

class Attachment {
public:
    virtual ~Attachment() = default;
    // Waits for the first lease (ADD) and returns it as a CNI result, or why there is none;
    // nothing when `hung_up` (asked every 200 ms) says the ADD's client went away first.
    virtual std::optional<Result<CniResult>> wait_bound(const std::function<bool()>& hung_up) = 0;
    // After a wait that ended in a hang-up: no other ADD waits for this acquisition still in
    // flight, so it may stop.
    virtual bool unwaited() = 0;
    // CHECK: wakes the loop and reports whether a lease is held right now for the address the pod
    // got; one the server ended (refused a renewal of) and that no acquisition has granted again,
    // or one past its expiry, fails it, naming why. An acquisition in flight (its ADD's, or a
    // resumed lease's first seconds) is waited for at most 5 s, so a CHECK holds none of the
    // daemon's connections for long.
    virtual Status check() = 0;
    virtual void stop(bool release) = 0;
    virtual const LeaseRecord& identity() const = 0;  // the fields set at construction
    virtual const DhcpConf& conf() const = 0;
};

// The leases `conf.protocol` asks for, each resuming the record given (loaded at daemon start; a
// family without one acquires anew) or acquiring its first. Throws std::system_error when a
// thread cannot start.
std::shared_ptr<Attachment> start_attachment(const LeaseRecord& identity, const DhcpConf& conf, Timing timing,
                                             const LeaseStore& store, Logger log, const std::optional<LeaseRecord>& v4,
                                             const std::optional<LeaseRecord>& v6);

}  // namespace cni::dhcp
