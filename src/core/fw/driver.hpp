// SPDX-License-Identifier: Apache-2.0
// The node's firewall drivers, the one interface every kind of rules is written through, and the
// one place an attachment's driver is chosen (docs/design.md, principle 10). The drivers:
// iptables (libiptc on legacy nodes, iptables-nft's own form in nf_tables on nft nodes,
// iptables.hpp), native nftables (nftables.hpp, the reference's own tables) and firewalld (the
// firewall applet's zones over D-Bus). A kind of rules (ipMasq, portmap's host ports, the firewall
// applet's FORWARD accepts and bridge isolation, bridge's MAC spoof guard, vpc-eni's SNAT)
// implements Rules<Spec> once per driver it has, one file per driver, and offers them as a
// Drivers<Spec>; the applet then chooses, sets up, checks, tears down and collects through that,
// never through a driver's own functions.
#pragma once

#include <functional>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <vector>

#include "core/net/attachment.hpp"
#include "core/result.hpp"
#include "core/rollback.hpp"

namespace cni::fw {

enum class Driver { iptables, nftables, firewalld };

// "iptables", "nftables" or "firewalld"; anything else is nullopt (each applet refuses or warns
// about an unknown name in the reference's own words).
std::optional<Driver> driver_named(std::string_view name);
std::string_view name_of(Driver driver);

// The driver an ADD or CHECK uses: the configured one; else firewalld when the applet has it and
// `firewalld_running` says so; else iptables while it is usable here (iptables_usable); else
// nftables when the applet has it and nf_tables answers; else iptables, whose own error then
// says what is wrong. That is the reference's choice in each plugin. The DEL and GC of ipMasq
// and portmap do not choose: they clean every driver (Drivers::teardown_all, gc_all); the
// firewall applet's DEL cleans the chosen driver and both kernel drivers (iptables, nftables).
Driver choose_driver(std::optional<Driver> configured, const std::vector<Driver>& applet_has,
                     const std::function<bool()>& firewalld_running = {});

// STATUS of an applet whose rules go through `driver` (CNI spec, STATUS): code 50 with the reason
// when that driver cannot work in this namespace (firewalld is its applet's own question).
Status driver_status(Driver driver);

// "the <driver> firewall driver does not have these rules": a verb asked of a driver the kind of
// rules has none in.
Error lacks_rules(Driver driver);

// One kind of rules as one driver writes them for an attachment described by Spec.
template <class Spec>
class Rules {
public:
    virtual ~Rules() = default;
    // Sets up the attachment's rules, pushing onto `undo` what takes back what this call did.
    virtual Status setup(const Spec& spec, Rollback& undo) const = 0;
    // Passes when the rules are in place; the error names the first one missing.
    virtual Status check(const Spec& spec) const = 0;
    // Removes the attachment's rules; nothing there is fine.
    virtual Status teardown(const Spec& spec) const = 0;
    // Removes the rules of `network`'s attachments that are not in `keep`. A driver whose rules
    // do not say their network cannot tell whose they are, and keeps them (the default).
    virtual Status gc(std::string_view network, const std::vector<net::Attachment>& keep) const {
        (void)network;
        (void)keep;
        return {};
    }
};

// A kind of rules in each driver an applet has for it, and the verbs through the chosen one.
template <class Spec>
class Drivers {
public:
    struct Entry {
        Driver driver;
        const Rules<Spec>* rules;
    };
    Drivers(std::initializer_list<Entry> entries) : entries_(entries) {
        for (auto& e : entries_) drivers_.push_back(e.driver);
    }

    // choose_driver among these drivers.
    Driver choose(std::optional<Driver> configured, const std::function<bool()>& firewalld_running = {}) const {
        return choose_driver(configured, drivers_, firewalld_running);
    }
    Status setup(Driver d, const Spec& spec, Rollback& undo) const {
        CNI_TRY_ASSIGN(auto rules, in(d));
        return rules->setup(spec, undo);
    }
    Status check(Driver d, const Spec& spec) const {
        CNI_TRY_ASSIGN(auto rules, in(d));
        return rules->check(spec);
    }
    Status teardown(Driver d, const Spec& spec) const {
        CNI_TRY_ASSIGN(auto rules, in(d));
        return rules->teardown(spec);
    }
    // Every driver's rules of the attachment, as the reference's DEL (a node may have switched
    // drivers since the ADD): all are tried; the first error is returned.
    Status teardown_all(const Spec& spec) const {
        Status first;
        for (auto& e : entries_)
            if (auto st = e.rules->teardown(spec); !st && first) first = std::move(st);
        return first;
    }
    // Every driver's gc, the same way.
    Status gc_all(std::string_view network, const std::vector<net::Attachment>& keep) const {
        Status first;
        for (auto& e : entries_)
            if (auto st = e.rules->gc(network, keep); !st && first) first = std::move(st);
        return first;
    }

private:
    Result<const Rules<Spec>*> in(Driver d) const {
        for (auto& e : entries_)
            if (e.driver == d) return e.rules;
        return cni::Unexpected(lacks_rules(d));
    }
    std::vector<Entry> entries_;
    std::vector<Driver> drivers_;
};

}  // namespace cni::fw
