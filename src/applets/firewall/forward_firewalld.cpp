// SPDX-License-Identifier: Apache-2.0
// The firewall plugin's FORWARD accepts through firewalld (see forward.hpp): each container
// address a source of the spec's zone, over firewalld's D-Bus API (firewalld.hpp); nothing is
// written to iptables.
#include <memory>

#include "applets/firewall/firewalld.hpp"
#include "applets/firewall/forward.hpp"

namespace cni::firewall {
namespace {

class FirewalldSources final : public fw::Rules<ForwardSpec> {
public:
    Status setup(const ForwardSpec& f, Rollback& undo) const override;
    Status check(const ForwardSpec& f) const override;
    Status teardown(const ForwardSpec& f) const override;
};

Status FirewalldSources::setup(const ForwardSpec& f, Rollback& undo) const {
    CNI_TRY_ASSIGN(auto fwd, Firewalld::connect(f.bus_address));
    auto shared = std::make_shared<Firewalld>(std::move(fwd));
    for (auto& ip : f.ips) {
        CNI_TRY_ASSIGN(bool added, shared->add_source(f.zone, ip));
        if (added) undo.push([shared, zone = f.zone, ip] { (void)shared->remove_source(zone, ip); });
    }
    return {};
}

Status FirewalldSources::check(const ForwardSpec& f) const {
    CNI_TRY_ASSIGN(auto fwd, Firewalld::connect(f.bus_address));
    for (auto& ip : f.ips) {
        CNI_TRY_ASSIGN(bool has, fwd.has_source(f.zone, ip));
        if (!has) return fail("firewalld zone " + f.zone + " does not have the source " + ip.str());
    }
    return {};
}

Status FirewalldSources::teardown(const ForwardSpec& f) const {
    auto fwd = Firewalld::connect(f.bus_address);
    if (!fwd) {
        f.warn("firewall: " + fwd.error().msg + "; nothing to remove");
        return {};
    }
    for (auto& ip : f.ips)
        if (auto st = fwd->remove_source(f.zone, ip); !st) f.warn("firewall: " + st.error().msg);
    return {};
}

}  // namespace

const fw::Rules<ForwardSpec>& firewalld_forward() {
    static const FirewalldSources rules;
    return rules;
}

}  // namespace cni::firewall
