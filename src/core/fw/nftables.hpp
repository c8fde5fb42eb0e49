// SPDX-License-Identifier: Apache-2.0
// nf_tables over nfnetlink, in the current network namespace: the small part of what `nft -f` sends
// that the ipMasq and portmap backends need (docs/compatibility.md: ipMasq, portmap), and what
// iptables-nft sends for the iptables rules (core/fw/xtables_nft). Tables, regular and base
// chains, and rules built from typed expressions (meta, payload, bitwise, cmp, immediate, fib,
// masquerade, snat, dnat, counter, ct and meta mark stores, and nft_compat's xtables match and
// target) carrying their comment as nft's userdata TLV, so `nft list ruleset` shows them as the
// reference's and the reference's DEL finds them. A Batch is one transaction
// (NFNL_MSG_BATCH_BEGIN ... END) in one datagram: all of it applies or none, and only its last
// message is acked; bound to the generation it was built at, it applies only if nothing else
// committed since (transact() reads, builds and commits again until it does). list_rules and
// list_chains dump a table's objects, for_each_rule one chain's rules, rules_by_handle some of
// them. Registers are the kernel's 16-byte NFT_REG_1/NFT_REG_2; u32 attributes go big-endian as
// the kernel wants.
#pragma once

#include <netlink/msg.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "core/libnl/ptr.hpp"
#include "core/net/ip.hpp"
#include "core/result.hpp"

