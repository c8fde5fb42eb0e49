// SPDX-License-Identifier: Apache-2.0
// The firewall plugin's iptables rules (docs/compatibility.md: firewall), in the filter table:
// FORWARD jumps first to CNI-FORWARD, which jumps first to the admin chain (CNI-ADMIN unless named)
// and then accepts, per container address, replies to it (conntrack RELATED,ESTABLISHED) and
// everything from it. ingressPolicy same-bridge/isolated adds the CNI-ISOLATION-STAGE-1/2 chains
// that drop traffic between different bridges (isolated: also within the bridge). Rules, comments
// and positions are the reference's, so either implementation sees the other's rules as its own;
// one commit per table per call, under the xtables lock.
#pragma once

#include <string>
#include <vector>

#include "core/fw/driver.hpp"
#include "core/net/attachment.hpp"
#include "core/net/ip.hpp"
#include "core/result.hpp"

namespace cni::firewall {

// What the firewall applet lets through for an attachment, in either of its drivers: the
// iptables one here, firewalld's zone sources in firewalld.hpp (chosen in firewall.cpp).
struct ForwardSpec {
    std::vector<net::IpAddr> ips;
    std::string admin_chain;  // iptables
    std::string zone;         // firewalld
    std::string network;      // iptables: whose rules the record names (forward_record.hpp)
    net::Attachment attachment;
    std::string record_dir = "/run/cni/cni-all-firewall";  // iptables: where the records are
};

// The iptables driver's FORWARD accepts (setup_forward, check_forward, teardown_forward).
const fw::Rules<ForwardSpec>& iptables_forward();

// Adds the jumps and the per-address rules. On an iptables-nft node the per-address rules are
// appended without reading CNI-FORWARD (which holds every attachment's) and their handles are
// recorded (forward_record.hpp); an ADD run again finds them by the record.
Status setup_forward(const ForwardSpec& f);
// Removes the per-address rules (the chains stay, shared by every attachment) in both iptables
// variants: by the record's handles where they still hold the attachment's rules, else by
// reading the chain for every rule of these addresses.
Status teardown_forward(const ForwardSpec& f);
// Passes when either iptables variant holds the rules (check_either_variant).
Status check_forward(const std::vector<net::IpAddr>& ips, const std::string& admin_chain);

enum class IngressPolicy { open, same_bridge, isolated };
// The policy as the config spells it ("open", "same-bridge", "isolated").
const char* policy_name(IngressPolicy policy);
// What an ingress policy isolates: `bridge`, in the families of `ips`.
struct IsolationSpec {
    std::string bridge;
    IngressPolicy policy = IngressPolicy::open;
    std::vector<net::IpAddr> ips;
};

// The isolation chains, in iptables whichever driver lets the traffic through (as the
// reference). Setup adds them (nothing for `open`); check passes when either iptables variant
// holds all of them, its error naming the first one missing (beyond the reference, whose CHECK
// does not look at them). They belong to the bridge, shared by all of its attachments: an
// attachment's teardown leaves them, as the reference's DEL does.
const fw::Drivers<IsolationSpec>& isolation();

}  // namespace cni::firewall
