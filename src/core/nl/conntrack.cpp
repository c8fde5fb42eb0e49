// SPDX-License-Identifier: Apache-2.0
// ctnetlink dump and delete with libnl's message helpers (see conntrack.hpp).
#include "core/nl/conntrack.hpp"

#include <arpa/inet.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <netinet/in.h>
#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>

#include <algorithm>
#include <vector>

#include "core/libnl/netfilter_close.hpp"
#include "core/libnl/ptr.hpp"
#include "core/os/sysctl.hpp"

namespace cni::nl {
namespace {

libnl::MsgPtr ct_msg(int type, int flags, int family) {
    libnl::MsgPtr msg(nlmsg_alloc_simple((NFNL_SUBSYS_CTNETLINK << 8) | type, flags));
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

// The tuple filter bits of CTA_FILTER_ORIG_FLAGS (the kernel's nf_internals.h; stable since
// Linux 5.8, used by libnetfilter_conntrack too, but not in the uapi headers).
constexpr std::uint32_t kFilterProtoNum = 1u << 3;
constexpr std::uint32_t kFilterProtoDstPort = 1u << 5;

// Asks the kernel to delete the UDP flows to `port` itself: a flush with a tuple filter (recent
// kernels: this machine's 6.18 has it, Debian 12's 6.1 not). Its walk of the table skips empty buckets, where a dump locks every one of them: on
// a 262,144-bucket table 0.5 ms against 8 ms. Older kernels take the partial tuple for a single
// entry's and refuse it (EINVAL), never as a flush of everything; the caller then dumps.
int filtered_flush(nl_sock* sk, int family, std::uint16_t port) {
    auto msg = ct_msg(IPCTNL_MSG_CT_DELETE, NLM_F_ACK, family);
    if (!msg) return -NLE_NOMEM;
    nl_msg* m = msg.get();
    nlattr* orig = nla_nest_start(m, CTA_TUPLE_ORIG | NLA_F_NESTED);
    nlattr* proto = nla_nest_start(m, CTA_TUPLE_PROTO | NLA_F_NESTED);
    if (!orig || !proto || nla_put_u8(m, CTA_PROTO_NUM, IPPROTO_UDP) < 0 || nla_put_u16(m, CTA_PROTO_DST_PORT, htons(port)) < 0)
        return -NLE_NOMEM;
    nla_nest_end(m, proto);
    nla_nest_end(m, orig);
    nlattr* filter = nla_nest_start(m, CTA_FILTER | NLA_F_NESTED);
    if (!filter || nla_put_u32(m, CTA_FILTER_ORIG_FLAGS, kFilterProtoNum | kFilterProtoDstPort) < 0 ||
        nla_put_u32(m, CTA_FILTER_REPLY_FLAGS, 0) < 0)
        return -NLE_NOMEM;
    nla_nest_end(m, filter);
    return nl_send_sync(sk, msg.release());  // frees the message
}

// No tracked connection at all in this namespace (or no conntrack): nothing to walk. The dump
// would visit every bucket of the kernel's whole table, shared by all namespaces, to find that.
bool nothing_tracked() {
    auto count = os::sysctl_get("net.netfilter.nf_conntrack_count");
    return !count || *count == "0";
}

}  // namespace

Status delete_udp_flows_to(int family, std::span<const std::uint16_t> ports) {
    if (ports.empty() || nothing_tracked()) return {};
    libnl::NetfilterSockPtr sk(nl_socket_alloc());
    if (!sk) return fail("conntrack: out of memory");
    if (int err = nl_connect(sk.get(), NETLINK_NETFILTER); err < 0) return fail(std::string("conntrack: ") + nl_geterror(err));
    if (std::all_of(ports.begin(), ports.end(), [&](std::uint16_t p) { return filtered_flush(sk.get(), family, p) == 0; })) return {};
    Dump dump{ports, {}};
    nl_socket_modify_cb(sk.get(), NL_CB_VALID, NL_CB_CUSTOM, on_entry, &dump);
    auto req = ct_msg(IPCTNL_MSG_CT_GET, NLM_F_DUMP, family);
    if (!req) return fail("conntrack: out of memory");
    if (int err = nl_send_auto(sk.get(), req.get()); err < 0) return fail(std::string("conntrack: listing flows: ") + nl_geterror(err));
    if (int err = nl_recvmsgs_default(sk.get()); err < 0) return fail(std::string("conntrack: listing flows: ") + nl_geterror(err));
    nl_socket_modify_cb(sk.get(), NL_CB_VALID, NL_CB_DEFAULT, nullptr, nullptr);
    for (auto& t : dump.tuples) {
        auto del = ct_msg(IPCTNL_MSG_CT_DELETE, NLM_F_ACK, family);
        if (!del || nla_put(del.get(), CTA_TUPLE_ORIG | NLA_F_NESTED, int(t.size()), t.data()) < 0)
            return fail("conntrack: out of memory");
        (void)nl_send_sync(sk.get(), del.release());  // frees the message; a flow that ended meanwhile is gone all the same
    }
    return {};
}

}  // namespace cni::nl
