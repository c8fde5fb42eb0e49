// SPDX-License-Identifier: Apache-2.0
// Links (rtnetlink RTM_*LINK) as plain values. "Not found" is part of the signature
// (design principle 5): find_link returns nullopt for a missing link, so DEL paths need no
// errno matching.
#pragma once

#include <optional>
#include <string>

#include "core/nl/socket.hpp"

namespace cni::nl {

struct LinkInfo {
    int index = 0;
    std::string name;
    unsigned flags = 0;  // IFF_*
    int mtu = 0;
    std::string mac;     // lowercase, colon separated
    bool up() const;
};

Result<std::optional<LinkInfo>> find_link(const Socket& s, const std::string& name);
Status set_link_up(const Socket& s, const LinkInfo& link, bool up);

}  // namespace cni::nl
