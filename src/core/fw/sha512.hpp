// SPDX-License-Identifier: Apache-2.0
// SHA-512 (FIPS 180-4), the hash inside every reference chain and device name (2.0).
#pragma once

#include <string>
#include <string_view>

namespace cni::fw {

std::string sha512_hex(std::string_view data);  // lowercase hex, 128 characters

}  // namespace cni::fw
