// SPDX-License-Identifier: Apache-2.0
// The applet registry: the table generated from meson.build's one list (docs/design.md, principle
// 2), in the list's order (sorted; a unit test holds it to that). No static self-registration.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "core/applet.hpp"

namespace cni {

// The table itself, constant data: early_version.cpp reads it before the C library starts.
extern const Applet* const kAppletTable[];
extern const std::size_t kAppletCount;

std::span<const Applet* const> all_applets();
const Applet* find_applet(std::string_view name);
std::string_view cni_all_version();
// What cni-all follows: the reference plugins' release whose behaviour it keeps
// (docs/compatibility.md), and the newest CNI spec version it speaks.
inline constexpr std::string_view kReferenceRelease = "containernetworking/plugins v1.9";

}  // namespace cni
