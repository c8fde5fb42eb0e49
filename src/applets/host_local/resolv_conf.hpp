// SPDX-License-Identifier: Apache-2.0
// A resolv.conf parsed into a CNI DNS block, as host-local's resolvConf key does: nameserver,
// domain, search and options lines; '#' and ';' comments; short lines ignored.
#pragma once

#include <string>

#include "core/cni/cni_result.hpp"

namespace cni::host_local {

Result<Dns> parse_resolv_conf(const std::string& path);
Dns parse_resolv_conf_text(std::string_view text);

}  // namespace cni::host_local
