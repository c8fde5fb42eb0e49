// SPDX-License-Identifier: Apache-2.0
// iptables for IPv4 and IPv6, in either of the node's two variants: legacy x_tables through
// libiptc, or iptables-nft's tables in nf_tables (xtables_nft.hpp). The node's variant is the
// one its `iptables` is, as for the Go plugins, which run that binary. An IptTable is one table
// of one family loaded into memory, changed, and committed in ONE transaction; callers hold the
// xtables lock (/run/xtables.lock, flock) around it exactly as the iptables binary does, so
// legacy iptables and iptables-restore never race with us, and go through transact(), which
// reads and changes the table again when a writer without the lock (iptables-nft) committed in
// between. Rules are described by the fields and
// matches the reference's rules use ([!] -s, [!] -d, -p, [!] -i, [!] -o, -m comment, multiport
// --destination-ports, tcp/udp/sctp --dport, addrtype, mark, conntrack --ctstate, and iprange
// for portmap's conditions; -j ACCEPT/DROP/RETURN/MASQUERADE/MARK --set-xmark/DNAT
// --to-destination/SNAT --to-source/CONNMARK --set-xmark or --restore-mark/<chain>),
// and built as `iptables` builds them for the same command line (match and target revisions
// probed from the kernel as it does), so either side can check or delete the other's rules.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "core/net/ip.hpp"
#include "core/result.hpp"

