// SPDX-License-Identifier: Apache-2.0
// sysctl access through /proc/sys of the calling thread's namespaces. Names may be written
// dotted ("net.ipv4.ip_forward") or with slashes; a dotted name is converted only when a '.'
// comes before the first '/', as the reference does (so "net/ipv4/conf/eth0.100/..." works).
#pragma once

#include <string>
#include <string_view>

#include "core/result.hpp"

namespace cni::os {

std::string sysctl_path(std::string_view name);
Result<std::string> sysctl_get(std::string_view name);  // trailing newline removed
Status sysctl_set(std::string_view name, std::string_view value);

}  // namespace cni::os
