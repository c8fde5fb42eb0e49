// SPDX-License-Identifier: Apache-2.0
// CNI spec versions (docs/compatibility.md: protocol): the version string parser and comparison of
// pkg/version (1-3 dot parts, Go strconv.Atoi per part, its exact error texts), the supported
// version lists, and the VERSION command's output.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace cni {

// Every version this implementation knows, oldest first; also version.All of the reference.
inline constexpr std::string_view kAllVersions[] = {"0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"};
inline constexpr std::string_view kCurrentVersion = "1.1.0";
using VersionList = std::span<const std::string_view>;

struct SpecVersion {
    int major = 0, minor = 0, micro = 0;
    auto operator<=>(const SpecVersion&) const = default;
};

// Go version.ParseVersion, code 6 errors.
Result<SpecVersion> parse_version(std::string_view v);
// Go version.GreaterThanOrEqualTo(a, b).
Result<bool> version_at_least(std::string_view a, std::string_view b);
bool version_supported(VersionList list, std::string_view v);

// The VERSION output: {"cniVersion":"1.1.0","supportedVersions":[...]} and a newline.
std::string version_info_json(VersionList supported);

}  // namespace cni
