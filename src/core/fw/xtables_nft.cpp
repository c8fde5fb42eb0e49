// SPDX-License-Identifier: Apache-2.0
// IptTable's nft variant and the node's variant probe (see xtables_nft.hpp and iptables.hpp).
#include "core/fw/xtables_nft.hpp"

#include "core/fw/iptables_impl.hpp"  // first: net/if.h before the kernel headers

#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <map>
#include <numeric>

#include "core/fw/nftables.hpp"
#include "core/os/exec.hpp"

namespace cni::fw {
namespace {

namespace nft = fw::nft;

nft::Family nft_family(Family f) { return f == Family::v4 ? nft::Family::ip : nft::Family::ip6; }

// iptables-nft's built-in chains of the tables we use: hook and priority.
struct Builtin {
    const char* chain;
    std::uint32_t hook;
    std::int32_t priority;
};
constexpr Builtin kNat[] = {{"PREROUTING", NF_INET_PRE_ROUTING, -100},
                            {"INPUT", NF_INET_LOCAL_IN, 100},
                            {"OUTPUT", NF_INET_LOCAL_OUT, -100},
                            {"POSTROUTING", NF_INET_POST_ROUTING, 100}};
constexpr Builtin kFilter[] = {{"INPUT", NF_INET_LOCAL_IN, 0}, {"FORWARD", NF_INET_FORWARD, 0}, {"OUTPUT", NF_INET_LOCAL_OUT, 0}};
constexpr Builtin kMangle[] = {{"PREROUTING", NF_INET_PRE_ROUTING, -150},
                               {"INPUT", NF_INET_LOCAL_IN, -150},
                               {"FORWARD", NF_INET_FORWARD, -150},
                               {"OUTPUT", NF_INET_LOCAL_OUT, -150},
                               {"POSTROUTING", NF_INET_POST_ROUTING, -150}};

const Builtin* builtin(const std::string& table, const std::string& chain) {
    auto find = [&](const auto& list) -> const Builtin* {
        for (auto& b : list)
            if (chain == b.chain) return &b;
        return nullptr;
    };
    return table == "nat" ? find(kNat) : table == "mangle" ? find(kMangle) : find(kFilter);
}

// The type of a built-in chain: nat's are "nat", mangle's OUTPUT is "route", the rest "filter".
const char* chain_type(const std::string& table, const std::string& chain) {
    if (table == "nat") return "nat";
    return table == "mangle" && chain == "OUTPUT" ? "route" : "filter";
}


// [!] -s/-d NET: the payload as long as the mask's leading whole bytes when the rest of the mask
// is zero, else the whole address and a mask.
void add_address(nft::Exprs& e, bool source, const std::optional<net::IpNet>& net, bool negated) {
    if (!net || net->prefix == 0) return;
    const bool v4 = net->ip.is_v4();
    const std::size_t width = v4 ? 4 : 16;
    std::vector<std::uint8_t> mask(width, 0);
    for (int i = 0; i < net->prefix; ++i) mask[std::size_t(i / 8)] |= std::uint8_t(0x80 >> (i % 8));
    std::size_t len = width;
    if (net->prefix % 8 == 0) len = std::size_t(net->prefix / 8);
    auto value = net->network().wire_bytes();
    value.resize(len), mask.resize(len);
    e.push_back(nft::load_payload(NFT_PAYLOAD_NETWORK_HEADER, v4 ? (source ? 12 : 16) : (source ? 8 : 24), std::uint32_t(len)));
    if (net->prefix % 8 != 0) e.push_back(nft::mask_with(std::move(mask)));
    e.push_back(nft::compare(negated, std::move(value)));
}

void add_iface(nft::Exprs& e, bool in, const std::string& name, bool negated) {
    if (name.empty() || name == "+") return;
    std::vector<std::uint8_t> value(name.begin(), name.end());
    if (name.back() == '+') value.pop_back();
    else value.push_back(0);
    e.push_back(nft::load_meta(in ? NFT_META_IIFNAME : NFT_META_OIFNAME));
    e.push_back(nft::compare(negated, std::move(value)));
}

std::vector<std::uint8_t> host_bytes(std::uint32_t v) {
    std::vector<std::uint8_t> out(4);
    std::memcpy(out.data(), &v, 4);
    return out;
}

nft::Expr xt_match(nft::XtPayload x) { return nft::xt_match(std::move(x.name), x.revision, std::move(x.info)); }

// The expressions iptables-nft writes for `r`.
nft::Exprs expressions(const detail::XtCodec& codec, const IptRule& r, const detail::RevisionProbe& probe) {
    nft::Exprs e;
    add_iface(e, true, r.in_iface, r.in_inverted);
    add_iface(e, false, r.out_iface, r.out_inverted);
    if (r.proto) e.push_back(nft::load_meta(NFT_META_L4PROTO)), e.push_back(nft::compare(false, {std::uint8_t(r.proto)}));
    add_address(e, true, r.src, r.src_inverted);
    add_address(e, false, r.dst, r.dst_inverted);
    if (!r.comment.empty()) e.push_back(xt_match(codec.comment(r.comment)));
    for (auto& m : r.matches) {
        if (auto* p = std::get_if<DstPort>(&m); p && (r.proto == IPPROTO_TCP || r.proto == IPPROTO_UDP)) {
            e.push_back(nft::load_payload(NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2));
            e.push_back(nft::compare(false, {std::uint8_t(p->port >> 8), std::uint8_t(p->port & 0xff)}));
        } else if (auto* mk = std::get_if<MarkMatch>(&m)) {
            e.push_back(nft::load_meta(NFT_META_MARK));
            if (mk->mask != 0xffffffff) e.push_back(nft::mask_with(host_bytes(mk->mask)));
            e.push_back(nft::compare(mk->inverted, host_bytes(mk->mark)));
        } else {
            e.push_back(xt_match(codec.encode_match(m, r.proto, probe)));
        }
    }
    e.push_back(nft::counter());
    if (r.target == "ACCEPT") e.push_back(nft::verdict(NF_ACCEPT));
    else if (r.target == "DROP") e.push_back(nft::verdict(NF_DROP));
    else if (r.target == "RETURN") e.push_back(nft::verdict(NFT_RETURN));
    else if (auto t = codec.encode_target(r, probe)) e.push_back(nft::xt_target(t->name, t->revision, std::move(t->info)));
    else e.push_back(nft::verdict(NFT_JUMP, r.target));
    return e;
}

// The IptRule a dumped rule stands for, and whether it holds anything IptRule cannot express.
IptTable::Listed describe(const detail::XtCodec& codec, const nft::ListedRule& d) {
    IptTable::Listed out;
    IptRule& r = out.rule;
    out.foreign = d.unknown || d.target.empty() || d.go_to;  // IptRule has no goto, as a legacy rule's flag says
    out.go_to = d.go_to;
    for (auto& a : d.addresses) {
        auto& net = a.source ? r.src : r.dst;
        if (net) out.foreign = true;
        net = a.net;
        (a.source ? r.src_inverted : r.dst_inverted) = a.negated;
    }
    r.proto = d.l4proto;
    r.in_iface = d.in_iface, r.out_iface = d.out_iface;
    r.in_inverted = d.in_negated, r.out_inverted = d.out_negated;
    r.comment = d.comment;
    for (auto& m : d.matches) {
        if (auto* x = std::get_if<nft::XtPayload>(&m)) {
            if (auto known = codec.decode_match(*x, r.proto)) r.matches.push_back(*known);
            else out.foreign = true;
        } else if (auto* p = std::get_if<nft::PortEquals>(&m)) {
            if (r.proto != IPPROTO_TCP && r.proto != IPPROTO_UDP) out.foreign = true;
            r.matches.push_back(DstPort{p->port});
        } else {
            auto& mk = std::get<nft::MarkCompare>(m);
            r.matches.push_back(MarkMatch{mk.value, mk.mask, mk.negated});
        }
    }
    r.target = d.target;
    if (d.xt_target && detail::has_target_args(r.target)) {
        if (auto args = codec.decode_target(*d.xt_target)) r.target_args = *args;
        else out.foreign = true;
    }
    return out;
}

// What IptRule's target names when it is not a chain (iptables.hpp: IptRule::target).
bool is_chain_target(const std::string& target) {
    for (const char* t : {"ACCEPT", "DROP", "RETURN", "MASQUERADE", "MARK", "DNAT", "SNAT", "CONNMARK"})
        if (target == t) return false;
    return true;
}

// Reads lazily: a chain is looked up (one GETCHAIN) the first time it is named, and its rules
// are dumped (one dump filtered to that chain) the first time they are needed, so a call costs
// the same whatever else the table holds. The batch is bound to the generation read first, so a
// decision taken from any of these reads applies only if nothing committed since.
class XtNftImpl final : public IptTable::Impl {
public:
    XtNftImpl(Family family, std::string table)
        : family_(nft_family(family)), table_(std::move(table)),
          codec_(family == Family::v4 ? detail::xt_codec_v4() : detail::xt_codec_v6()) {}

