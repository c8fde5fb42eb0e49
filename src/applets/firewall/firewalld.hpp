// SPDX-License-Identifier: Apache-2.0
// The firewall plugin's firewalld backend (docs/compatibility.md: firewall): each container address
// becomes a source ("<ip>/32", "<ip>/128") of a firewalld zone, through firewalld's D-Bus API
// (org.fedoraproject.FirewallD1.zone addSource/removeSource/querySource) on the system bus.
// firewalld owns the rules; nothing is written to iptables. The automatic backend choice asks
// the bus whether the name org.fedoraproject.FirewallD1 has an owner, as the reference does.
#pragma once

#include <string>
#include <string_view>

#include <functional>
#include <memory>

#include "applets/firewall/dbus/bus.hpp"
#include "applets/firewall/forward.hpp"
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

// The firewall applet's firewalld driver: each address a source of the spec's zone. Setup takes
// back only the sources it added; teardown succeeds when firewalld is gone (its runtime sources
// went with it) and only warns about a source it no longer has, as the reference.
class FirewalldSources final : public fw::Rules<ForwardSpec> {
public:
    FirewalldSources(std::string bus_address, std::function<void(std::string_view)> warn)
        : bus_address_(std::move(bus_address)), warn_(std::move(warn)) {}
    Status setup(const ForwardSpec& f, Rollback& undo) const override;
    Status check(const ForwardSpec& f) const override;
    Status teardown(const ForwardSpec& f) const override;

private:
    std::string bus_address_;
    std::function<void(std::string_view)> warn_;
};

}  // namespace cni::firewall
