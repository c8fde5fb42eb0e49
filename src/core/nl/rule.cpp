// SPDX-License-Identifier: Apache-2.0
// Rule changes and dumps over libnl-route (see rule.hpp).
#include "core/nl/rule.hpp"

#include <linux/fib_rules.h>
#include <netlink/errno.h>
#include <netlink/route/rule.h>

#include "core/nl/nl_addr.hpp"

namespace cni::nl {
namespace {

using RulePtr = std::unique_ptr<rtnl_rule, libnl::Deleter<rtnl_rule_put>>;

int family_of(const RuleSpec& r) {
    if (r.family) return r.family;
    if (r.src) return r.src->ip.is_v4() ? AF_INET : AF_INET6;
    if (r.dst) return r.dst->ip.is_v4() ? AF_INET : AF_INET6;
    return AF_INET;
}

Result<RulePtr> build(const RuleSpec& r, bool for_delete) {
    RulePtr rule(rtnl_rule_alloc());
    if (!rule) return fail("netlink: out of memory");
    rtnl_rule_set_family(rule.get(), family_of(r));
    if (!for_delete || r.table) rtnl_rule_set_action(rule.get(), FR_ACT_TO_TBL);
    if (r.table) rtnl_rule_set_table(rule.get(), r.table);
    if (r.priority) rtnl_rule_set_prio(rule.get(), *r.priority);
    if (r.mark) {
        rtnl_rule_set_mark(rule.get(), *r.mark);
        rtnl_rule_set_mask(rule.get(), r.mark_mask.value_or(0xffffffffU));
    }
    if (r.src) {
        CNI_TRY_ASSIGN(auto a, to_nl_addr(*r.src));
        rtnl_rule_set_src(rule.get(), a.get());
    }
    if (r.dst) {
        CNI_TRY_ASSIGN(auto a, to_nl_addr(*r.dst));
        rtnl_rule_set_dst(rule.get(), a.get());
    }
    if (!r.iif.empty()) rtnl_rule_set_iif(rule.get(), r.iif.c_str());
    if (!r.oif.empty()) rtnl_rule_set_oif(rule.get(), r.oif.c_str());
    return rule;
}

}  // namespace

std::string describe(const RuleSpec& r) {
    std::string s;
    auto add = [&s](const std::string& part) { s += (s.empty() ? "" : " ") + part; };
    if (r.priority) add(std::to_string(*r.priority) + ":");
    add(r.src ? "from " + r.src->str() : "from all");
    if (r.dst) add("to " + r.dst->str());
    if (!r.iif.empty()) add("iif " + r.iif);
    if (!r.oif.empty()) add("oif " + r.oif);
    if (r.mark) add("fwmark " + std::to_string(*r.mark) + (r.mark_mask ? "/" + std::to_string(*r.mark_mask) : ""));
    add("lookup " + std::to_string(r.table));
    return s;
}

Status add_rule(const Socket& s, const RuleSpec& r) {
    CNI_TRY_ASSIGN(auto rule, build(r, false));
    return s.check(rtnl_rule_add(s.get(), rule.get(), NLM_F_CREATE | NLM_F_EXCL), "adding rule " + describe(r));
}

Result<bool> add_rule_if_absent(const Socket& s, const RuleSpec& r) {
    CNI_TRY_ASSIGN(auto rule, build(r, false));
    int err = rtnl_rule_add(s.get(), rule.get(), NLM_F_CREATE | NLM_F_EXCL);
    if (err == -NLE_EXIST) {
        (void)s.check(0, "");
        return false;
    }
    CNI_TRY(s.check(err, "adding rule " + describe(r)));
    return true;
}

Result<bool> del_rule(const Socket& s, const RuleSpec& r) {
    CNI_TRY_ASSIGN(auto rule, build(r, true));
    int err = rtnl_rule_delete(s.get(), rule.get(), 0);
    if (err == -NLE_OBJ_NOTFOUND) {
        (void)s.check(0, "");
        return false;
    }
    CNI_TRY(s.check(err, "deleting rule " + describe(r)));
    return true;
}

Status del_rules(const Socket& s, const RuleSpec& r) {
    for (int i = 0; i < 1024; ++i) {  // bounded: a kernel that keeps saying "deleted" cannot loop us
        CNI_TRY_ASSIGN(bool gone, del_rule(s, r));
        if (!gone) return {};
    }
    return fail("deleting rule " + describe(r) + ": still there after 1024 deletions");
}

Result<std::vector<RuleSpec>> list_rules(const Socket& s, int family) {
    CNI_TRY_ASSIGN(auto cache, s.dump([family](nl_sock* sk, nl_cache** c) { return rtnl_rule_alloc_cache(sk, family, c); },
                                      "listing rules"));
    std::vector<RuleSpec> out;
    for (nl_object* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o)) {
        auto* rl = reinterpret_cast<rtnl_rule*>(o);
        if (rtnl_rule_get_action(rl) != FR_ACT_TO_TBL) continue;
        RuleSpec r;
        r.family = rtnl_rule_get_family(rl);
        r.table = rtnl_rule_get_table(rl);
        r.priority = rtnl_rule_get_prio(rl);
        auto selector = [](nl_addr* a) {  // "from all" may come back as 0.0.0.0/0
            auto net = from_nl_addr(a);
            return net && net->prefix > 0 ? net : std::nullopt;
        };
        r.src = selector(rtnl_rule_get_src(rl));
        r.dst = selector(rtnl_rule_get_dst(rl));
        if (const char* n = rtnl_rule_get_iif(rl)) r.iif = n;
        if (const char* n = rtnl_rule_get_oif(rl)) r.oif = n;
        if (std::uint32_t m = rtnl_rule_get_mark(rl); m && m != 0xffffffffU) {
            r.mark = m;
            if (std::uint32_t mask = rtnl_rule_get_mask(rl); mask != 0xffffffffU) r.mark_mask = mask;
        }
        out.push_back(std::move(r));
    }
    return out;
}

}  // namespace cni::nl
