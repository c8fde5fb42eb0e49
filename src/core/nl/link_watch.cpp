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

using Clock = std::chrono::steady_clock;

struct Wanted {
    int index;
    int type;  // RTM_NEWLINK: wait for operational up; RTM_DELLINK: for the removal
    bool met = false;
};

// The wanted link's notification: RTM_NEWLINK (any family: the bridge's AF_BRIDGE port
// notifications carry the operational state too) with IFLA_OPERSTATE up, or the link's own
// RTM_DELLINK (AF_UNSPEC; a bridge's AF_BRIDGE one for a port comes before the link is gone).
int on_message(nl_msg* msg, void* arg) {
    auto* wanted = static_cast<Wanted*>(arg);
    nlmsghdr* hdr = nlmsg_hdr(msg);
    if (hdr->nlmsg_type != wanted->type || !nlmsg_valid_hdr(hdr, sizeof(ifinfomsg))) return NL_OK;
    auto* ifi = static_cast<ifinfomsg*>(nlmsg_data(hdr));
    if (ifi->ifi_index != wanted->index) return NL_OK;
    if (wanted->type == RTM_DELLINK) {
        if (ifi->ifi_family == AF_UNSPEC) wanted->met = true;
        return NL_OK;
    }
    nlattr* state = nlmsg_find_attr(hdr, sizeof(ifinfomsg), IFLA_OPERSTATE);
    if (state && nla_len(state) >= 1 && nla_get_u8(state) == IF_OPER_UP) wanted->met = true;
    return NL_OK;
}

// Receives notifications until `wanted` is met: true; false at `deadline` or when `stop_fd` (if
// any) became readable.
Result<bool> receive_until(nl_sock* sock, Wanted& wanted, Clock::time_point deadline, int stop_fd) {
    nl_socket_modify_cb(sock, NL_CB_VALID, NL_CB_CUSTOM, on_message, &wanted);
    pollfd pfd[2] = {{nl_socket_get_fd(sock), POLLIN, 0}, {stop_fd, POLLIN, 0}};
    const nfds_t count = stop_fd >= 0 ? 2 : 1;
    while (!wanted.met) {
        int wait_ms = -1;
        if (deadline != Clock::time_point::max()) {
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
            if (left.count() < 0) return false;
            wait_ms = int(left.count()) + 1;
        }
        int ready = ::poll(pfd, count, wait_ms);
        if (ready < 0 && errno != EINTR) return fail("netlink: poll: " + os::errno_text(errno));
        if (ready <= 0) continue;
        if (pfd[0].revents) {
            int rc = nl_recvmsgs_default(sock);
            if (rc < 0 && rc != -NLE_AGAIN) return fail(std::string("netlink: link notifications: ") + nl_geterror(rc));
            continue;
        }
        if (count == 2 && pfd[1].revents) return false;
    }
    return true;
}

}  // namespace

Result<LinkWatch> LinkWatch::open() {
    libnl::SockPtr s(nl_socket_alloc());
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
    Wanted wanted{index, RTM_NEWLINK};
    return receive_until(sock_.get(), wanted, Clock::now() + timeout, -1);
}

Result<bool> LinkWatch::wait_deleted(int index, int stop_fd) const {
    Wanted wanted{index, RTM_DELLINK};
    return receive_until(sock_.get(), wanted, Clock::time_point::max(), stop_fd);
}

}  // namespace cni::nl
