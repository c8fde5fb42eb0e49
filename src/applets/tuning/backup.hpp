// SPDX-License-Identifier: Apache-2.0
// tuning's backup file, <dataDir>/<containerID>_<ifname>.json (docs/compatibility.md: tuning):
// the original values ADD changed, in the reference's layout (Go's json.MarshalIndent of its
// configToRestore) plus our sysctl and network fields. Anyone able to write the data directory
// can write such a file, so decode_backup is a parser of untrusted input (tests/fuzz/tuning_backup).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "core/result.hpp"

namespace cni::tuning {

// The original values, as the reference's configToRestore plus our two additions.
struct Backup {
    std::string mac;
    std::optional<bool> promisc;
    std::int64_t mtu = 0;
    std::optional<bool> allmulti;
    std::optional<std::int64_t> txqlen;
    std::map<std::string, std::string> sysctl;  // /proc/sys path -> original value
    std::string network;
    bool operator==(const Backup&) const = default;
};

std::string encode_backup(const Backup& b);
Result<Backup> decode_backup(const std::string& text);

}  // namespace cni::tuning
