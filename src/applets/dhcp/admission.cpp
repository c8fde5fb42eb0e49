// SPDX-License-Identifier: Apache-2.0
// The daemon's bounds on ADDs waiting for a lease (see admission.hpp).
#include "applets/dhcp/admission.hpp"

#include "applets/dhcp/config.hpp"
#include "core/cni/cni_args.hpp"

namespace cni::dhcp {

Tenant tenant_of(std::string_view network, std::string_view cni_args) {
    if (auto ns = cni_arg(cni_args, "K8S_POD_NAMESPACE"); ns && !ns->empty()) return Tenant{true, std::move(*ns)};
    return Tenant{false, std::string(network)};
}

namespace {

std::string tenant_full(const Tenant& t) {
    return std::to_string(kMaxAcquisitionsPerTenant) + " ADDs of " + (t.pod_namespace ? "pod namespace " : "network ") +
           go_quote(shown(t.name)) + " are waiting for a lease, the most one " + (t.pod_namespace ? "namespace" : "network") +
           " may have at once (docs/dhcp.md); try again later";
}

}  // namespace

Result<Acquisitions::Ticket> Acquisitions::admit(const Tenant& tenant) {
    std::lock_guard lock(mu_);
    if (total_ >= kMaxAcquisitions)
        return fail(code::try_again_later, std::to_string(kMaxAcquisitions) +
                                               " ADDs are waiting for a lease, the most the daemon serves at once (docs/dhcp.md); "
                                               "try again later");
    auto held = per_tenant_.find(tenant);
    if (held != per_tenant_.end() && held->second >= kMaxAcquisitionsPerTenant) return fail(code::try_again_later, tenant_full(tenant));
    if (held != per_tenant_.end() && total_ >= kFairShareFrom)
        return fail(code::try_again_later, std::to_string(total_) + " ADDs are waiting for a lease; past " +
                                               std::to_string(kFairShareFrom) + " the daemon admits only a " +
                                               (tenant.pod_namespace ? "namespace" : "network") + " with none waiting, and " +
                                               (tenant.pod_namespace ? "pod namespace " : "network ") + go_quote(shown(tenant.name)) +
                                               " has " + std::to_string(held->second) + " (docs/dhcp.md); try again later");
    ++per_tenant_[tenant];
    ++total_;
    return Ticket(this, tenant);
}

void Acquisitions::leave(const Tenant& tenant) {
    std::lock_guard lock(mu_);
    --total_;
    if (auto it = per_tenant_.find(tenant); it != per_tenant_.end() && --it->second == 0) per_tenant_.erase(it);
}

}  // namespace cni::dhcp
