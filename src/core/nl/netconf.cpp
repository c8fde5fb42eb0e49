// SPDX-License-Identifier: Apache-2.0
// RTM_GETNETCONF for NETCONFA_IFINDEX_ALL (see netconf.hpp).
#include "core/nl/netconf.hpp"

#include <linux/netconf.h>
#include <linux/rtnetlink.h>
#include <netlink/msg.h>

#include <memory>
#include <optional>
#include <string>

#include "core/nl/ptr.hpp"

namespace cni::nl {
namespace {

struct Reply {
    std::optional<bool> forwarding;
    bool acked = false;
};

int on_netconf(nl_msg* msg, void* arg) {
    nlmsghdr* hdr = nlmsg_hdr(msg);
    if (hdr->nlmsg_type != RTM_NEWNETCONF) return NL_OK;
    nlattr* fwd = nlmsg_find_attr(hdr, sizeof(netconfmsg), NETCONFA_FORWARDING);
    if (fwd && nla_len(fwd) >= 4) static_cast<Reply*>(arg)->forwarding = nla_get_s32(fwd) != 0;
    return NL_OK;
}

int on_ack(nl_msg*, void* arg) {
    static_cast<Reply*>(arg)->acked = true;
    return NL_STOP;
}

}  // namespace

Result<bool> forwarding_enabled(const Socket& s, int family) {
    const std::string what = family == AF_INET ? "reading ip_forward" : "reading the IPv6 forwarding switch";
    MsgPtr msg(nlmsg_alloc_simple(RTM_GETNETCONF, NLM_F_REQUEST | NLM_F_ACK));
    if (!msg) return fail(what + ": out of memory");
    netconfmsg ncm{};
    ncm.ncm_family = static_cast<unsigned char>(family);
    if (nlmsg_append(msg.get(), &ncm, sizeof ncm, NLMSG_ALIGNTO) < 0 ||
        nla_put_s32(msg.get(), NETCONFA_IFINDEX, NETCONFA_IFINDEX_ALL) < 0)
        return fail(what + ": message too long");
    // The socket's handlers (its error handler records the kernel's message) plus ours.
    std::unique_ptr<nl_cb, Deleter<nl_cb_put>> own(nl_socket_get_cb(s.get()));
    std::unique_ptr<nl_cb, Deleter<nl_cb_put>> cb(nl_cb_clone(own.get()));
    if (!cb) return fail(what + ": out of memory");
    Reply reply;
    nl_cb_set(cb.get(), NL_CB_VALID, NL_CB_CUSTOM, on_netconf, &reply);
    nl_cb_set(cb.get(), NL_CB_ACK, NL_CB_CUSTOM, on_ack, &reply);
    CNI_TRY(s.check(nl_send_auto(s.get(), msg.get()), what));
    while (!reply.acked) CNI_TRY(s.check(nl_recvmsgs(s.get(), cb.get()), what));
    if (!reply.forwarding) return fail(what + ": the kernel did not say");
    return *reply.forwarding;
}

}  // namespace cni::nl
