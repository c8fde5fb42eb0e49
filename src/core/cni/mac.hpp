// SPDX-License-Identifier: Apache-2.0
// Ethernet MAC addresses as the reference accepts them (Go net.ParseMAC for 6-byte addresses:
// "aa:bb:cc:dd:ee:ff", "aa-bb-cc-dd-ee-ff" or "aabb.ccdd.eeff"), printed lowercase with colons.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace cni {

std::optional<std::string> parse_mac(std::string_view text);

}  // namespace cni