namespace cni::fw::nft {

using libnl::MsgPtr;

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
Exprs match_address(Family table, bool source, const net::IpNet& net, bool negated = false);  // ip/ip6 saddr|daddr
Exprs match_dport(std::uint8_t l4proto, std::uint16_t port);                             // tcp|udp dport
Exprs match_local_destination(bool negated = false, bool on_iif = false);  // fib daddr [. iif] type [!=] local
Exprs match_ether_source(const std::array<std::uint8_t, 6>& mac);                         // ether saddr
// iifname / oifname: `name` exact, or a prefix when it ends in '*'.
Exprs match_iface(bool in, std::string_view name, bool negated = false);
// ct state / ct status (NFT_CT_STATE, NFT_CT_STATUS) has none of the bits of `mask`.
Exprs match_ct_none_of(std::uint32_t key, std::uint32_t mask);
Exprs match_ct_any_of(std::uint32_t key, std::uint32_t mask);   // ... has some of them (ct state new)
Exprs match_ct_mark_has(std::uint32_t bits);                    // ct mark & bits == bits
// Statements.
Exprs verdict_accept();
Exprs verdict_return();
Exprs verdict_drop();
Exprs verdict_jump(std::string_view chain);
Exprs verdict_goto(std::string_view chain);
Exprs masquerade();
Exprs dnat_to(const net::IpAddr& ip, std::uint16_t port);
Exprs snat_to(const net::IpAddr& ip, bool random_fully);  // snat to IP [fully-random]
Exprs set_ct_mark_bits(std::uint32_t bits);         // ct mark set ct mark | bits
Exprs set_meta_mark_bits(std::uint32_t bits);       // meta mark set meta mark | bits

// The building blocks of the matches above, for rules laid out expression by expression as
// iptables-nft lays them out (core/fw/xtables_nft.cpp): a load into register 1 (meta key, or
// payload base/offset/length), a mask on it, a comparison of it, an xtables match or target
// (name, revision and the kernel's info struct, as nft_compat takes them), a zeroed counter,
// a verdict (NF_ACCEPT, NF_DROP, NFT_RETURN, or NFT_JUMP/NFT_GOTO to `chain`).
Expr load_meta(std::uint32_t key);
Expr load_payload(std::uint32_t base, std::uint32_t offset, std::uint32_t len);
Expr mask_with(std::vector<std::uint8_t> mask);
Expr compare(bool negated, std::vector<std::uint8_t> value);
Expr xt_match(std::string name, std::uint8_t revision, std::vector<std::uint8_t> info);
Expr xt_target(std::string name, std::uint8_t revision, std::vector<std::uint8_t> info);
Expr counter();
Expr verdict(std::int32_t code, std::string chain = {});

// Whether the kernel's nft_compat has revision `revision` of the xtables match (or target)
// `name` for family `f` (ip or ip6), loading its module if needed: what iptables-nft asks
// before it picks a revision.
bool has_xt_revision(Family f, bool target, std::string_view name, std::uint8_t revision);

// A base chain's hook: type "nat", hook (NF_INET_*), priority; `accept_policy` sets the policy
// explicitly, as iptables-nft does for its built-in chains.
struct Hook {
    std::uint32_t hooknum;
    std::int32_t priority;
    std::string type = "nat";
    bool accept_policy = false;
};

// Where add_rule puts a rule, and the layer-4 protocol nft_compat checks xtables matches
// against (iptables-nft's NFTA_RULE_COMPAT: a tcp or multiport match needs `-p tcp`).
struct RulePlacement {
    bool at_top = false;
    std::optional<std::uint32_t> compat_proto;
};

// The ruleset's generation in this namespace: every committed nf_tables transaction moves it.
Result<std::uint32_t> generation();

class Batch {
public:
    Batch() = default;
    // A transaction built from what was read at `generation`: the kernel applies it only if no
    // other transaction committed since, and commit() fails with code 11 (try again later)
    // otherwise. iptables-nft and nft do the same; neither takes the xtables lock.
    explicit Batch(std::uint32_t generation) : generation_(generation) {}
    void add_table(Family f, std::string_view table, std::string_view comment);
    void add_chain(Family f, std::string_view table, std::string_view chain, const std::optional<Hook>& hook = {},
                   std::string_view comment = {});
    void flush_chain(Family f, std::string_view table, std::string_view chain);
    void delete_table(Family f, std::string_view table);  // with everything in it
    void delete_chain(Family f, std::string_view table, std::string_view chain);  // flush it first
    void add_rule(Family f, std::string_view table, std::string_view chain, const Exprs& exprs, std::string_view comment,
                  const RulePlacement& placement = {});
    void delete_rule(Family f, std::string_view table, std::string_view chain, std::uint64_t handle);
    bool empty() const { return msgs_.empty(); }
    // Rules added from here on are echoed by the kernel with the handles it gave them: after
    // commit(), added() lists them in the order they were added. For a few rules only (each
    // echo waits in the socket's receive buffer until the commit is read).
    void echo_added_rules() { echo_ = true; }
    struct Added {
        std::string chain;
        std::uint64_t handle = 0;
    };
    const std::vector<Added>& added() const { return added_; }
    // Sends the transaction and waits for the kernel's answer to every message. `what` names
    // it in errors: "<what>: <errno text> (kernel: <extended ack>)".
    Status commit(std::string_view what);

private:
    nl_msg* start(int type, int flags, Family f);
    std::optional<std::uint32_t> generation_;
    std::vector<MsgPtr> msgs_;
    bool oom_ = false;
    bool deletes_ = false;  // it removes objects: see core/libnl/netfilter_close.hpp
    bool echo_ = false;
    std::vector<Added> added_;
};

// How often a read-then-write transaction is rebuilt when other writers keep committing.
inline constexpr int kTransactAttempts = 16;

// Reads the generation, runs `build(tx)` - which reads what it needs and fills tx - and commits
// tx; when another writer committed in between, all of it again (kTransactAttempts in all, then
// the try-again-later error stands). So a decision made from a dump (a rule is missing, a rule
// has this handle) never applies to a ruleset that changed after the dump. `committed(tx)` then
// reads what the commit gave back (Batch::added).
template <class Build, class Committed>
Status transact(std::string_view what, Build&& build, Committed&& committed) {
    for (int attempt = 1;; ++attempt) {
        CNI_TRY_ASSIGN(auto gen, generation());
        Batch tx(gen);
        CNI_TRY(build(tx));
        auto status = tx.commit(what);
        if (status) committed(std::as_const(tx));
        if (status || status.error().code != code::try_again_later || attempt == kTransactAttempts) return status;
    }
}
template <class Build>
Status transact(std::string_view what, Build&& build) {
    return transact(what, std::forward<Build>(build), [](const Batch&) {});
}

// An address comparison of a rule in an ip or ip6 table: [!] ip saddr|daddr NET.
struct AddressMatch {
    bool source = false;
    net::IpNet net;
    bool negated = false;
    bool operator==(const AddressMatch&) const = default;
};
// An xtables match or target in a rule: its name, revision and info struct.
struct XtPayload {
    std::string name;
    std::uint8_t revision = 0;
    std::vector<std::uint8_t> info;
};
// The native comparisons iptables-nft emits for `-p tcp|udp --dport P` and `-m mark [!] --mark`.
struct PortEquals {
    std::uint16_t port = 0;
};
struct MarkCompare {
    std::uint32_t value = 0, mask = 0xffffffff;
    bool negated = false;
};
using RuleMatch = std::variant<XtPayload, PortEquals, MarkCompare>;

struct ListedRule {
    std::string chain;
    std::uint64_t handle = 0;
    std::string comment;   // nft's userdata comment, or the text of iptables-nft's comment match
    std::string jumps_to;  // the chain of its jump or goto verdict, if any
    bool go_to = false;    // that verdict is a goto
    // Decoded as iptables-nft reads it back (nftables_decode.hpp): the verdict (ACCEPT, DROP,
    // RETURN, a chain) or xtables target (MASQUERADE, DNAT, ...) with its payload, the address
    // comparisons in order, the `meta l4proto` equality, the interface comparisons (a name
    // compared as a prefix ends in '+', as iptables writes it), and the matches after them in
    // order (a leading comment match is `comment`). `unknown`: something else is in the rule.
    std::string target;
    std::optional<XtPayload> xt_target;
    std::vector<AddressMatch> addresses;
    int l4proto = 0;
    std::string in_iface, out_iface;
    bool in_negated = false, out_negated = false;
    std::vector<RuleMatch> matches;
    bool unknown = false;
};
// Every rule of the table, in chain order; none when the table does not exist.
Result<std::vector<ListedRule>> list_rules(Family f, std::string_view table);
// Each rule of one chain (the kernel filters the dump) handed to `each` as it is decoded, none
// when the chain does not exist; `restart` is called when the dump is taken again (another
// transaction interrupted it): forget what `each` got so far.
Status for_each_rule(Family f, std::string_view table, std::string_view chain, const std::function<void(ListedRule&&)>& each,
                     const std::function<void()>& restart);
// How many chains this process has dumped (for_each_rule calls) and how many requests by handle
// it has sent (rules_by_handle calls): the tests' evidence that a call read only what it had to.
std::uint64_t chain_dumps_taken();
std::uint64_t handle_probes_taken();

// The names of the table's chains; none when the table does not exist.
Result<std::vector<std::string>> list_chains(Family f, std::string_view table);

// A chain's handle, its use count, which the kernel raises for each rule in the chain and for
// each rule that jumps or goes to it, and whether its policy is accept (a regular chain, which
// has none, counts as accept); nullopt when the table or the chain does not exist.
struct ChainInfo {
    std::uint64_t handle = 0;
    std::uint32_t use = 0;
    bool accepts = true;
};
Result<std::optional<ChainInfo>> chain_info(Family f, std::string_view table, std::string_view chain);
// The rules of one chain that have one of `handles` (a request each, all sent together), decoded
// as for_each_rule decodes them; a handle the chain does not have is skipped.
Result<std::vector<ListedRule>> rules_by_handle(Family f, std::string_view table, std::string_view chain,
                                                std::span<const std::uint64_t> handles);
// Whether the table exists.
Result<bool> has_table(Family f, std::string_view table);
// The table's use count (its chains, sets, objects and flowtables); nullopt when it does not exist.
Result<std::optional<std::uint32_t>> table_use(Family f, std::string_view table);

// Whether nf_tables answers in this namespace (the kernel has it and we may use it).
bool available();

}  // namespace cni::fw::nft
