// SPDX-License-Identifier: Apache-2.0
// SHA-1 (FIPS 180-4), only for naming: the host veth of a vpc-eni pod is named after the SHA-1 of
// "<namespace>.<pod>", as the AWS VPC CNI names it, so a node can switch implementations and find
// the same links.
#pragma once

#include <string>
#include <string_view>

namespace cni::vpc_eni {

std::string sha1_hex(std::string_view data);  // lowercase hex, 40 characters

}  // namespace cni::vpc_eni
