// SPDX-License-Identifier: Apache-2.0
// Rule changes and dumps over libnl-route (see rule.hpp).
#include "core/nl/rule.hpp"

#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>
#include <netlink/errno.h>
#include <netlink/msg.h>
#include <netlink/route/rule.h>

#include <algorithm>
#include <array>
#include <cstring>

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

namespace {

// A rule as the kernel dumps it: the selectors RuleSpec has, and whether it has any other (a
// TOS, realms, an inverted match, ports, an IP protocol, a UID range, l3mdev, suppressions, a
// tunnel id, a goto, or one newer than these headers, such as a DSCP) or an action other than a
// table lookup.
std::optional<net::IpNet> selector(const nlattr* a, int family, int len) {
    if (!a || len == 0) return std::nullopt;
    const auto* b = static_cast<const std::uint8_t*>(nla_data(a));
    if (family == AF_INET && nla_len(a) == 4)
        return net::IpNet{net::IpAddr::from_v4(std::uint32_t(b[0]) << 24 | b[1] << 16 | b[2] << 8 | b[3]), len, 32};
    if (family != AF_INET6 || nla_len(a) != 16) return std::nullopt;
    std::array<std::uint8_t, 16> bytes{};
    std::memcpy(bytes.data(), b, 16);
    return net::IpNet{net::IpAddr::from_bytes(bytes), len, 128};
}

// An attribute the kernel sends with its "none" value: the suppressions as -1, the whole UID range.
bool unset(int type, const nlattr* a) {
    if ((type == FRA_SUPPRESS_PREFIXLEN || type == FRA_SUPPRESS_IFGROUP) && nla_len(a) == 4)
        return nla_get_u32(const_cast<nlattr*>(a)) == 0xffffffffU;
    if (type == FRA_UID_RANGE && nla_len(a) == sizeof(fib_rule_uid_range)) {
        const auto* u = static_cast<const fib_rule_uid_range*>(nla_data(a));
        return u->start == 0 && u->end == 0xffffffffU;
    }
    return false;
}

std::optional<DumpedRule> parse_rule(const nlmsghdr* h) {
    if (h->nlmsg_type != RTM_NEWRULE || h->nlmsg_len < NLMSG_LENGTH(sizeof(fib_rule_hdr))) return std::nullopt;
    const auto* frh = static_cast<const fib_rule_hdr*>(NLMSG_DATA(h));
    nlattr* tb[FRA_MAX + 1] = {};
    if (nlmsg_parse(const_cast<nlmsghdr*>(h), sizeof(fib_rule_hdr), tb, FRA_MAX, nullptr) < 0) return std::nullopt;
    DumpedRule d;
    RuleSpec& r = d.spec;
    r.family = frh->family;
    d.action = frh->action;
    r.table = tb[FRA_TABLE] ? nla_get_u32(tb[FRA_TABLE]) : frh->table;
    if (tb[FRA_PRIORITY]) r.priority = nla_get_u32(tb[FRA_PRIORITY]);
    r.src = selector(tb[FRA_SRC], frh->family, frh->src_len);
    r.dst = selector(tb[FRA_DST], frh->family, frh->dst_len);
    if (tb[FRA_IIFNAME]) r.iif = static_cast<const char*>(nla_data(tb[FRA_IIFNAME]));
    if (tb[FRA_OIFNAME]) r.oif = static_cast<const char*>(nla_data(tb[FRA_OIFNAME]));
    const std::uint32_t mark = tb[FRA_FWMARK] ? nla_get_u32(tb[FRA_FWMARK]) : 0;
    const std::uint32_t mask = tb[FRA_FWMASK] ? nla_get_u32(tb[FRA_FWMASK]) : 0;
    if (mark || mask) {
        r.mark = mark;
        if (mask != 0xffffffffU) r.mark_mask = mask;
    }
    constexpr int kSpecAttrs[] = {FRA_TABLE, FRA_PRIORITY, FRA_SRC, FRA_DST, FRA_IIFNAME, FRA_OIFNAME, FRA_FWMARK, FRA_FWMASK,
                                  FRA_PROTOCOL /* who made it, no selector */};
    for (int i = 1; i <= FRA_MAX; ++i)
        if (tb[i] && std::ranges::find(kSpecAttrs, i) == std::end(kSpecAttrs) && !unset(i, tb[i])) d.more = true;
    const nlattr* a;
    int rest;
    nlmsg_for_each_attr(a, const_cast<nlmsghdr*>(h), sizeof(fib_rule_hdr), rest) {
        if (nla_type(a) > FRA_MAX) d.more = true;
    }
    d.more |= frh->tos != 0 || (frh->flags & FIB_RULE_INVERT) || frh->action != FR_ACT_TO_TBL ||
              (frh->src_len && !r.src) || (frh->dst_len && !r.dst);
    return d;
}

// The kernel's match for a delete: every selector `want` sets is the rule's (its others are not
// looked at).
bool delete_matches(const RuleSpec& want, const DumpedRule& d) {
    const RuleSpec& r = d.spec;
    const auto mask = [](const RuleSpec& x) { return x.mark_mask.value_or(0xffffffffU); };
    return (!want.table || (d.action == FR_ACT_TO_TBL && r.table == want.table)) &&
           (!want.priority || r.priority == want.priority) && (want.iif.empty() || r.iif == want.iif) &&
           (want.oif.empty() || r.oif == want.oif) && (!want.mark || (r.mark == want.mark && mask(r) == mask(want))) &&
           (!want.src || r.src == want.src) && (!want.dst || r.dst == want.dst);
}

// Whether a dumped rule is `r` itself: its selectors, no other.
auto exactly(const RuleSpec& r) {
    RuleSpec exact = r;
    exact.family = family_of(r);
    return [exact](const DumpedRule& d) { return !d.more && d.spec == exact; };
}

}  // namespace