    Status load() {
        if (table_ != "nat" && table_ != "filter" && table_ != "mangle")
            return fail("iptables-nft: table " + table_ + " is not supported");
        auto generation = nft::generation();
        if (!generation) return fail("iptables-nft: nf_tables is not available here");
        batch_ = nft::Batch(*generation);  // commits only onto the ruleset read from here on
        if (keep_handles_) batch_.echo_added_rules();
        return {};
    }

    // Built-in chains count as present, as in the legacy tables, whether made yet or not.
    bool has_chain(const std::string& c) const override { return builtin(table_, c) || chain(c).exists; }
    std::vector<std::string> chains() const override {
        if (!all_listed_) {
            if (auto names = nft::list_chains(family_, table_)) {
                for (auto& n : *names) {
                    Chain listed;
                    listed.in_kernel = listed.exists = true;
                    known_.try_emplace(n, std::move(listed));
                }
            } else {
                remember(names.error());
            }
            all_listed_ = true;
        }
        std::vector<std::string> out;
        for (auto& [name, c] : known_)
            if (c.exists && !builtin(table_, name)) out.push_back(name);
        return out;
    }
    Status create_chain(const std::string& c) override {
        if (has_chain(c)) return fail("iptables-nft: creating chain " + name(c) + ": it exists");
        CNI_TRY(ensure_table());
        batch_.add_chain(family_, table_, c);
        mark_made(c);
        return {};
    }
    Status flush_chain(const std::string& c) override {
        CNI_TRY(require_chain(c));
        Chain& ch = chain(c);
        if (ch.exists) batch_.flush_chain(family_, table_, c);
        ch.rows.clear(), ch.loaded = true, ch.added_at_top = 0, ch.touched = true;
        return {};
    }
    Status delete_chain(const std::string& c) override {
        Chain& ch = chain(c);
        if (!ch.exists || builtin(table_, c)) return fail("iptables-nft: cannot delete chain " + name(c));
        batch_.delete_chain(family_, table_, c);
        ch.exists = false, ch.rows.clear(), ch.loaded = true, ch.added_at_top = 0, ch.touched = true;
        return {};
    }
    Result<std::vector<IptTable::Listed>> rules(const std::string& c) const override {
        CNI_TRY(require_chain(c));
        CNI_TRY_ASSIGN(auto* rows, loaded_rows(c));
        std::vector<IptTable::Listed> out;
        out.reserve(rows->size());
        for (auto& r : *rows) out.push_back(r.listed);
        return out;
    }
    Status append_unique(const std::string& c, const IptRule& r) override { return add_rule(c, r, false, true); }
    Status insert_unique(const std::string& c, const IptRule& r) override { return add_rule(c, r, true, true); }
    Status append_new(const std::string& c, const IptRule& r) override { return add_rule(c, r, false, false); }
    void keep_added_handles() override {
        keep_handles_ = true;
        batch_.echo_added_rules();
    }
    std::vector<std::uint64_t> added_handles(const std::string& c) const override {
        std::vector<std::uint64_t> out;
        for (auto& a : committed_)
            if (a.chain == c) out.push_back(a.handle);
        return out;
    }
    Result<std::optional<std::vector<IptTable::AtHandle>>> rules_at(const std::string& c,
                                                                    const std::vector<std::uint64_t>& handles) const override {
        if (read_error_) return cni::Unexpected(*read_error_);
        std::vector<IptTable::AtHandle> out;
        if (!chain(c).in_kernel) return std::optional(std::move(out));
        CNI_TRY_ASSIGN(auto found, nft::rules_by_handle(family_, table_, c, handles));
        for (auto& d : found) out.push_back({d.handle, describe(codec_, d)});
        return std::optional(std::move(out));
    }
    Status delete_at(const std::string& c, const std::vector<std::uint64_t>& handles) override {
        CNI_TRY(require_chain(c));
        Chain& ch = chain(c);
        for (std::uint64_t h : handles) {
            batch_.delete_rule(family_, table_, c, h);
            if (ch.loaded) std::erase_if(ch.rows, [&](const Row& r) { return r.handle == h; });
            else ch.deleted.push_back(h);
        }
        ch.touched = true;
        return {};
    }
    Result<int> delete_if(const std::string& c, const std::string& target, const std::function<bool(const IptRule&)>& pred) override {
        CNI_TRY(require_chain(c));
        if (is_chain_target(target)) {
            // A jump needs its chain: none can go to a chain the table does not have.
            if (!chain(target).in_kernel && !chain(target).exists) return 0;
            CNI_TRY_ASSIGN(auto jumps, jumps_by_handle(c, target));
            chain(target).touched = true;
            if (jumps) {
                int n = 0;
                for (auto& row : *jumps) {
                    if (pred && !pred(row.listed.rule)) continue;
                    batch_.delete_rule(family_, table_, c, row.handle);
                    chain(c).deleted.push_back(row.handle);
                    ++n;
                }
                return n;
            }
        }
        CNI_TRY_ASSIGN(auto* rows, loaded_rows(c));
        int n = 0;
        for (auto it = rows->begin(); it != rows->end();) {
            if (it->listed.rule.target != target || (pred && !pred(it->listed.rule))) {
                ++it;
                continue;
            }
            if (it->handle == 0) return fail("iptables-nft: deleting a rule of " + name(c) + " added in the same transaction");
            batch_.delete_rule(family_, table_, c, it->handle);
            it = rows->erase(it);
            ++n;
        }
        return n;
    }
    // After a commit the copy starts afresh (what it read is older than what it wrote).
    Status commit() override {
        if (read_error_) return cni::Unexpected(*read_error_);
        CNI_TRY(batch_.commit("iptables-nft: committing table " + table_));
        committed_ = batch_.added();
        known_.clear(), all_listed_ = false, table_exists_.reset();
        return load();
    }

private:
    struct Row {
        std::uint64_t handle = 0;  // 0: added in this transaction
        IptTable::Listed listed;
    };
    struct Chain {
        bool in_kernel = false;  // there when the table was read
        bool exists = false;     // there now, as this transaction leaves it
        bool loaded = false;     // rows hold all its rules; otherwise only those added here
        std::vector<Row> rows;
        std::size_t added_at_top = 0;  // not loaded: how many of rows go before the kernel's
        std::optional<nft::ChainInfo> info;  // its handle and use count when it was looked up
        bool touched = false;                // this transaction changed it or the jumps to it
        std::vector<std::uint64_t> deleted;  // not loaded: rules deleted here, by handle
    };

