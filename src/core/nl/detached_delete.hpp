// SPDX-License-Identifier: Apache-2.0
// Link deletions whose kernel wait is left to a child process. The kernel takes a deleted link
// out of its namespace at once: its name is free, its addresses and routes are gone and
// RTM_DELLINK is announced. The request's answer comes only after the kernel has also waited for
// an RCU barrier and the device's last references (15 to 30 ms per veth here), which is most of a
// DEL (docs/compatibility.md, "Link deletions and the kernel's wait"). While the dispatcher holds
// a DetachedLinkDeletes scope, delete_link sends the request from a forked child, on a socket of
// the link's namespace, and returns once that namespace announces the removal and a request that
// queues behind the deletion (RTNL) no longer finds the link. The child waits for the answer,
// reports it on a pipe that the plugin reads only if the announcement never came, and exits. The
// child holds no descriptor but its socket and that pipe. Without the scope (unit tests, the dhcp
// daemon), or when any step of this cannot be set up, the plugin deletes the link itself.
#pragma once

#include <optional>
#include <string>

#include "core/nl/socket.hpp"

namespace cni::nl {

// The dispatcher's scope for one plugin call.
class DetachedLinkDeletes {
public:
    DetachedLinkDeletes();
    ~DetachedLinkDeletes();
    DetachedLinkDeletes(const DetachedLinkDeletes&) = delete;
    DetachedLinkDeletes& operator=(const DetachedLinkDeletes&) = delete;
};

// Deletes link `index` (called `name`, for messages) of `s`'s namespace through a child: true
// once it is gone, false when it was already gone. nullopt outside the scope or when the child
// could not be set up or died without an answer: the caller deletes it itself.
std::optional<Result<bool>> delete_link_detached(const Socket& s, int index, const std::string& name);

// How many deletions this process has left to a child (for tests).
int detached_deletions();

}  // namespace cni::nl