// In the kernel's order: the order a delete's match is looked for in.
Result<RuleDump> dump_rules(const Socket& s, int family) {
    RuleDump out{family, {}};
    fib_rule_hdr req{};
    req.family = static_cast<std::uint8_t>(family);
    CNI_TRY(s.dump_messages(RTM_GETRULE, &req, sizeof req, [&](const nlmsghdr* h) {
        if (auto d = parse_rule(h); d && d->spec.family == family) out.rules.push_back(std::move(*d));
    }, "listing rules"));
    return out;
}

Result<bool> del_rules(const Socket& s, const RuleSpec& r) {
    CNI_TRY_ASSIGN(auto dump, dump_rules(s, family_of(r)));
    return del_rules_from(s, dump, r);
}

Result<bool> del_rules_from(const Socket& s, RuleDump& dump, const RuleSpec& r) {
    const auto is_exact = exactly(r);
    auto& rules = dump.rules;
    for (;;) {  // bounded by the dump: each delete takes one rule off it
        auto first = std::ranges::find_if(rules, [&](const DumpedRule& d) { return delete_matches(r, d); });
        if (first == rules.end()) return true;
        if (!is_exact(*first)) return std::ranges::none_of(rules, is_exact);  // a delete would take that one, not ours
        CNI_TRY_ASSIGN(bool gone, del_rule(s, r));
        if (!gone) return true;
        rules.erase(first);
    }
}

std::vector<RuleSpec> lookups(const RuleDump& dump) {
    std::vector<RuleSpec> out;
    for (auto& d : dump.rules)
        if (d.action == FR_ACT_TO_TBL) out.push_back(d.spec);
    return out;
}

Result<bool> add_rule_if_absent(const Socket& s, const RuleSpec& r) {
    CNI_TRY_ASSIGN(auto rule, build(r, false));
    int err = rtnl_rule_add(s.get(), rule.get(), NLM_F_CREATE | NLM_F_EXCL);
    if (err != -NLE_EXIST) {
        CNI_TRY(s.check(err, "adding rule " + describe(r)));
        return true;
    }
    (void)s.check(0, "");
    CNI_TRY_ASSIGN(bool there, has_rule(s, r));
    if (there) return false;
    return fail("adding rule " + describe(r) + ": the kernel takes it for a rule already there with a selector more (a "
                "source, a destination or a TOS), another program's: that one is left as it is, and this one not added");
}

Result<bool> has_rule(const Socket& s, const RuleSpec& r) {
    CNI_TRY_ASSIGN(auto dump, dump_rules(s, family_of(r)));
    return std::ranges::any_of(dump.rules, exactly(r));
}

Result<std::vector<RuleSpec>> list_rules(const Socket& s, int family) {
    CNI_TRY_ASSIGN(auto dump, dump_rules(s, family));
    return lookups(dump);
}

}  // namespace cni::nl
