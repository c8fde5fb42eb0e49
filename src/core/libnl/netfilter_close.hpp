// SPDX-License-Identifier: Apache-2.0
// Netfilter netlink sockets whose final close is left to a child process. Releasing any
// NETLINK_NETFILTER socket makes nf_tables finish destroying what committed transactions deleted,
// and that waits for an RCU grace period (about 10 ms here): a DEL that removed rules would spend
// most of its time in close() (docs/compatibility.md, "nf_tables and the closing of sockets").
// While the dispatcher holds a LateNetfilterClose, every netfilter socket freed after a committed
// deletion keeps a duplicate of its descriptor; when the scope ends, a forked child closes all of
// its other descriptors at once (stdout included, so the runtime sees the end of the output), and
// once the plugin has closed its own copies (a pipe tells it), those sockets, so the release and
// its wait are the child's; the plugin exits without waiting. The rules are already gone
// when the commit returns: only the kernel's freeing of them is left behind.
#pragma once

#include <netlink/netlink.h>

#include <memory>

#include "core/libnl/ptr.hpp"

namespace cni::libnl {

// The deleter of a netfilter socket: nl_socket_free, keeping the descriptor open when the scope
// asks for it.
void free_netfilter_socket(nl_sock* sk);
using NetfilterSockPtr = std::unique_ptr<nl_sock, Deleter<free_netfilter_socket>>;

// A committed nf_tables transaction deleted objects: later netfilter sockets' closes would wait.
void note_netfilter_deletion();

// The dispatcher's scope for one plugin call. Without one (unit tests, the dhcp daemon) sockets
// close as usual.
class LateNetfilterClose {
public:
    LateNetfilterClose();
    ~LateNetfilterClose();
    LateNetfilterClose(const LateNetfilterClose&) = delete;
    LateNetfilterClose& operator=(const LateNetfilterClose&) = delete;
};

}  // namespace cni::libnl
