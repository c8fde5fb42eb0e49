// SPDX-License-Identifier: Apache-2.0
// What the firewall applet's iptables drivers (forward_iptables.cpp, isolation_iptables.cpp)
// share of the filter table: FORWARD, a rule by its target and comment, a chain made when
// missing, and the table of each family that has addresses, written under the xtables lock in
// the node's variant or checked in either variant (docs/compatibility.md: firewall).
#pragma once

#include <string>
#include <vector>

#include "core/fw/iptables.hpp"
#include "core/fw/xtables_nft.hpp"
#include "core/net/ip.hpp"
#include "core/os/file_lock.hpp"
#include "core/result.hpp"

namespace cni::firewall {

inline constexpr const char* kForward = "FORWARD";

inline fw::IptRule to(std::string target, std::string comment = "") {
    fw::IptRule r;
    r.target = std::move(target);
    r.comment = std::move(comment);
    return r;
}

inline std::vector<net::IpAddr> of_family(const std::vector<net::IpAddr>& ips, fw::Family f) {
    std::vector<net::IpAddr> mine;
    for (auto& ip : ips)
        if (ip.is_v4() == (f == fw::Family::v4)) mine.push_back(ip);
    return mine;
}

inline Status ensure_chain(fw::IptTable& t, const std::string& chain) {
    return t.has_chain(chain) ? Status{} : t.create_chain(chain);
}

// Runs `fn(table, addresses)` on the filter table of the node's variant of each family that has
// addresses, and commits it (IptTable::update).
template <class Fn>
Status per_family(const std::vector<net::IpAddr>& ips, Fn&& fn) {
    CNI_TRY_ASSIGN(auto lock, os::FileLock::acquire(fw::kXtablesLock));
    for (fw::Family f : {fw::Family::v4, fw::Family::v6}) {
        auto mine = of_family(ips, f);
        if (mine.empty()) continue;
        CNI_TRY(fw::IptTable::update(f, "filter", [&](fw::IptTable& filter) { return fn(filter, mine); }));
    }
    return {};
}

// Runs `check(table, addresses)` on the filter table of each family that has addresses, in each
// variant; passes when one variant passes for every family (check_either_variant).
template <class Fn>
Status check_per_family(const std::vector<net::IpAddr>& ips, Fn&& check) {
    CNI_TRY_ASSIGN(auto lock, os::FileLock::acquire(fw::kXtablesLock));
    return fw::check_either_variant([&](fw::Variant v) -> Status {
        for (fw::Family f : {fw::Family::v4, fw::Family::v6}) {
            auto mine = of_family(ips, f);
            if (mine.empty()) continue;
            CNI_TRY_ASSIGN(auto t, fw::IptTable::open(f, "filter", v));
            CNI_TRY(check(t, mine));
        }
        return {};
    });
}

}  // namespace cni::firewall