namespace cni::fw {

enum class Family { v4, v6 };

// Where iptables rules live: the legacy x_tables, or nf_tables in iptables-nft's form.
enum class Variant { legacy, nft };
inline constexpr Variant kVariants[] = {Variant::legacy, Variant::nft};
inline Variant other(Variant v) { return v == Variant::legacy ? Variant::nft : Variant::legacy; }

// The node's variant: the `iptables` first in PATH, by the name it resolves to
// (xtables-nft-multi, iptables-legacy, ...) or else by what its --version says; nft only where
// nf_tables answers. Where there is no `iptables` (a minimal node image, a runtime whose PATH
// lacks /usr/sbin), the kernel's tables decide, as kube-proxy's iptables-wrapper does: legacy
// where a legacy table holds rules (legacy_rules_present), else nft where nf_tables answers, else
// legacy.
Variant node_variant();

// Whether a legacy x_tables table of this namespace, IPv4 or IPv6, holds a rule or a chain of its
// own; read without making a table or loading a module: the tables the namespace lists
// (/proc/thread-self/net/ip{,6}_tables_names) and each one's count of entries.
bool legacy_rules_present();

// Whether iptables works here, the reference's test before it falls back to its nftables
// backends: nf_tables for the nft variant, the legacy nat table for the legacy one.
bool iptables_usable();

// Whether the legacy x_tables of this namespace already have `table`
// (/proc/thread-self/net/ip{,6}_tables_names). On a node whose variant is nft, a legacy table
// is opened only then (IptTable::open fails otherwise): that is the only case in which an older
// cni-all or the node's past could have left rules there, and opening one would create it.
bool legacy_table_present(Family family, const std::string& table);

inline constexpr const char* kXtablesLock = "/run/xtables.lock";

// Matches beyond -m comment, in the order they appear on an iptables command line.
struct MultiportDst {          // -m multiport --destination-ports p1,p2,... (needs -p)
    std::vector<std::uint16_t> ports;
    bool operator==(const MultiportDst&) const = default;
};
struct DstPort {               // --dport P after -p tcp|udp|sctp
    std::uint16_t port = 0;
    bool operator==(const DstPort&) const = default;
};
struct AddrType {              // -m addrtype [!] --src-type T,... [!] --dst-type T,... [--limit-iface-in|out]: XT_ADDRTYPE_* bits
    unsigned src = 0, dst = 0;
    bool src_inverted = false, dst_inverted = false;
    bool limit_iface_in = false, limit_iface_out = false;  // the types as seen on the packet's input (output) interface
    bool operator==(const AddrType&) const = default;
};
struct MarkMatch {             // -m mark [!] --mark V/M
    std::uint32_t mark = 0, mask = 0;
    bool inverted = false;
    bool operator==(const MarkMatch&) const = default;
};
struct IpRange {               // -m iprange [!] --src-range A-B [!] --dst-range A-B
    std::optional<std::pair<net::IpAddr, net::IpAddr>> src, dst;
    bool src_inverted = false, dst_inverted = false;
    bool operator==(const IpRange&) const = default;
};
struct CtState {               // -m conntrack [!] --ctstate S,...: XT_CONNTRACK_STATE_* bits
    unsigned states = 0;
    bool inverted = false;
    bool operator==(const CtState&) const = default;
};
using IptMatch = std::variant<MultiportDst, DstPort, AddrType, MarkMatch, CtState, IpRange>;

// Target parameters for -j MARK --set-xmark V/M and -j DNAT --to-destination IP[:PORT].
struct SetXMark {
    std::uint32_t mark = 0, mask = 0;
    bool operator==(const SetXMark&) const = default;
};
struct DnatTo {
    net::IpAddr ip;
    std::uint16_t port = 0;  // 0: keep the port
    bool operator==(const DnatTo&) const = default;
};
// -j SNAT --to-source IP [--random-fully].
struct SnatTo {
    net::IpAddr ip;
    bool random_fully = false;
    bool operator==(const SnatTo&) const = default;
};
// -j CONNMARK --set-xmark CTMARK/CTMASK, or --restore-mark --nfmask NFMASK --ctmask CTMASK.
struct ConnMark {
    bool restore = false;
    std::uint32_t ctmark = 0, ctmask = 0, nfmask = 0;
    bool operator==(const ConnMark&) const = default;
};
using IptTargetArgs = std::variant<std::monostate, SetXMark, DnatTo, SnatTo, ConnMark>;

struct IptRule {
    std::optional<net::IpNet> src;  // -s (host bits cleared)
    std::optional<net::IpNet> dst;  // -d
    bool dst_inverted = false; // ! -d
    std::string comment;       // -m comment --comment (the first match when present)
    std::string target;        // -j: ACCEPT, DROP, RETURN, MASQUERADE, MARK, DNAT, SNAT, CONNMARK or a chain
    bool src_inverted = false; // ! -s
    int proto = 0;             // -p: IPPROTO_TCP, IPPROTO_UDP, IPPROTO_SCTP; 0 for any
    std::string in_iface, out_iface;  // -i, -o
    bool in_inverted = false, out_inverted = false;
    std::vector<IptMatch> matches;    // after the comment
    IptTargetArgs target_args;
    bool operator==(const IptRule&) const = default;
};

class IptTable {
public:
    // The table in the node's variant, or in `variant`. An nft table that does not exist yet is
    // empty; it and its built-in chains are made when a rule goes in, as iptables-nft makes them.
    static Result<IptTable> open(Family family, const std::string& table);
    static Result<IptTable> open(Family family, const std::string& table, Variant variant);
    // Whether the kernel's legacy IPv4 nat table answers here (one getsockopt, no table copy):
    // the "is iptables usable" of the reference's backend choice.
    static bool legacy_nat_usable();
    IptTable(IptTable&&) noexcept;
    IptTable& operator=(IptTable&&) = delete;
    ~IptTable();

