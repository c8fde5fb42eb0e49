// SPDX-License-Identifier: Apache-2.0
// `cni-all vpc-eni node-setup FILE` and `node-teardown [FILE]`: the node's part of the AWS VPC
// CNI's datapath, as its agent sets it up at start-up (docs/vpc-eni.md). Setup is idempotent and
// first records what it changes (rp_filter, MTUs, link states, addresses, the local rule) and the
// node file it goes by in stateDir, which teardown restores, so a node goes back to how it was.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>

#include "applets/vpc_eni/node_file.hpp"
#include "core/applet.hpp"
#include "core/os/file_lock.hpp"
#include "core/result.hpp"

namespace cni::vpc_eni {

// node-setup, each of its --imds rounds and node-teardown hold this lock, <stateDir>/node.lock,
// while they read the record, change the node and write the record: one at a time on a node
// (an operator's run beside the --interval service, say), so none undoes another's half-done work.
// stateDir is opened as a folder of root's (os::Dir::make_trusted, made 0700 when missing).
Result<os::FileLock> lock_node(const std::string& state_dir);
// OK when node-setup has set the node up since boot (its record is in `f`'s stateDir, which a
// reboot empties); else an error of code 11, try again later, naming the missing record. ADD
// asks it: a pod added before the node's rounds would be routed through tables not there yet.
Status node_is_set_up(const NodeFile& f);
// `node-setup FILE`, or with --imds the node learned from the metadata service.
Result<int> node_setup(std::span<const std::string> args, const SubcommandWarn& warn);
// The node file the node is set up by, as `state_dir` keeps it (<stateDir>/node-applied.json,
// root's and 0600, read through the folder opened as root's): nothing when stateDir is missing,
// or holds neither it nor a record; an error naming it when it does not load, or when the record
// is there without it.
Result<std::optional<NodeFile>> kept_node_file(const std::string& state_dir);
// Sets the node up as `file` describes it.
Status setup_node(NodeFile file);
// The same, then the routes of the table the node file the node was set up by (`previous`: the
// one stateDir keeps, else the one at file.path) gave an ENI whose device number or subnet `file`
// changes removed, then `commit` (node-setup --imds: the new node file renamed into place). When
// any fails, what setup changed is undone: on a node no setup had recorded, all of it; else the
// ENIs it set up first go back as they were, the routes of an ENI that `previous` routes
// otherwise are removed, and `previous` is set up again. The error is the step's. On a node set
// up before, `previous` must load, or nothing is done and the error names it: an undo could not
// go back.
Status setup_node_or_undo(NodeFile file, const std::function<Status()>& commit);
// `node-setup --imds ...` (node_imds.cpp).
Result<int> node_setup_from_metadata(std::span<const std::string> args, const SubcommandWarn& warn);
Result<int> node_teardown(std::span<const std::string> args, const SubcommandWarn& warn);

}  // namespace cni::vpc_eni
