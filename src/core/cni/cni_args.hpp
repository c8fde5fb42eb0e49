// SPDX-License-Identifier: Apache-2.0
// CNI_ARGS ("K=V;K=V") parsed the way Go types.LoadArgs does (docs/compatibility.md: protocol):
// pairs must split into exactly two parts, keys match field names case-sensitively, unknown keys
// are an error unless IgnoreUnknown is 1/true, and the error texts are the reference's. Each applet
// declares its fields; values are parsed by the field's setter.
#pragma once

#include <functional>
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

// Value parsers with the reference's messages.
Result<net::IpAddr> parse_arg_ip(std::string_view value);   // pkg/ip.IP: "ip" or "ip/prefix"

}  // namespace cni
