// SPDX-License-Identifier: Apache-2.0
// firewalld's zone sources over D-Bus (see firewalld.hpp).
#include "applets/firewall/firewalld.hpp"

namespace cni::firewall {
namespace {

constexpr const char* kName = "org.fedoraproject.FirewallD1";
constexpr const char* kPath = "/org/fedoraproject/FirewallD1";
constexpr const char* kZoneInterface = "org.fedoraproject.FirewallD1.zone";

std::string source_of(const net::IpAddr& ip) { return ip.str() + (ip.is_v4() ? "/32" : "/128"); }

}  // namespace

bool firewalld_running(std::string_view bus_address) {
    auto bus = dbus::Bus::connect(bus_address, std::chrono::seconds(5));
    if (!bus) return false;
    return bus->call({"org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner", {kName}})
        .has_value();
}

Result<Firewalld> Firewalld::connect(std::string_view bus_address) {
    auto bus = dbus::Bus::connect(bus_address);
    if (!bus) return fail("firewalld backend: " + bus.error().msg);
    return Firewalld(std::move(*bus));
}

Result<std::vector<dbus::Value>> Firewalld::zone_call(const char* method, const std::string& zone, const net::IpAddr& ip) {
    return bus_.call({kName, kPath, kZoneInterface, method, {zone, source_of(ip)}});
}

Result<bool> Firewalld::add_source(const std::string& zone, const net::IpAddr& ip) {
    auto r = zone_call("addSource", zone, ip);
    if (r) return true;
    if (r.error().msg.find("ZONE_ALREADY_SET") != std::string::npos) return false;
    return fail("failed to add the address " + source_of(ip) + " to " + zone + " zone: " + r.error().msg);
}

Status Firewalld::remove_source(const std::string& zone, const net::IpAddr& ip) {
    auto r = zone_call("removeSource", zone, ip);
    if (!r) return fail("failed to remove the address " + source_of(ip) + " from " + zone + " zone: " + r.error().msg);
    return {};
}

Result<bool> Firewalld::has_source(const std::string& zone, const net::IpAddr& ip) {
    auto r = zone_call("querySource", zone, ip);
    if (!r) return fail("failed to find the address " + source_of(ip) + " in " + zone + " zone: " + r.error().msg);
    const bool* yes = r->empty() ? nullptr : std::get_if<bool>(&(*r)[0]);
    if (!yes) return fail("firewalld answered querySource for " + source_of(ip) + " without a boolean");
    return *yes;
}

}  // namespace cni::firewall
