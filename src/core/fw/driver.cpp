// SPDX-License-Identifier: Apache-2.0
// Choosing the firewall driver (see driver.hpp).
#include "core/fw/driver.hpp"

#include <algorithm>

#include "core/fw/iptables.hpp"
#include "core/fw/nftables.hpp"

namespace cni::fw {

std::optional<Driver> driver_named(std::string_view name) {
    for (Driver d : {Driver::iptables, Driver::nftables, Driver::firewalld})
        if (name == name_of(d)) return d;
    return std::nullopt;
}

std::string_view name_of(Driver driver) {
    switch (driver) {
        case Driver::iptables: return "iptables";
        case Driver::nftables: return "nftables";
        case Driver::firewalld: return "firewalld";
    }
    return "";
}

Error lacks_rules(Driver driver) {
    return Error{code::internal, "the " + std::string(name_of(driver)) + " firewall driver does not have these rules", {}};
}

Driver choose_driver(std::optional<Driver> configured, const std::vector<Driver>& applet_has,
                     const std::function<bool()>& firewalld_running) {
    if (configured) return *configured;
    auto has = [&](Driver d) { return std::find(applet_has.begin(), applet_has.end(), d) != applet_has.end(); };
    if (has(Driver::firewalld) && firewalld_running && firewalld_running()) return Driver::firewalld;
    if (iptables_usable()) return Driver::iptables;
    if (has(Driver::nftables) && fw::nft::available()) return Driver::nftables;
    return Driver::iptables;
}

Status driver_status(Driver driver) {
    if (driver == Driver::iptables && !iptables_usable())
        return fail(code::plugin_not_available, "no usable firewall backend: iptables cannot work here (neither nf_tables nor the legacy nat table answers)");
    if (driver == Driver::nftables && !nft::available())
        return fail(code::plugin_not_available, "no usable firewall backend: nf_tables does not answer here");
    return {};
}

}  // namespace cni::fw
