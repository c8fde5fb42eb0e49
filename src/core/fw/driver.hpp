// SPDX-License-Identifier: Apache-2.0
// The node's firewall drivers and the one place an attachment's driver is chosen (docs/design.md,
// principle 10): iptables (libiptc on legacy nodes, iptables-nft's own form in nf_tables on nft
// nodes, iptables.hpp), native nftables (the reference's own tables), and firewalld (the firewall
// applet's zones over D-Bus). ipMasq (bridge, ptp), portmap and the firewall applet each name the
// drivers they have and call choose_driver; none decides on its own.
#pragma once

#include <functional>
#include <initializer_list>
#include <optional>
#include <string_view>

namespace cni::fw {

enum class Driver { iptables, nftables, firewalld };

// "iptables", "nftables" or "firewalld"; anything else is nullopt (each applet refuses or warns
// about an unknown name in the reference's own words).
std::optional<Driver> driver_named(std::string_view name);
std::string_view name_of(Driver driver);

// The driver an ADD or CHECK uses: the configured one; else firewalld when the applet has it and
// `firewalld_running` says so; else iptables while it is usable here (iptables_usable); else
// nftables when the applet has it and nf_tables answers; else iptables, whose own error then
// says what is wrong. That is the reference's choice in each plugin. DEL and GC do not choose:
// they clean every driver an applet has.
Driver choose_driver(std::optional<Driver> configured, std::initializer_list<Driver> applet_has,
                     const std::function<bool()>& firewalld_running = {});

}  // namespace cni::fw