    // How many handles after a chain's own rules are looked at for the jumps to it.
    static constexpr std::uint64_t kJumpWindow = 32;

    // The rules of `c` that jump to chain `x`, found without reading `c` (a node's thousands of
    // attachments): x's use count, less its own rules, is the number of rules that jump to it
    // (docs/compatibility.md, "Deleting a jump without reading its chain"), and a transaction that
    // made x and then the jumps to it gave them the table's next handles. When the rules of `c`
    // at those handles are that many jumps to x, they are all of them; otherwise (x jumped to
    // from elsewhere, jumps made by separate transactions, x or `c` changed in this one) nullopt,
    // and the caller reads `c`. So does a `c` of no more rules than the window (POSTROUTING on a
    // node without ipMasq): reading it costs no more than the probe would.
    Result<std::optional<std::vector<Row>>> jumps_by_handle(const std::string& c, const std::string& x) {
        Chain& to = chain(x);
        Chain& from = chain(c);
        if (!to.info || to.touched || from.loaded || !from.rows.empty() || !from.deleted.empty() || !from.info ||
            from.info->use <= kJumpWindow)
            return std::optional<std::vector<Row>>{};
        CNI_TRY_ASSIGN(auto* own, loaded_rows(x));  // an attachment's chain: a few rules
        if (to.info->use < own->size()) return std::optional<std::vector<Row>>{};
        const std::uint64_t references = to.info->use - own->size();
        std::vector<Row> jumps;
        if (references == 0) return std::optional(std::move(jumps));
        std::uint64_t after = to.info->handle;
        for (auto& row : *own) after = std::max(after, row.handle);
        // The kernel finds a rule by handle by walking the chain, so a handle that is not one of
        // `c`'s costs a walk of all of it: the window is asked for in growing batches (1, 2, 4, ...
        // handles), up to the last jump.
        const std::uint64_t end = after + 1 + kJumpWindow;
        std::uint64_t batch = 1;
        for (std::uint64_t next = after + 1; next < end && jumps.size() < references; next += batch, batch *= 2) {
            batch = std::min(batch, end - next);
            std::vector<std::uint64_t> handles(batch);
            std::iota(handles.begin(), handles.end(), next);
            CNI_TRY_ASSIGN(auto found, nft::rules_by_handle(family_, table_, c, handles));
            for (auto& d : found) {
                Row row{d.handle, describe(codec_, d)};
                if (row.listed.rule.target == x) jumps.push_back(std::move(row));
            }
        }
        if (jumps.size() != references) return std::optional<std::vector<Row>>{};
        return std::optional(std::move(jumps));
    }

