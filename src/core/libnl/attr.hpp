// SPDX-License-Identifier: Apache-2.0
// Reading a netlink attribute's string safely: nla_get_string trusts the attribute to end in a
// NUL, which an answer parsed without a policy (or a hostile one) need not do; this stops at the
// attribute's end. The libFuzzer target of rule decoding found the over-read (docs/fuzzing.md).
#pragma once

#include <netlink/attr.h>

#include <cstring>
#include <string>

namespace cni::libnl {

inline std::string attr_string(const nlattr* a) {
    const auto* p = static_cast<const char*>(nla_data(a));
    return std::string(p, ::strnlen(p, std::size_t(nla_len(a))));
}

}  // namespace cni::libnl
