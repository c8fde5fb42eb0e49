// SPDX-License-Identifier: Apache-2.0
// Ethernet MAC addresses as the reference accepts them (Go net.ParseMAC for 6-byte addresses:
// "aa:bb:cc:dd:ee:ff", "aa-bb-cc-dd-ee-ff" or "aabb.ccdd.eeff"), printed lowercase with colons;
// also as the six bytes that go on the wire.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace cni::net {

std::optional<std::string> parse_mac(std::string_view text);

// A configured MAC, normalised; "" (none configured) stays "". The two error wordings are the
// reference's: bridge and tap say `invalid MAC address "zz"`, macvlan and tuning say
// `invalid args zz for MAC addr: address zz: invalid MAC address`.
enum class MacWording { plain, args };
Result<std::string> configured_mac(std::string_view text, MacWording wording);

// The six bytes of a MAC in any of parse_mac's forms, and back to the printed form.
std::optional<std::array<std::uint8_t, 6>> mac_bytes(std::string_view text);
std::string mac_text(const std::array<std::uint8_t, 6>& mac);

}  // namespace cni::net
