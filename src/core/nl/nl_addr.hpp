// SPDX-License-Identifier: Apache-2.0
// Conversions between our IpNet/IpAddr (and MAC text) and libnl's struct nl_addr.
#pragma once

#include <optional>
#include <string>

#include "core/libnl/ptr.hpp"
#include "core/net/ip.hpp"
#include "core/result.hpp"

namespace cni::nl {

Result<libnl::NlAddrPtr> to_nl_addr(const net::IpNet& net);
Result<libnl::NlAddrPtr> to_nl_addr(const net::IpAddr& ip);  // a host address (/32 or /128)
std::optional<net::IpNet> from_nl_addr(nl_addr* a);    // nullopt for non-IP or empty addresses
std::string mac_text(nl_addr* a);                 // "aa:bb:cc:dd:ee:ff"; "" for none
Result<libnl::NlAddrPtr> mac_to_nl_addr(const std::string& mac);

}  // namespace cni::nl
