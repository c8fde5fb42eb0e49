// SPDX-License-Identifier: Apache-2.0
// Policy routing rules (rtnetlink RTM_*RULE) as plain values: the selector (source, destination,
// input/output interface, fwmark) and "lookup <table>" as the action, which is all sbr and vrf
// need. A rule without a priority gets the kernel's choice, as `ip rule add` and Go netlink's
// RuleAdd leave it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/net/ip.hpp"
#include "core/nl/socket.hpp"

namespace cni::nl {

struct RuleSpec {
    int family = 0;                        // AF_INET / AF_INET6; taken from src/dst when 0
    std::optional<net::IpNet> src, dst;
    std::string iif, oif;                  // interface names, "" for any
    std::optional<std::uint32_t> priority;
    std::optional<std::uint32_t> mark;     // fwmark
    std::optional<std::uint32_t> mark_mask;  // its mask; all ones when not set
    std::uint32_t table = 0;
    bool operator==(const RuleSpec&) const = default;
};

// A rule as a dump gave it: its selectors and table, what else it has (`more`: a selector or
// action RuleSpec cannot say, so it is never exactly a RuleSpec).
struct DumpedRule {
    RuleSpec spec;
    std::uint8_t action = 0;  // FR_ACT_*
    bool more = false;
};
// Every rule of one family as one dump gave it, in the kernel's order: del_rules_from deletes
// from it without a dump of its own (a caller deleting the rules of many addresses dumps once),
// keeping it as the kernel has it after each delete.
struct RuleDump {
    int family = 0;
    std::vector<DumpedRule> rules;
};
Result<RuleDump> dump_rules(const Socket& s, int family);

Status add_rule(const Socket& s, const RuleSpec& r);
// The same; false, and nothing changed, when the very same rule is there already. A rule the
// kernel takes for it (its "exists" test ignores a source, destination or TOS that the new rule
// does not set) but that has a selector more is another's: an error, and nothing changed.
Result<bool> add_rule_if_absent(const Socket& s, const RuleSpec& r);
// Deletes the first rule matching every field set in `r`, whatever other selectors it has; false
// when there is none. Only for a rule just added and known to be first (del_rules otherwise).
Result<bool> del_rule(const Socket& s, const RuleSpec& r);
// Deletes every rule that is exactly `r` (a leftover may have doubled one): no selector but r's
// (another program's rule that adds an input interface, a mark, a TOS, a UID range... to r's
// stays). The kernel deletes the first rule whose selectors include a request's, so each delete
// is sent only when that first rule, in one dump taken first (and kept as the deletes change
// it), is exactly `r`. False when a rule not `r`
// comes first: a delete would take it, so the copies of `r` after it are left.
Result<bool> del_rules(const Socket& s, const RuleSpec& r);
// The same, the first rule told by `dump` (of r's family) rather than by a fresh dump.
Result<bool> del_rules_from(const Socket& s, RuleDump& dump, const RuleSpec& r);
// The rules of `dump` that look up a table, as list_rules.
std::vector<RuleSpec> lookups(const RuleDump& dump);
// Whether the rule `r` is there exactly: its selectors and no other.
Result<bool> has_rule(const Socket& s, const RuleSpec& r);
// The rules of `family` that look up a table (the kernel's default rules included).
Result<std::vector<RuleSpec>> list_rules(const Socket& s, int family);

std::string describe(const RuleSpec& r);  // "from 10.0.0.5/32 lookup 100" for messages

}  // namespace cni::nl
