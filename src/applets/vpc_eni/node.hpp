// SPDX-License-Identifier: Apache-2.0
// `cni-all vpc-eni node-setup FILE` and `node-teardown FILE`: the node's part of the AWS VPC
// CNI's datapath, as its agent sets it up at start-up (docs/vpc-eni.md). Setup is idempotent and
// first records what it changes (rp_filter, MTUs, link states, addresses, the local rule) in
// stateDir, which teardown restores, so a node goes back to how it was.
#pragma once

#include <span>
#include <string>

#include "core/result.hpp"

namespace cni::vpc_eni {

Result<int> node_setup(std::span<const std::string> args);
Result<int> node_teardown(std::span<const std::string> args);

}  // namespace cni::vpc_eni
