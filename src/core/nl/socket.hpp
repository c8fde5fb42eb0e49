// SPDX-License-Identifier: Apache-2.0
// A route netlink socket bound to one network namespace. A socket opened inside a namespace
// keeps talking to it after the thread leaves (design principle 8), so applets open one per
// namespace up front and switch namespaces only for /proc/sys and firewall work.
#pragma once

#include <string>

#include "core/nl/ptr.hpp"
#include "core/os/netns.hpp"
#include "core/result.hpp"

namespace cni::nl {

class Socket {
public:
    static Result<Socket> open();                      // in the current namespace
    static Result<Socket> open_in(const os::Netns& ns);
    nl_sock* get() const { return sock_.get(); }

private:
    explicit Socket(SockPtr s) : sock_(std::move(s)) {}
    SockPtr sock_;
};

// "<what>: <libnl reason>" as a code 999 error.
Error nl_error(std::string_view what, int nl_err);

}  // namespace cni::nl
