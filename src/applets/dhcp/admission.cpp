// SPDX-License-Identifier: Apache-2.0
// The daemon's bounds on ADDs waiting for a lease (see admission.hpp).
#include "applets/dhcp/admission.hpp"

namespace cni::dhcp {

Result<Acquisitions::Ticket> Acquisitions::admit(const std::string& network) {
    std::lock_guard lock(mu_);
    if (total_ >= kMaxAcquisitions)
        return fail(code::try_again_later, std::to_string(kMaxAcquisitions) +
                                               " ADDs are waiting for a lease, the most the daemon serves at once (docs/dhcp.md); "
                                               "try again later");
    auto it = per_network_.try_emplace(network, 0).first;
    if (it->second >= kMaxAcquisitionsPerNetwork)
        return fail(code::try_again_later, std::to_string(kMaxAcquisitionsPerNetwork) + " ADDs of network \"" + network +
                                               "\" are waiting for a lease, the most one network may have at once (docs/dhcp.md); "
                                               "try again later");
    ++it->second;
    ++total_;
    return Ticket(this, network);
}

void Acquisitions::leave(const std::string& network) {
    std::lock_guard lock(mu_);
    --total_;
    if (auto it = per_network_.find(network); it != per_network_.end() && --it->second == 0) per_network_.erase(it);
}

}  // namespace cni::dhcp