    // A failed read makes the transaction fail at commit (and rules() at once), never a guess.
    void remember(const Error& e) const {
        if (!read_error_) read_error_ = e;
    }

    Chain& chain(const std::string& c) const {
        if (auto it = known_.find(c); it != known_.end()) return it->second;
        Chain ch;
        if (all_listed_) {
            // every chain of the table is known already: this one is not there
        } else if (auto found = nft::chain_info(family_, table_, c)) {
            ch.in_kernel = ch.exists = found->has_value();
            ch.info = *found;
        } else {
            remember(found.error());
        }
        return known_.emplace(c, std::move(ch)).first->second;
    }

    Result<std::vector<Row>*> loaded_rows(const std::string& c) const {
        if (read_error_) return cni::Unexpected(*read_error_);
        Chain& ch = chain(c);
        if (!ch.loaded && ch.in_kernel) {
            std::vector<Row> rows(ch.rows.begin(), ch.rows.begin() + std::ptrdiff_t(ch.added_at_top));
            CNI_TRY(nft::for_each_rule(
                family_, table_, c,
                [&](nft::ListedRule&& d) {
                    if (std::ranges::find(ch.deleted, d.handle) == ch.deleted.end()) rows.push_back(Row{d.handle, describe(codec_, d)});
                },
                [&] { rows.resize(ch.added_at_top); }));
            std::move(ch.rows.begin() + std::ptrdiff_t(ch.added_at_top), ch.rows.end(), std::back_inserter(rows));
            ch.rows = std::move(rows);
        }
        ch.loaded = true, ch.added_at_top = 0;
        return &ch.rows;
    }

