// SPDX-License-Identifier: Apache-2.0
// CNI_ARGS ("K=V;K=V") parsed the way Go types.LoadArgs does (docs/compatibility.md: protocol):
// pairs must split into exactly two parts, keys match field names case-sensitively, unknown keys
// are an error unless IgnoreUnknown is 1/true, and the error texts are the reference's. Each applet
// declares its fields; values are parsed by the field's setter.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/net/ip.hpp"
#include "core/result.hpp"
#include "core/strings.hpp"

namespace cni {

struct CniArgField {
    std::string_view name;                              // Go field name, e.g. "IP", "MAC"
    std::function<Status(std::string_view)> set;        // parses and stores the value
};

Status load_cni_args(std::string_view args, std::span<const CniArgField> fields);

// The value of `key` in CNI_ARGS, read leniently, as the reference's dhcp reads fromArg: "K=V"
// pairs split at the first '=', the first pair of that key; nothing when none has it. For what
// the runtime sets beside an applet's own fields (K8S_POD_NAMESPACE), which LoadArgs would refuse.
std::optional<std::string> cni_arg(std::string_view args, std::string_view key);

// Value parsers with the reference's messages.
Result<net::IpAddr> parse_arg_ip(std::string_view value);   // pkg/ip.IP: "ip" or "ip/prefix"

}  // namespace cni
