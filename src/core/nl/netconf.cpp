// SPDX-License-Identifier: Apache-2.0
// RTM_GETNETCONF for NETCONFA_IFINDEX_ALL (see netconf.hpp).
#include "core/nl/netconf.hpp"

#include <linux/netconf.h>
#include <linux/rtnetlink.h>
#include <netlink/msg.h>

#include <optional>
#include <string>

#include "core/libnl/ptr.hpp"

namespace cni::nl {
Result<bool> forwarding_enabled(const Socket& s, int family) {
    const std::string what = family == AF_INET ? "reading ip_forward" : "reading the IPv6 forwarding switch";
    libnl::MsgPtr msg(nlmsg_alloc_simple(RTM_GETNETCONF, NLM_F_REQUEST));
    if (!msg) return fail(what + ": out of memory");
    netconfmsg ncm{};
    ncm.ncm_family = static_cast<unsigned char>(family);
    if (nlmsg_append(msg.get(), &ncm, sizeof ncm, NLMSG_ALIGNTO) < 0 ||
        nla_put_s32(msg.get(), NETCONFA_IFINDEX, NETCONFA_IFINDEX_ALL) < 0)
        return fail(what + ": message too long");
    std::optional<bool> forwarding;
    CNI_TRY(s.ask(msg.get(), [&](nl_msg* answer) {
        nlmsghdr* hdr = nlmsg_hdr(answer);
        if (hdr->nlmsg_type != RTM_NEWNETCONF) return;
        nlattr* fwd = nlmsg_find_attr(hdr, sizeof(netconfmsg), NETCONFA_FORWARDING);
        if (fwd && nla_len(fwd) >= 4) forwarding = nla_get_s32(fwd) != 0;
    }, what));
    if (!forwarding) return fail(what + ": the kernel did not say");
    return *forwarding;
}

}  // namespace cni::nl
