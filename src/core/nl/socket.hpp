// SPDX-License-Identifier: Apache-2.0
// A route netlink socket bound to one network namespace. A socket opened inside a namespace keeps
// talking to it after the thread leaves (docs/design.md, principle 8), so applets open one per
// namespace up front and switch namespaces only for /proc/sys and firewall work. The socket asks
// the kernel for extended acks, and errors carry the kernel's own explanation: "creating dummy d0:
// operation not supported (kernel: Unknown device type)" (errno text spelled as Go prints it).
#pragma once

#include <linux/netlink.h>

#include <functional>
#include <memory>
#include <string>

#include "core/libnl/ptr.hpp"
#include "core/os/netns.hpp"
#include "core/result.hpp"

namespace cni::nl {

class Socket {
public:
    static Result<Socket> open();                      // in the current namespace
    static Result<Socket> open_in(const os::Netns& ns);
    nl_sock* get() const { return sock_.get(); }

    // Turn a libnl return code into a Status: "<what>: <errno text> (kernel: <ext ack>)".
    Status check(int rc, std::string_view what) const;
    Error error(int rc, std::string_view what) const;

    // A dump into a new libnl cache by `alloc` (e.g. rtnl_link_alloc_cache). A dump the kernel
    // marks interrupted (NLM_F_DUMP_INTR: the table changed under it) is retried, 5 times at most.
    using CacheAlloc = std::function<int(nl_sock*, nl_cache**)>;
    Result<libnl::CachePtr> dump(const CacheAlloc& alloc, std::string_view what) const;

    // A request whose answer libnl has no object for: sends `msg` (acked, as nl_send_auto
    // makes it) and hands every message before the kernel's ack to `on_answer`; an answer may
    // be the ack alone. Errors as check() words them.
    Status ask(nl_msg* msg, const std::function<void(nl_msg*)>& on_answer, std::string_view what) const;
    // A dump whose objects libnl does not parse whole: a request of `type` with the family
    // header `header` (`size` bytes), every message of one uninterrupted dump handed to
    // `on_message` in the kernel's order (an interrupted dump is retried, 5 times at most).
    Status dump_messages(int type, const void* header, std::size_t size,
                         const std::function<void(const nlmsghdr*)>& on_message, std::string_view what) const;

    // What the kernel said about the last failed request (errno and extended-ack message).
    struct LastError {
        int errnum = 0;
        std::string message;
    };

private:
    Socket(libnl::SockPtr s, std::unique_ptr<LastError> last) : sock_(std::move(s)), last_(std::move(last)) {}
    libnl::SockPtr sock_;
    std::unique_ptr<LastError> last_;  // stable address for libnl's error callback
};

}  // namespace cni::nl
