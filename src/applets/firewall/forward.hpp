// SPDX-License-Identifier: Apache-2.0
// What the firewall plugin lets through for an attachment (docs/compatibility.md: firewall), one
// kind of firewall rules in its three drivers through the one firewall interface
// (core/fw/driver.hpp): iptables (forward_iptables.cpp: the reference's CNI-FORWARD accepts of
// each container address, jumped to from FORWARD), native nftables (forward_nft.cpp, beyond the
// reference: the same accepts in a table of the applet's own) and firewalld
// (forward_firewalld.cpp: each address a source of a firewalld zone over D-Bus; firewalld owns
// the rules). Offered together as forward(); the applet chooses among them (forward().choose)
// for ADD and CHECK; DEL tears down where the attachment's record is (forward_recorded), and,
// with no record anywhere, in the chosen driver and every other one that writes the kernel's
// tables; GC collects in all of them.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/fw/driver.hpp"
#include "core/net/attachment.hpp"
#include "core/net/ip.hpp"
#include "core/result.hpp"

namespace cni::firewall {

// What the firewall applet lets through for an attachment, in either of its drivers.
struct ForwardSpec {
    std::vector<net::IpAddr> ips;
    std::string admin_chain;  // iptables, nftables
    std::string zone;         // firewalld
    std::string network;      // iptables, nftables: whose rules the record (handle_record.hpp) and comments name
    net::Attachment attachment;
    std::string record_dir = "/run/cni/cni-all-firewall";  // iptables: where the records are
    std::string bus_address = {};  // firewalld: $DBUS_SYSTEM_BUS_ADDRESS; empty: the system bus's default
    std::function<void(std::string_view)> warn = [](std::string_view) {};  // firewalld: teardown's warnings
};

const fw::Rules<ForwardSpec>& iptables_forward();  // forward_iptables.cpp
const fw::Rules<ForwardSpec>& nftables_forward();  // forward_nft.cpp
// Setup takes back only the sources it added; teardown succeeds when firewalld is gone (its
// runtime sources went with it) and only warns about a source it no longer has, as the reference.
const fw::Rules<ForwardSpec>& firewalld_forward();  // forward_firewalld.cpp

// Whether the driver (iptables or nftables) keeps a record of the attachment's rules
// (handle_record.hpp): an ADD of cni-all made them there.
bool forward_recorded(fw::Driver d, const ForwardSpec& f);

// The FORWARD accepts in every driver, offered once.
inline const fw::Drivers<ForwardSpec>& forward() {
    static const fw::Drivers<ForwardSpec> drivers{{fw::Driver::iptables, &iptables_forward()},
                                                  {fw::Driver::nftables, &nftables_forward()},
                                                  {fw::Driver::firewalld, &firewalld_forward()}};
    return drivers;
}

}  // namespace cni::firewall