    bool has_chain(const std::string& chain) const;
    std::vector<std::string> chains() const;  // user-defined chains
    Status create_chain(const std::string& chain);
    Status flush_chain(const std::string& chain);
    Status delete_chain(const std::string& chain);
    // The rules of a chain; a rule with fields beyond IptRule's shows up with `foreign` set.
    struct Listed {
        IptRule rule;
        bool foreign = false;
        // -g: its target a chain gone to, not jumped to, so that chain's end (or RETURN) ends the
        // chain the goto is in, as that chain's own end would (also foreign: IptRule has no goto).
        bool go_to = false;
    };
    Result<std::vector<Listed>> rules(const std::string& chain) const;
    // Whether the chain holds a rule identical to `want`; false when there is no such chain.
    Result<bool> has_rule(const std::string& chain, const IptRule& want) const;
    // Appends unless an identical rule is already in the chain (go-iptables AppendUnique).
    Status append_unique(const std::string& chain, const IptRule& rule);
    // Inserts at the top (iptables -I chain 1) unless an identical rule is already in the chain.
    Status insert_unique(const std::string& chain, const IptRule& rule);
    // Deletes the rules whose -j is `target` and for which `pred` (when given) holds; how many.
    Result<int> delete_if(const std::string& chain, const std::string& target,
                          const std::function<bool(const IptRule&)>& pred = nullptr);
    Status commit();

    // Rule handles (nf_tables: the iptables-nft variant; a legacy table has none). They let a
    // caller that remembers what it added find and remove exactly that, without reading a chain
    // that thousands of other attachments share.
    struct AtHandle {
        std::uint64_t handle = 0;
        Listed listed;
    };
    // From now on, commits learn the handles the kernel gives the rules they add.
    void keep_added_handles();
    // The handles of the rules the last commit added to `chain`, in the order they were added
    // (after keep_added_handles(); none in a legacy table).
    std::vector<std::uint64_t> added_handles(const std::string& chain) const;
    // The rules of `chain` still at these handles (one that is gone is left out); nullopt in a
    // legacy table.
    Result<std::optional<std::vector<AtHandle>>> rules_at(const std::string& chain, const std::vector<std::uint64_t>& handles) const;
    // Appends without looking for an identical rule first: for a caller that knows its rule is
    // not there (in a legacy table, which is read whole anyway, it looks: append_unique).
    Status append_new(const std::string& chain, const IptRule& rule);
    // Deletes the rules at these handles of `chain` (nf_tables only).
    Status delete_at(const std::string& chain, const std::vector<std::uint64_t>& handles);
    Variant variant() const { return variant_; }

    // Runs `change(*this)` and commits. When the commit finds that another writer changed the
    // table after it was read (code 11: nf_tables' generation moved - iptables-nft and
    // kube-proxy's iptables-nft-restore take no xtables lock - or the legacy table was replaced),
    // the table is read again and `change` runs again on it, kAttempts times in all; so what
    // `change` decided from the table (a rule is missing, a chain exists) still holds when it
    // applies.
    template <class Change>
    Status transact(Change&& change) {
        for (int attempt = 1;; ++attempt) {
            CNI_TRY(change(*this));
            auto status = commit();
            if (status || status.error().code != code::try_again_later || attempt == kAttempts) return status;
            CNI_TRY(reload());
        }
    }
    // open() and transact(): the read-change-commit of one table in the node's variant.
    template <class Change>
    static Status update(Family family, const std::string& table, Change&& change) {
        CNI_TRY_ASSIGN(auto t, open(family, table));
        return t.transact(std::forward<Change>(change));
    }
    static constexpr int kAttempts = 16;

    struct Impl;

private:
    IptTable(std::unique_ptr<Impl> impl, Family family, std::string table, Variant variant);
    Status reload();  // a fresh copy of the table, uncommitted changes dropped
    std::unique_ptr<Impl> impl_;
    bool keep_handles_ = false;  // keep_added_handles(), kept across reload()
    Family family_;
    std::string table_;
    Variant variant_;
};

// Runs `fn(table, family)` and commits, through transact(), on `table` of each family in both
// variants wherever it opens (a variant or family without it holds nothing of ours): the sweep
// of DEL and GC.
template <class Fn>
Status for_each_table(const std::string& table, Fn&& fn) {
    for (Variant v : kVariants)
        for (Family f : {Family::v4, Family::v6})
            if (auto t = IptTable::open(f, table, v)) CNI_TRY(t->transact([&](IptTable& x) { return fn(x, f); }));
    return {};
}

}  // namespace cni::fw
