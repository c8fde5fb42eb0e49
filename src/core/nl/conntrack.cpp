// SPDX-License-Identifier: Apache-2.0
// ctnetlink dump and delete with libnl's message helpers (see conntrack.hpp).
#include "core/nl/conntrack.hpp"

#include <arpa/inet.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <netinet/in.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>

#include <algorithm>
#include <vector>

#include "core/nl/ptr.hpp"
#include "core/os/sysctl.hpp"

namespace cni::nl {
namespace {

using MsgPtr = std::unique_ptr<nl_msg, Deleter<nlmsg_free>>;

MsgPtr ct_msg(int type, int flags, int family) {
    MsgPtr msg(nlmsg_alloc_simple((NFNL_SUBSYS_CTNETLINK << 8) | type, flags));
    nfgenmsg g{};
    g.nfgen_family = static_cast<std::uint8_t>(family);
    g.version = NFNETLINK_V0;
    if (msg && nlmsg_append(msg.get(), &g, sizeof g, NLMSG_ALIGNTO) != 0) msg.reset();
    return msg;
}

struct Dump {
    std::span<const std::uint16_t> ports;
    std::vector<std::vector<unsigned char>> tuples;  // CTA_TUPLE_ORIG payloads to delete
};

int on_entry(nl_msg* msg, void* arg) {
    auto* d = static_cast<Dump*>(arg);
    nlattr* ct[CTA_MAX + 1];
    if (nlmsg_parse(nlmsg_hdr(msg), sizeof(nfgenmsg), ct, CTA_MAX, nullptr) < 0 || !ct[CTA_TUPLE_ORIG]) return NL_OK;
    nlattr* tuple[CTA_TUPLE_MAX + 1];
    if (nla_parse_nested(tuple, CTA_TUPLE_MAX, ct[CTA_TUPLE_ORIG], nullptr) < 0 || !tuple[CTA_TUPLE_PROTO]) return NL_OK;
    nlattr* proto[CTA_PROTO_MAX + 1];
    if (nla_parse_nested(proto, CTA_PROTO_MAX, tuple[CTA_TUPLE_PROTO], nullptr) < 0) return NL_OK;
    if (!proto[CTA_PROTO_NUM] || nla_get_u8(proto[CTA_PROTO_NUM]) != IPPROTO_UDP || !proto[CTA_PROTO_DST_PORT]) return NL_OK;
    if (std::find(d->ports.begin(), d->ports.end(), ntohs(nla_get_u16(proto[CTA_PROTO_DST_PORT]))) == d->ports.end()) return NL_OK;
    auto* data = static_cast<unsigned char*>(nla_data(ct[CTA_TUPLE_ORIG]));
    d->tuples.emplace_back(data, data + nla_len(ct[CTA_TUPLE_ORIG]));
    return NL_OK;
}

// No tracked connection at all in this namespace (or no conntrack): nothing to walk. The dump
// would visit every bucket of the kernel's whole table, shared by all namespaces, to find that.
bool nothing_tracked() {
    auto count = os::sysctl_get("net.netfilter.nf_conntrack_count");
    return !count || *count == "0";
}

}  // namespace

Result<int> delete_udp_flows_to(int family, std::span<const std::uint16_t> ports) {
    if (ports.empty() || nothing_tracked()) return 0;
    SockPtr sk(nl_socket_alloc());
    if (!sk) return fail("conntrack: out of memory");
    if (int err = nl_connect(sk.get(), NETLINK_NETFILTER); err < 0) return fail(std::string("conntrack: ") + nl_geterror(err));
    Dump dump{ports, {}};
    nl_socket_modify_cb(sk.get(), NL_CB_VALID, NL_CB_CUSTOM, on_entry, &dump);
    auto req = ct_msg(IPCTNL_MSG_CT_GET, NLM_F_DUMP, family);
    if (!req) return fail("conntrack: out of memory");
    if (int err = nl_send_auto(sk.get(), req.get()); err < 0) return fail(std::string("conntrack: listing flows: ") + nl_geterror(err));
    if (int err = nl_recvmsgs_default(sk.get()); err < 0) return fail(std::string("conntrack: listing flows: ") + nl_geterror(err));
    nl_socket_modify_cb(sk.get(), NL_CB_VALID, NL_CB_DEFAULT, nullptr, nullptr);
    int deleted = 0;
    for (auto& t : dump.tuples) {
        auto del = ct_msg(IPCTNL_MSG_CT_DELETE, NLM_F_ACK, family);
        if (!del || nla_put(del.get(), CTA_TUPLE_ORIG | NLA_F_NESTED, int(t.size()), t.data()) < 0)
            return fail("conntrack: out of memory");
        int err = nl_send_sync(sk.get(), del.release());  // frees the message
        if (err == 0) ++deleted;  // a flow that ended meanwhile is gone all the same
    }
    return deleted;
}

}  // namespace cni::nl
