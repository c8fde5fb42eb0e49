// SPDX-License-Identifier: Apache-2.0
// The firewall applet's bridge isolation (docs/compatibility.md: firewall), one kind of firewall
// rules through the one firewall interface (core/fw/driver.hpp), in two drivers: iptables
// (isolation_iptables.cpp) unless the attachment's traffic goes through nftables (then
// isolation_nft.cpp, the same chains in the applet's own table): ingressPolicy same-bridge/isolated adds the filter chains CNI-ISOLATION-STAGE-1/2
// that drop traffic between different bridges (isolated: also within the bridge), jumped to first
// from FORWARD. Setup adds them (nothing for `open`); check passes when either iptables variant
// holds all of them, its error naming the first one missing (beyond the reference, whose CHECK
// does not look at them). They belong to the bridge, shared by all of its attachments: an
// attachment's teardown leaves them, as the reference's DEL does.
#pragma once

#include <string>
#include <vector>

#include "core/fw/driver.hpp"
#include "core/net/ip.hpp"

namespace cni::firewall {

enum class IngressPolicy { open, same_bridge, isolated };
// The policy as the config spells it ("open", "same-bridge", "isolated").
inline const char* policy_name(IngressPolicy policy) {
    switch (policy) {
        case IngressPolicy::open: return "open";
        case IngressPolicy::same_bridge: return "same-bridge";
        case IngressPolicy::isolated: return "isolated";
    }
    return "open";
}

// What an ingress policy isolates: `bridge`, in the families of `ips`.
struct IsolationSpec {
    std::string bridge;
    IngressPolicy policy = IngressPolicy::open;
    std::vector<net::IpAddr> ips;
};

const fw::Rules<IsolationSpec>& iptables_isolation();  // isolation_iptables.cpp
const fw::Rules<IsolationSpec>& nftables_isolation();  // isolation_nft.cpp

// The isolation rules in their drivers, offered once.
inline const fw::Drivers<IsolationSpec>& isolation() {
    static const fw::Drivers<IsolationSpec> drivers{{fw::Driver::iptables, &iptables_isolation()},
                                                    {fw::Driver::nftables, &nftables_isolation()}};
    return drivers;
}

}  // namespace cni::firewall
