// SPDX-License-Identifier: Apache-2.0
// Waiting for a link's operational state through RTNLGRP_LINK notifications (see link_watch.hpp).
#include "core/nl/link_watch.hpp"

#include <linux/if.h>
#include <linux/rtnetlink.h>
#include <netlink/errno.h>
#include <netlink/msg.h>
#include <poll.h>

#include <cerrno>
#include <string>

#include "core/os/errno_error.hpp"

namespace cni::nl {
namespace {

struct Wanted {
    int index;
    bool up = false;
};

// RTM_NEWLINK of the wanted link (any family: the bridge's AF_BRIDGE port notifications carry
// the operational state too) with IFLA_OPERSTATE up.
int on_message(nl_msg* msg, void* arg) {
    auto* wanted = static_cast<Wanted*>(arg);
    nlmsghdr* hdr = nlmsg_hdr(msg);
    if (hdr->nlmsg_type != RTM_NEWLINK || !nlmsg_valid_hdr(hdr, sizeof(ifinfomsg))) return NL_OK;
    auto* ifi = static_cast<ifinfomsg*>(nlmsg_data(hdr));
    if (ifi->ifi_index != wanted->index) return NL_OK;
    nlattr* state = nlmsg_find_attr(hdr, sizeof(ifinfomsg), IFLA_OPERSTATE);
    if (state && nla_len(state) >= 1 && nla_get_u8(state) == IF_OPER_UP) wanted->up = true;
    return NL_OK;
}

}  // namespace

Result<LinkWatch> LinkWatch::open() {
    SockPtr s(nl_socket_alloc());
    if (!s) return fail("netlink: cannot allocate a socket");
    nl_socket_disable_seq_check(s.get());
    if (int err = nl_connect(s.get(), NETLINK_ROUTE); err < 0)
        return fail(std::string("netlink: connect: ") + nl_geterror(err));
    // Room for a busy node's link notifications (libnl's default is 32 KiB); an overrun
    // still only sends the caller back to asking.
    (void)nl_socket_set_buffer_size(s.get(), 1 << 20, 0);
    if (int err = nl_socket_add_membership(s.get(), RTNLGRP_LINK); err < 0)
        return fail(std::string("netlink: joining the link group: ") + nl_geterror(err));
    if (int err = nl_socket_set_nonblocking(s.get()); err < 0)
        return fail(std::string("netlink: non-blocking: ") + nl_geterror(err));
    return LinkWatch(std::move(s));
}

Result<bool> LinkWatch::wait_oper_up(int index, std::chrono::milliseconds timeout) const {
    using Clock = std::chrono::steady_clock;
    Wanted wanted{index};
    nl_socket_modify_cb(sock_.get(), NL_CB_VALID, NL_CB_CUSTOM, on_message, &wanted);
    const auto deadline = Clock::now() + timeout;
    pollfd pfd{nl_socket_get_fd(sock_.get()), POLLIN, 0};
    while (!wanted.up) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
        if (left.count() < 0) return false;
        int ready = ::poll(&pfd, 1, int(left.count()) + 1);
        if (ready < 0 && errno != EINTR) return fail("netlink: poll: " + os::errno_text(errno));
        if (ready <= 0) continue;
        int rc = nl_recvmsgs_default(sock_.get());
        if (rc < 0 && rc != -NLE_AGAIN) return fail(std::string("netlink: link notifications: ") + nl_geterror(rc));
    }
    return true;
}

}  // namespace cni::nl
