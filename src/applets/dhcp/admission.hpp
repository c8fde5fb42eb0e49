// SPDX-License-Identifier: Apache-2.0
// How many requests the dhcp daemon serves at once (docs/dhcp.md: Limits). At most
// kMaxConnections connections; of them at most kMaxAcquisitions ADDs waiting for a lease (one
// against a silent or absent server waits up to -resendtimeout, 208 s by default), and at most
// kMaxAcquisitionsPerTenant of one tenant's: its pod namespace (K8S_POD_NAMESPACE in CNI_ARGS,
// which the runtime sets), or without one its network (the name, which whoever writes the config
// chooses, so keying on it alone would let one tenant take every place with many names, or fill a
// victim's by reusing its name). Once kFairShareFrom ADDs wait, only a tenant with none waiting
// gets a place, so a few tenants at their bound (6 of 8 fill 48) cannot shut every other out. An
// ADD past a bound is answered at once with code 11 (try again later), so a network whose server
// is down, or many networks, leave kReservedConnections to DEL, CHECK, GC and STATUS, and room to
// other tenants' ADDs. The bounds are fixed: nothing a network config says moves them.
#pragma once

#include <compare>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "core/result.hpp"

namespace cni::dhcp {

inline constexpr int kMaxConnections = 64;
inline constexpr int kReservedConnections = 16;
inline constexpr int kMaxAcquisitions = kMaxConnections - kReservedConnections;
inline constexpr int kMaxAcquisitionsPerTenant = 8;
inline constexpr int kFairShareFrom = kMaxAcquisitions - kMaxAcquisitionsPerTenant;  // the last places: one per tenant

// Whose ADDs share one tenant's bound.
struct Tenant {
    bool pod_namespace = false;  // `name` is a pod namespace, else a network's name
    std::string name;
    auto operator<=>(const Tenant&) const = default;
};
// The ADD's pod namespace in `cni_args`, or else `network`.
Tenant tenant_of(std::string_view network, std::string_view cni_args);

class Acquisitions {
public:
    // One ADD's place, given back when the ticket goes.
    class Ticket {
    public:
        Ticket(Ticket&& o) noexcept : owner_(std::exchange(o.owner_, nullptr)), tenant_(std::move(o.tenant_)) {}
        Ticket& operator=(Ticket&&) = delete;
        ~Ticket() {
            if (owner_) owner_->leave(tenant_);
        }

    private:
        friend class Acquisitions;
        Ticket(Acquisitions* owner, Tenant tenant) : owner_(owner), tenant_(std::move(tenant)) {}
        Acquisitions* owner_;
        Tenant tenant_;
    };

    // A place for an ADD of `tenant`, or code 11 saying which bound it met ("8 ADDs of pod
    // namespace ...", its name cut as config.hpp's shown() cuts it).
    Result<Ticket> admit(const Tenant& tenant);

private:
    void leave(const Tenant& tenant);

    std::mutex mu_;
    int total_ = 0;
    std::map<Tenant, int> per_tenant_;  // only tenants with a place held
};

}  // namespace cni::dhcp
