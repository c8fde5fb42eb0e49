// SPDX-License-Identifier: Apache-2.0
// TBF, ingress qdisc and mirred redirect over libnl-route (see tc.hpp).
#include "core/nl/tc.hpp"

#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/tc_act/tc_mirred.h>
#include <netlink/errno.h>
#include <netlink/route/act/mirred.h>
#include <netlink/route/action.h>
#include <netlink/route/classifier.h>
#include <netlink/route/cls/u32.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/qdisc/tbf.h>

namespace cni::nl {
namespace {

using QdiscPtr = std::unique_ptr<rtnl_qdisc, Deleter<rtnl_qdisc_put>>;
using ClsPtr = std::unique_ptr<rtnl_cls, Deleter<rtnl_cls_put>>;
using ActPtr = std::unique_ptr<rtnl_act, Deleter<rtnl_act_put>>;

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

}  // namespace

Status add_root_tbf(const Socket& s, int ifindex, const Tbf& tbf) {
    auto q = qdisc(ifindex, TC_H_ROOT, kRootHandle);
    if (!q) return fail("netlink: out of memory");
    CNI_TRY(s.check(rtnl_tc_set_kind(TC_CAST(q.get()), "tbf"), "creating tbf"));
    rtnl_qdisc_tbf_set_limit(q.get(), int(tbf.limit));
    rtnl_qdisc_tbf_set_rate(q.get(), int(tbf.rate), int(tbf.burst), 0);
    return s.check(rtnl_qdisc_add(s.get(), q.get(), NLM_F_CREATE | NLM_F_EXCL), "adding tbf qdisc" + on(ifindex));
}

Result<std::optional<Tbf>> root_tbf(const Socket& s, int ifindex) {
    CNI_TRY_ASSIGN(auto cache, s.dump([](nl_sock* sk, nl_cache** c) { return rtnl_qdisc_alloc_cache(sk, c); }, "listing qdiscs"));
    QdiscPtr q(rtnl_qdisc_get_by_parent(cache.get(), ifindex, TC_H_ROOT));
    if (!q || std::string_view(rtnl_tc_get_kind(TC_CAST(q.get()))) != "tbf") return std::optional<Tbf>{};
    return std::optional<Tbf>(Tbf{std::uint32_t(rtnl_qdisc_tbf_get_rate(q.get())), std::uint32_t(rtnl_qdisc_tbf_get_rate_bucket(q.get())),
                                  std::uint32_t(rtnl_qdisc_tbf_get_limit(q.get()))});
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
