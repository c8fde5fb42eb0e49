// SPDX-License-Identifier: Apache-2.0
// firewalld's D-Bus API as the firewall plugin's firewalld driver (forward_firewalld.cpp) uses it
// (docs/compatibility.md: firewall): a container address as a source ("<ip>/32", "<ip>/128") of
// a zone (org.fedoraproject.FirewallD1.zone addSource/removeSource/querySource) on the system
// bus. The automatic backend choice asks the bus whether the name org.fedoraproject.FirewallD1
// has an owner, as the reference does.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "applets/firewall/dbus/bus.hpp"
#include "core/net/ip.hpp"
#include "core/result.hpp"

namespace cni::firewall {

// Whether firewalld is on the bus at `bus_address` (empty: the system bus's default address).
bool firewalld_running(std::string_view bus_address);

class Firewalld {
public:
    static Result<Firewalld> connect(std::string_view bus_address);

    // Whether the source was added; one already in this zone is not an error (firewalld's
    // ZONE_ALREADY_SET), just not ours to take back.
    Result<bool> add_source(const std::string& zone, const net::IpAddr& ip);
    Status remove_source(const std::string& zone, const net::IpAddr& ip);
    Result<bool> has_source(const std::string& zone, const net::IpAddr& ip);

private:
    explicit Firewalld(dbus::Bus bus) : bus_(std::move(bus)) {}
    Result<std::vector<dbus::Value>> zone_call(const char* method, const std::string& zone, const net::IpAddr& ip);
    dbus::Bus bus_;
};

}  // namespace cni::firewall
