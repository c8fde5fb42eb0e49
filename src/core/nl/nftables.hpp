// SPDX-License-Identifier: Apache-2.0
// nf_tables over nfnetlink, in the current network namespace: the small part of what `nft -f`
// sends that the ipMasq and portmap backends need (reference-behaviour 2.0b and 2.15). Tables,
// regular and base chains, and rules built from typed expressions (meta, payload, bitwise,
// cmp, immediate, fib, masquerade, dnat) carrying their comment as nft's userdata TLV, so
// `nft list ruleset` shows them as the reference's and the reference's DEL finds them. A Batch
// is one transaction (NFNL_MSG_BATCH_BEGIN ... END) in one datagram: all of it applies or none,
// and only its last message is acked. list_rules and list_chains dump a table's objects.
// Registers are the kernel's 16-byte NFT_REG_1/NFT_REG_2; u32 attributes go big-endian as the
// kernel wants.
#pragma once

#include <netlink/msg.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/cni/ip.hpp"
#include "core/nl/ptr.hpp"
#include "core/result.hpp"

namespace cni::nl::nft {

enum class Family : std::uint8_t { inet = 1, ip = 2, bridge = 7, ip6 = 10 };

// One expression of a rule: its kernel name and the writer of its NFTA_EXPR_DATA.
struct Expr {
    std::string name;
    std::function<bool(nl_msg*)> write;
};
using Exprs = std::vector<Expr>;
// Rules are built by appending matches and statements.
inline void append(Exprs& to, Exprs more) {
    for (auto& e : more) to.push_back(std::move(e));
}

// Matches, each a short expression list. `table` is the table's family: an inet table needs
// the `meta nfproto` check nft adds before an address match.
Exprs match_address(Family table, bool source, const IpNet& net, bool negated = false);  // ip/ip6 saddr|daddr
Exprs match_dport(std::uint8_t l4proto, std::uint16_t port);                             // tcp|udp dport
Exprs match_local_destination();                                                          // fib daddr type local
Exprs match_ether_source(const std::array<std::uint8_t, 6>& mac);                         // ether saddr
// iifname / oifname: `name` exact, or a prefix when it ends in '*'.
Exprs match_iface(bool in, std::string_view name, bool negated = false);
// ct state / ct status (NFT_CT_STATE, NFT_CT_STATUS) has none of the bits of `mask`.
Exprs match_ct_none_of(std::uint32_t key, std::uint32_t mask);
// Statements.
Exprs verdict_return();
Exprs verdict_drop();
Exprs verdict_jump(std::string_view chain);
Exprs verdict_goto(std::string_view chain);
Exprs masquerade();
Exprs dnat_to(const IpAddr& ip, std::uint16_t port);

// A base chain's hook: type "nat", hook (NF_INET_*), priority.
struct Hook {
    std::uint32_t hooknum;
    std::int32_t priority;
    std::string type = "nat";
};

class Batch {
public:
    void add_table(Family f, std::string_view table, std::string_view comment);
    void add_chain(Family f, std::string_view table, std::string_view chain, const std::optional<Hook>& hook = {},
                   std::string_view comment = {});
    void flush_chain(Family f, std::string_view table, std::string_view chain);
    void delete_chain(Family f, std::string_view table, std::string_view chain);  // flush it first
    void add_rule(Family f, std::string_view table, std::string_view chain, const Exprs& exprs, std::string_view comment);
    void delete_rule(Family f, std::string_view table, std::string_view chain, std::uint64_t handle);
    bool empty() const { return msgs_.empty(); }
    // Sends the transaction and waits for the kernel's answer to every message. `what` names
    // it in errors: "<what>: <errno text> (kernel: <extended ack>)".
    Status commit(std::string_view what);

private:
    nl_msg* start(int type, int flags, Family f);
    std::vector<MsgPtr> msgs_;
    bool oom_ = false;
};

// An address comparison of a rule in an ip or ip6 table: [!] ip saddr|daddr NET.
struct AddressMatch {
    bool source = false;
    IpNet net;
    bool negated = false;
    bool operator==(const AddressMatch&) const = default;
};
struct ListedRule {
    std::string chain;
    std::uint64_t handle = 0;
    std::string comment;   // nft's userdata comment, or the text of iptables-nft's comment match
    std::string jumps_to;  // the chain of its jump or goto verdict, if any
    // Decoded as iptables would show it (nftables_decode.hpp): the verdict (ACCEPT, DROP, RETURN,
    // a chain) or xtables target (MASQUERADE, DNAT, ...), the address comparisons in order, and
    // the `meta l4proto` and `th dport` equalities.
    std::string target;
    std::vector<AddressMatch> addresses;
    int l4proto = 0;
    std::uint16_t dport = 0;
};
// Every rule of the table, in chain order; none when the table does not exist.
Result<std::vector<ListedRule>> list_rules(Family f, std::string_view table);

// The names of the table's chains; none when the table does not exist.
Result<std::vector<std::string>> list_chains(Family f, std::string_view table);

// Whether the table has the chain; false when either does not exist.
Result<bool> has_chain(Family f, std::string_view table, std::string_view chain);

// Whether nf_tables answers in this namespace (the kernel has it and we may use it).
bool available();

}  // namespace cni::nl::nft