    void mark_made(const std::string& c) {
        Chain& ch = chain(c);
        ch.exists = true;
        if (!ch.in_kernel) ch.loaded = true;
    }

    std::string name(const std::string& chain) const {
        return std::string(family_ == nft::Family::ip ? "ip " : "ip6 ") + table_ + "/" + chain;
    }

    Status require_chain(const std::string& c) const {
        if (read_error_) return cni::Unexpected(*read_error_);
        if (!has_chain(c)) return read_error_ ? Status(cni::Unexpected(*read_error_)) : fail("iptables-nft: no chain " + c + " in table " + table_);
        return {};
    }

    Status ensure_table() {
        if (!table_exists_) {
            CNI_TRY_ASSIGN(bool there, nft::has_table(family_, table_));
            table_exists_ = there;
        }
        if (!*table_exists_) {
            batch_.add_table(family_, table_, "");
            table_exists_ = true;
        }
        return {};
    }

    // A built-in chain exists once a rule goes into it, as iptables-nft makes it.
    Status ensure_chain_for_rule(const std::string& c) {
        if (chain(c).exists) return {};
        const Builtin* b = builtin(table_, c);
        if (!b) return require_chain(c);
        CNI_TRY(ensure_table());
        batch_.add_chain(family_, table_, c, nft::Hook{b->hook, b->priority, chain_type(table_, c), true});
        mark_made(c);
        return {};
    }

