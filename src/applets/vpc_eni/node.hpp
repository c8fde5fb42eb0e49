// SPDX-License-Identifier: Apache-2.0
// `cni-all vpc-eni node-setup FILE` and `node-teardown FILE`: the node's part of the AWS VPC
// CNI's datapath, as its agent sets it up at start-up (docs/vpc-eni.md). Setup is idempotent and
// first records what it changes (rp_filter, MTUs, link states, addresses, the local rule) in
// stateDir, which teardown restores, so a node goes back to how it was.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "applets/vpc_eni/node_file.hpp"
#include "core/os/file_lock.hpp"
#include "core/result.hpp"

namespace cni::vpc_eni {

// node-setup, each of its --imds rounds and node-teardown hold this lock, <stateDir>/node.lock,
// while they read the record, change the node and write the record: one at a time on a node
// (an operator's run beside the --interval service, say), so none undoes another's half-done work.
Result<os::FileLock> lock_node(const std::string& state_dir);
// `node-setup FILE`, or with --imds the node learned from the metadata service.
Result<int> node_setup(std::span<const std::string> args);
// Sets the node up as `file` describes it.
Status setup_node(NodeFile file);
// The same; when it fails partway, what it changed is undone: on a node no setup had recorded,
// all of it; else the ENIs it set up first go back as they were and `previous` (the node file the
// node was set up by, when there is one) is set up again. The error is setup's.
Status setup_node_or_undo(NodeFile file, const std::optional<NodeFile>& previous);
// `node-setup --imds ...` (node_imds.cpp).
Result<int> node_setup_from_metadata(std::span<const std::string> args);
Result<int> node_teardown(std::span<const std::string> args);

}  // namespace cni::vpc_eni
