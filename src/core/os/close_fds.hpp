// SPDX-License-Identifier: Apache-2.0
// Letting go of every inherited descriptor but a few, in a forked child that outlives its parent
// (the late close of netfilter sockets, detached link deletions): the runtime's stdout pipe and
// the plugin's locks must not stay open in it, or the runtime would wait for the child and other
// plugin calls for the lock.
#pragma once

#include <vector>

namespace cni::os {

// Closes every descriptor of the process but those in `keep` (close_range between them).
void close_all_except(std::vector<int> keep);

}  // namespace cni::os