    // Whether `c` may already hold `r`. A jump to a chain the kernel did not have when the table
    // was read can only be among the rules added in this transaction, so then the chain's own
    // rules (a node's thousands of attachments) are not read.
    // A jump to a small chain that the kernel had (an admin chain that CNI-FORWARD's thousands of
    // rules start with) is looked for among the jumps to it, found by handle (jumps_by_handle),
    // when that is conclusive.
    Result<bool> holds(const std::string& c, const IptRule& r) {
        Chain& ch = chain(c);
        auto same = [&](const Row& row) { return !row.listed.foreign && row.listed.rule == r; };
        if (is_chain_target(r.target) && !chain(r.target).in_kernel) return std::ranges::any_of(ch.rows, same);
        if (is_chain_target(r.target) && !ch.loaded && chain(r.target).info && chain(r.target).info->use <= kJumpWindow) {
            CNI_TRY_ASSIGN(auto jumps, jumps_by_handle(c, r.target));
            if (jumps) return std::ranges::any_of(*jumps, same);
        }
        CNI_TRY_ASSIGN(auto* rows, loaded_rows(c));
        return std::ranges::any_of(*rows, same);
    }

    // Adds `r` to `c`, at the top or the end; when `unique`, only if `c` does not hold it yet.
    Status add_rule(const std::string& c, const IptRule& r, bool at_top, bool unique) {
        CNI_TRY(ensure_chain_for_rule(c));
        if (unique) {
            CNI_TRY_ASSIGN(bool there, holds(c, r));
            if (there) return {};
        }
        auto probe = [this](bool target, const char* xt, std::uint8_t rev) {
            std::string key = (target ? "t:" : "m:") + std::string(xt) + "/" + std::to_string(rev);
            auto it = revisions_.find(key);
            if (it == revisions_.end()) it = revisions_.emplace(key, nft::has_xt_revision(family_, target, xt, rev)).first;
            return it->second;
        };
        nft::RulePlacement placement{at_top, r.proto ? std::optional<std::uint32_t>(std::uint32_t(r.proto)) : std::nullopt};
        batch_.add_rule(family_, table_, c, expressions(codec_, r, probe), "", placement);
        if (is_chain_target(r.target)) chain(r.target).touched = true;
        Chain& ch = chain(c);
        ch.touched = true;
        Row row{0, {r, false}};
        if (at_top) {
            ch.rows.insert(ch.rows.begin(), std::move(row));
            if (!ch.loaded) ++ch.added_at_top;
        } else {
            ch.rows.push_back(std::move(row));
        }
        return {};
    }

