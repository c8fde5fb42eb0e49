// SPDX-License-Identifier: Apache-2.0
// TBF (raw messages), HTB with its classes, pfifo, u32 prefix filters, ingress qdisc and mirred
// redirect over libnl-route (see tc.hpp).
#include "core/nl/tc.hpp"

#include <netinet/in.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/tc_act/tc_mirred.h>
#include <netlink/errno.h>
#include <netlink/route/act/mirred.h>
#include <netlink/route/action.h>
#include <netlink/route/class.h>
#include <netlink/route/classifier.h>
#include <netlink/route/cls/u32.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/qdisc/fifo.h>
#include <netlink/route/qdisc/htb.h>
#include <netlink/utils.h>

#include "core/go_num.hpp"
#include "core/libnl/attr.hpp"

namespace cni::nl {
namespace {

using QdiscPtr = std::unique_ptr<rtnl_qdisc, libnl::Deleter<rtnl_qdisc_put>>;
using ClsPtr = std::unique_ptr<rtnl_cls, libnl::Deleter<rtnl_cls_put>>;
using ActPtr = std::unique_ptr<rtnl_act, libnl::Deleter<rtnl_act_put>>;
using ClassPtr = std::unique_ptr<rtnl_class, libnl::Deleter<rtnl_class_put>>;

constexpr std::uint32_t kRootHandle = TC_HANDLE(1, 0);
constexpr std::uint32_t kIngressHandle = TC_HANDLE(0xffff, 0);

QdiscPtr qdisc(int ifindex, std::uint32_t parent, std::uint32_t handle) {
    QdiscPtr q(rtnl_qdisc_alloc());
    if (!q) return q;
    rtnl_tc_set_ifindex(TC_CAST(q.get()), ifindex);
    rtnl_tc_set_parent(TC_CAST(q.get()), parent);
    rtnl_tc_set_handle(TC_CAST(q.get()), handle);
    return q;
}

std::string on(int ifindex) { return " on link #" + std::to_string(ifindex); }

bool is_kind(rtnl_tc* tc, std::string_view kind) {
    const char* k = rtnl_tc_get_kind(tc);
    return k && kind == k;
}

// A qdisc message about the root of `ifindex`, ready for its attributes.
libnl::MsgPtr root_qdisc_msg(int type, int flags, int ifindex) {
    libnl::MsgPtr msg(nlmsg_alloc_simple(type, flags));
    tcmsg tcm{};
    tcm.tcm_family = AF_UNSPEC;
    tcm.tcm_ifindex = ifindex;
    tcm.tcm_parent = TC_H_ROOT;
    tcm.tcm_handle = type == RTM_NEWQDISC ? kRootHandle : 0;
    if (msg && nlmsg_append(msg.get(), &tcm, sizeof tcm, NLMSG_ALIGNTO) != 0) msg.reset();
    return msg;
}

// The TBF in a qdisc message, if it is one.
std::optional<TbfState> read_tbf(nl_msg* m) {
    nlattr* tb[TCA_MAX + 1];
    nlattr* opt[TCA_TBF_MAX + 1];
    if (nlmsg_parse(nlmsg_hdr(m), sizeof(tcmsg), tb, TCA_MAX, nullptr) < 0 || !tb[TCA_KIND] || !tb[TCA_OPTIONS] ||
        std::string_view(libnl::attr_string(tb[TCA_KIND])) != "tbf" ||
        nla_parse_nested(opt, TCA_TBF_MAX, tb[TCA_OPTIONS], nullptr) < 0 || !opt[TCA_TBF_PARMS] ||
        nla_len(opt[TCA_TBF_PARMS]) < int(sizeof(tc_tbf_qopt)))
        return std::nullopt;
    tc_tbf_qopt q;
    std::memcpy(&q, nla_data(opt[TCA_TBF_PARMS]), sizeof q);
    TbfState t;
    t.rate = opt[TCA_TBF_RATE64] ? nla_get_u64(opt[TCA_TBF_RATE64]) : q.rate.rate;
    t.buffer_ticks = q.buffer;
    t.limit = q.limit;
    return t;
}

}  // namespace

std::uint32_t tbf_buffer_ticks(const Tbf& tbf) {
    // A zero rate: Go's division gives +Inf, whose conversion keeps 0 in the low 32 bits.
    if (!tbf.rate) return 0;
    const double ticks_per_usec = double(nl_us2ticks(1000000)) / 1e6;
    std::uint32_t usec = go_uint32(double(tbf.burst) * 1e6 / double(tbf.rate));
    return go_uint32(double(usec) * ticks_per_usec);
}

Status add_root_tbf(const Socket& s, int ifindex, const Tbf& tbf) {
    auto msg = root_qdisc_msg(RTM_NEWQDISC, NLM_F_CREATE | NLM_F_EXCL, ifindex);
    if (!msg) return fail("netlink: out of memory");
    tc_tbf_qopt q{};
    q.rate.rate = std::uint32_t(std::min<std::uint64_t>(tbf.rate, UINT32_MAX));
    q.limit = tbf.limit;
    q.buffer = tbf_buffer_ticks(tbf);
    nlattr* opts = nullptr;
    bool ok = nla_put_string(msg.get(), TCA_KIND, "tbf") == 0 && (opts = nla_nest_start(msg.get(), TCA_OPTIONS)) &&
              nla_put(msg.get(), TCA_TBF_PARMS, sizeof q, &q) == 0 &&
              (tbf.rate <= UINT32_MAX || nla_put_u64(msg.get(), TCA_TBF_RATE64, tbf.rate) == 0);
    if (!ok) return fail("adding tbf qdisc: netlink message too large");
    nla_nest_end(msg.get(), opts);
    return s.check(nl_send_sync(s.get(), msg.release()), "adding tbf qdisc" + on(ifindex));  // frees the message
}

Result<std::optional<TbfState>> root_tbf(const Socket& s, int ifindex) {
    // A qdisc GET is answered by the change notification, sent to the asker only with NLM_F_ECHO;
    // a built-in root qdisc such as noqueue by the ack alone.
    auto msg = root_qdisc_msg(RTM_GETQDISC, NLM_F_ECHO, ifindex);
    if (!msg) return fail("netlink: out of memory");
    std::optional<TbfState> tbf;
    CNI_TRY(s.ask(msg.get(), [&](nl_msg* answer) {
        if (auto t = read_tbf(answer)) tbf = t;
    }, "reading the root qdisc" + on(ifindex)));
    return tbf;
}

Status add_root_htb(const Socket& s, int ifindex, std::uint32_t default_class) {
    auto q = qdisc(ifindex, TC_H_ROOT, kRootHandle);
    if (!q) return fail("netlink: out of memory");
    CNI_TRY(s.check(rtnl_tc_set_kind(TC_CAST(q.get()), "htb"), "creating htb"));
    CNI_TRY(s.check(rtnl_htb_set_defcls(q.get(), TC_H_MIN(default_class)), "creating htb"));
    return s.check(rtnl_qdisc_add(s.get(), q.get(), NLM_F_CREATE | NLM_F_EXCL), "adding htb qdisc" + on(ifindex));
}

Status add_htb_class(const Socket& s, int ifindex, const HtbClass& h) {
    ClassPtr c(rtnl_class_alloc());
    if (!c) return fail("netlink: out of memory");
    rtnl_tc_set_ifindex(TC_CAST(c.get()), ifindex);
    rtnl_tc_set_parent(TC_CAST(c.get()), kRootHandle);
    rtnl_tc_set_handle(TC_CAST(c.get()), h.id);
    CNI_TRY(s.check(rtnl_tc_set_kind(TC_CAST(c.get()), "htb"), "creating htb class"));
    CNI_TRY(s.check(rtnl_htb_set_rate64(c.get(), h.rate), "creating htb class"));
    CNI_TRY(s.check(rtnl_htb_set_ceil64(c.get(), h.rate), "creating htb class"));
    CNI_TRY(s.check(rtnl_htb_set_rbuffer(c.get(), h.burst), "creating htb class"));
    CNI_TRY(s.check(rtnl_htb_set_cbuffer(c.get(), h.burst), "creating htb class"));
    CNI_TRY(s.check(rtnl_htb_set_quantum(c.get(), std::uint32_t(std::clamp<std::uint64_t>(h.rate / 10, 1514, 200000))),
                    "creating htb class"));
    return s.check(rtnl_class_add(s.get(), c.get(), NLM_F_CREATE | NLM_F_EXCL), "adding htb class" + on(ifindex));
}

Status add_pfifo(const Socket& s, int ifindex, std::uint32_t parent, std::uint32_t handle, int limit) {
    auto q = qdisc(ifindex, parent, handle);
    if (!q) return fail("netlink: out of memory");
    CNI_TRY(s.check(rtnl_tc_set_kind(TC_CAST(q.get()), "pfifo"), "creating pfifo"));
    CNI_TRY(s.check(rtnl_qdisc_fifo_set_limit(q.get(), limit), "creating pfifo"));
    return s.check(rtnl_qdisc_add(s.get(), q.get(), NLM_F_CREATE | NLM_F_EXCL), "adding the class's pfifo" + on(ifindex));
}

Status add_prefix_filter(const Socket& s, int ifindex, const net::IpNet& net, bool match_source, std::uint32_t to_class) {
    ClsPtr cls(rtnl_cls_alloc());
    if (!cls) return fail("netlink: out of memory");
    const bool v4 = net.ip.is_v4();
    rtnl_tc_set_ifindex(TC_CAST(cls.get()), ifindex);
    rtnl_tc_set_parent(TC_CAST(cls.get()), kRootHandle);
    CNI_TRY(s.check(rtnl_tc_set_kind(TC_CAST(cls.get()), "u32"), "creating u32 filter"));
    rtnl_cls_set_prio(cls.get(), v4 ? 16 : 17);
    rtnl_cls_set_protocol(cls.get(), v4 ? ETH_P_IP : ETH_P_IPV6);
    CNI_TRY(s.check(rtnl_u32_set_classid(cls.get(), to_class), "creating u32 filter"));
    const net::IpAddr network = net.network();
    const auto& b = network.bytes();
    if (v4) {
        in_addr a{};
        std::memcpy(&a, &b[12], 4);
        CNI_TRY(s.check(rtnl_u32_add_key_in_addr(cls.get(), &a, std::uint8_t(net.prefix), match_source ? 12 : 16, 0),
                        "matching " + net.str()));
    } else {
        in6_addr a{};
        std::memcpy(a.s6_addr, b.data(), 16);
        CNI_TRY(s.check(rtnl_u32_add_key_in6_addr(cls.get(), &a, std::uint8_t(net.prefix), match_source ? 8 : 24, 0),
                        "matching " + net.str()));
    }
    CNI_TRY(s.check(rtnl_u32_set_cls_terminal(cls.get()), "creating u32 filter"));
    return s.check(rtnl_cls_add(s.get(), cls.get(), NLM_F_CREATE | NLM_F_EXCL), "adding the filter of " + net.str() + on(ifindex));
}

Result<std::optional<HtbState>> root_htb(const Socket& s, int ifindex) {
    CNI_TRY_ASSIGN(auto qdiscs, s.dump([](nl_sock* sk, nl_cache** c) { return rtnl_qdisc_alloc_cache(sk, c); }, "listing qdiscs"));
    QdiscPtr q(rtnl_qdisc_get_by_parent(qdiscs.get(), ifindex, TC_H_ROOT));
    if (!q || !is_kind(TC_CAST(q.get()), "htb")) return std::optional<HtbState>{};
    HtbState out;
    out.default_class = TC_HANDLE(1, rtnl_htb_get_defcls(q.get()));
    CNI_TRY_ASSIGN(auto classes, s.dump([ifindex](nl_sock* sk, nl_cache** c) { return rtnl_class_alloc_cache(sk, ifindex, c); },
                                        "listing classes"));
    for (nl_object* o = nl_cache_get_first(classes.get()); o; o = nl_cache_get_next(o)) {
        auto* c = reinterpret_cast<rtnl_class*>(o);
        std::uint64_t rate = 0;
        if (is_kind(TC_CAST(c), "htb") && rtnl_htb_get_rate64(c, &rate) == 0)
            out.rates[rtnl_tc_get_handle(TC_CAST(c))] = rate;
    }
    CNI_TRY_ASSIGN(auto filters, s.dump([ifindex](nl_sock* sk, nl_cache** c) { return rtnl_cls_alloc_cache(sk, ifindex, kRootHandle, c); },
                                        "listing filters"));
    for (nl_object* o = nl_cache_get_first(filters.get()); o; o = nl_cache_get_next(o)) {
        std::uint32_t classid = 0;
        auto* cls = reinterpret_cast<rtnl_cls*>(o);
        if (is_kind(TC_CAST(cls), "u32") && rtnl_u32_get_classid(cls, &classid) == 0 && classid) ++out.filters;
    }
    return std::optional<HtbState>(out);
}

Status add_ingress_redirect(const Socket& s, int ifindex, int to_ifindex) {
    auto q = qdisc(ifindex, TC_H_INGRESS, kIngressHandle);
    if (!q) return fail("netlink: out of memory");
    CNI_TRY(s.check(rtnl_tc_set_kind(TC_CAST(q.get()), "ingress"), "creating ingress qdisc"));
    CNI_TRY(s.check(rtnl_qdisc_add(s.get(), q.get(), NLM_F_CREATE | NLM_F_EXCL), "adding ingress qdisc" + on(ifindex)));

    ClsPtr cls(rtnl_cls_alloc());
    ActPtr act(rtnl_act_alloc());
    if (!cls || !act) return fail("netlink: out of memory");
    rtnl_tc_set_ifindex(TC_CAST(cls.get()), ifindex);
    rtnl_tc_set_parent(TC_CAST(cls.get()), kIngressHandle);
    CNI_TRY(s.check(rtnl_tc_set_kind(TC_CAST(cls.get()), "u32"), "creating u32 filter"));
    rtnl_cls_set_prio(cls.get(), 1);
    rtnl_cls_set_protocol(cls.get(), ETH_P_ALL);
    CNI_TRY(s.check(rtnl_u32_set_classid(cls.get(), TC_HANDLE(1, 1)), "creating u32 filter"));
    CNI_TRY(s.check(rtnl_u32_add_key_uint32(cls.get(), 0, 0, 0, 0), "creating u32 filter"));  // match everything
    CNI_TRY(s.check(rtnl_u32_set_cls_terminal(cls.get()), "creating u32 filter"));
    CNI_TRY(s.check(rtnl_tc_set_kind(TC_CAST(act.get()), "mirred"), "creating mirred action"));
    rtnl_mirred_set_action(act.get(), TCA_EGRESS_REDIR);
    rtnl_mirred_set_policy(act.get(), TC_ACT_STOLEN);
    rtnl_mirred_set_ifindex(act.get(), std::uint32_t(to_ifindex));
    CNI_TRY(s.check(rtnl_u32_add_action(cls.get(), act.get()), "creating u32 filter"));  // the filter holds its own reference
    return s.check(rtnl_cls_add(s.get(), cls.get(), NLM_F_CREATE | NLM_F_EXCL), "adding redirect filter" + on(ifindex));
}

Status clear_qdiscs(const Socket& s, int ifindex) {
    for (auto [parent, handle] : {std::pair{TC_H_ROOT, kRootHandle}, std::pair{TC_H_INGRESS, kIngressHandle}}) {
        auto q = qdisc(ifindex, parent, handle);
        if (!q) return fail("netlink: out of memory");
        int err = rtnl_qdisc_delete(s.get(), q.get());
        if (err < 0 && err != -NLE_OBJ_NOTFOUND && err != -NLE_INVAL && err != -NLE_NODEV) CNI_TRY(s.check(err, "removing qdisc" + on(ifindex)));
        (void)s.check(0, "");
    }
    return {};
}

}  // namespace cni::nl