    nft::Family family_;
    std::string table_;
    const detail::XtCodec& codec_;
    mutable std::map<std::string, Chain> known_;  // the chains named so far
    mutable bool all_listed_ = false;              // known_ holds every chain of the table
    mutable std::optional<Error> read_error_;
    std::optional<bool> table_exists_;
    nft::Batch batch_;
    std::map<std::string, bool> revisions_;
    bool keep_handles_ = false;                  // keep_added_handles()
    std::vector<nft::Batch::Added> committed_;   // what the last commit added, with handles
};

// What the `iptables` at `path` is: by the name it resolves to, else by its --version
// ("iptables v1.8.9 (nf_tables)").
bool is_nft_binary(const std::string& path) {
    char real[PATH_MAX];
    std::string resolved = ::realpath(path.c_str(), real) ? real : path;
    std::string name = resolved.substr(resolved.rfind('/') + 1);
    if (name.find("nft") != std::string::npos) return true;
    if (name.find("legacy") != std::string::npos) return false;
    auto out = os::run_program(os::Program{path, {"--version"}, {}, {}, {}});
    return out && out->ok() && out->out.find("(nf_tables)") != std::string::npos;
}

}  // namespace

Result<std::vector<std::string>> absent_nft_parts(Family family, const std::string& table, std::span<const char* const> chains) {
    const nft::Family f = nft_family(family);
    std::vector<std::string> out;
    CNI_TRY_ASSIGN(bool there, nft::has_table(f, table));
    if (!there) out.push_back(table);
    for (const char* c : chains) {
        std::optional<nft::ChainInfo> info;
        if (there) CNI_TRY_ASSIGN(info, nft::chain_info(f, table, c));
        if (!info) out.push_back(table + "/" + c);
    }
    return out;
}

Status remove_empty_nft_parts(Family family, std::span<const std::string> parts) {
    const nft::Family f = nft_family(family);
    // Each table named, with whether it is itself among the parts, and its built-in chains named.
    std::map<std::string, std::pair<bool, std::vector<std::string>>> tables;
    for (auto& p : parts) {
        const auto slash = p.find('/');
        const std::string table = p.substr(0, slash);
        if (table != "nat" && table != "filter" && table != "mangle") continue;
        if (slash == std::string::npos) tables[table].first = true;
        else if (builtin(table, p.substr(slash + 1))) tables[table].second.push_back(p.substr(slash + 1));
    }
    return nft::transact("iptables-nft: removing the empty tables and chains it made", [&](nft::Batch& tx) -> Status {
        for (auto& [table, made] : tables) {
            CNI_TRY_ASSIGN(auto use, nft::table_use(f, table));
            if (!use) continue;
            std::uint32_t left = *use;
            for (auto& c : made.second) {
                CNI_TRY_ASSIGN(auto info, nft::chain_info(f, table, c));
                // A chain whose policy another program has set to drop since is not ours to delete.
                if (!info || info->use != 0 || !info->accepts) continue;
                tx.delete_chain(f, table, c);
                --left;
            }
            if (made.first && left == 0) tx.delete_table(f, table);
        }
        return {};
    });
}

namespace detail {

Result<std::unique_ptr<IptTable::Impl>> open_xtables_nft(Family family, const std::string& table) {
    auto impl = std::make_unique<XtNftImpl>(family, table);
    CNI_TRY(impl->load());
    return std::unique_ptr<IptTable::Impl>(std::move(impl));
}

}  // namespace detail

Variant node_variant() {
    const char* path = std::getenv("PATH");
    auto iptables = os::look_path("iptables", path ? path : "");
    if (iptables ? !is_nft_binary(*iptables) : legacy_rules_present()) return Variant::legacy;
    return nft::available() ? Variant::nft : Variant::legacy;
}

}  // namespace cni::fw
