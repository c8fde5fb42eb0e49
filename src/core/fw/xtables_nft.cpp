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

const Builtin* builtin(const std::string& table, const std::string& chain) {
    auto find = [&](const auto& list) -> const Builtin* {
        for (auto& b : list)
            if (chain == b.chain) return &b;
        return nullptr;
    };
    return table == "nat" ? find(kNat) : find(kFilter);
}


// [!] -s/-d NET: the payload as long as the mask's leading whole bytes when the rest of the mask
// is zero, else the whole address and a mask.
void add_address(nft::Exprs& e, bool source, const std::optional<IpNet>& net, bool negated) {
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
    out.foreign = d.unknown || d.target.empty();
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
    if (d.xt_target && (r.target == "MARK" || r.target == "DNAT")) {
        if (auto args = codec.decode_target(*d.xt_target)) r.target_args = *args;
        else out.foreign = true;
    }
    return out;
}

class XtNftImpl final : public IptTable::Impl {
public:
    XtNftImpl(Family family, std::string table)
        : family_(nft_family(family)), table_(std::move(table)),
          codec_(family == Family::v4 ? detail::xt_codec_v4() : detail::xt_codec_v6()) {}

    Status load() {
        if (table_ != "nat" && table_ != "filter") return fail("iptables-nft: table " + table_ + " is not supported");
        auto generation = nft::generation();
        if (!generation) return fail("iptables-nft: nf_tables is not available here");
        batch_ = nft::Batch(*generation);  // commits only onto the ruleset read below
        CNI_TRY_ASSIGN(chains_, nft::list_chains(family_, table_));
        table_exists_ = !chains_.empty();
        CNI_TRY_ASSIGN(auto dumped, nft::list_rules(family_, table_));
        for (auto& d : dumped) rows_.push_back(Row{d.chain, d.handle, describe(codec_, d)});
        return {};
    }

    // Built-in chains count as present, as in the legacy tables, whether made yet or not.
    bool has_chain(const std::string& c) const override { return made(c) || builtin(table_, c); }
    std::vector<std::string> chains() const override {
        std::vector<std::string> out;
        for (auto& c : chains_)
            if (!builtin(table_, c)) out.push_back(c);
        return out;
    }
    Status create_chain(const std::string& c) override {
        if (has_chain(c)) return fail("iptables-nft: creating chain " + name(c) + ": it exists");
        ensure_table();
        batch_.add_chain(family_, table_, c);
        chains_.push_back(c);
        return {};
    }
    Status flush_chain(const std::string& c) override {
        CNI_TRY(require_chain(c));
        if (made(c)) batch_.flush_chain(family_, table_, c);
        std::erase_if(rows_, [&](const Row& r) { return r.chain == c; });
        return {};
    }
    Status delete_chain(const std::string& c) override {
        if (!made(c) || builtin(table_, c)) return fail("iptables-nft: cannot delete chain " + name(c));
        batch_.delete_chain(family_, table_, c);
        std::erase(chains_, c);
        return {};
    }
    Result<std::vector<IptTable::Listed>> rules(const std::string& c) const override {
        CNI_TRY(require_chain(c));
        std::vector<IptTable::Listed> out;
        for (auto& r : rows_)
            if (r.chain == c) out.push_back(r.listed);
        return out;
    }
    Status append_unique(const std::string& c, const IptRule& r) override { return add_unique(c, r, false); }
    Status insert_unique(const std::string& c, const IptRule& r) override { return add_unique(c, r, true); }
    Result<int> delete_if(const std::string& c, const std::string& target, const std::function<bool(const IptRule&)>& pred) override {
        CNI_TRY(require_chain(c));
        int n = 0;
        for (auto it = rows_.begin(); it != rows_.end();) {
            if (it->chain != c || it->listed.rule.target != target || (pred && !pred(it->listed.rule))) {
                ++it;
                continue;
            }
            if (it->handle == 0) return fail("iptables-nft: deleting a rule of " + name(c) + " added in the same transaction");
            batch_.delete_rule(family_, table_, c, it->handle);
            it = rows_.erase(it);
            ++n;
        }
        return n;
    }
    Status commit() override { return batch_.commit("iptables-nft: committing table " + table_); }

private:
    struct Row {
        std::string chain;
        std::uint64_t handle = 0;  // 0: added in this transaction
        IptTable::Listed listed;
    };

    bool made(const std::string& c) const { return std::ranges::find(chains_, c) != chains_.end(); }

    std::string name(const std::string& chain) const {
        return std::string(family_ == nft::Family::ip ? "ip " : "ip6 ") + table_ + "/" + chain;
    }

    Status require_chain(const std::string& c) const {
        if (!has_chain(c)) return fail("iptables-nft: no chain " + c + " in table " + table_);
        return {};
    }

    void ensure_table() {
        if (table_exists_) return;
        batch_.add_table(family_, table_, "");
        table_exists_ = true;
    }

    // A built-in chain exists once a rule goes into it, as iptables-nft makes it.
    Status ensure_chain_for_rule(const std::string& c) {
        if (made(c)) return {};
        const Builtin* b = builtin(table_, c);
        if (!b) return require_chain(c);
        ensure_table();
        batch_.add_chain(family_, table_, c, nft::Hook{b->hook, b->priority, table_ == "nat" ? "nat" : "filter", true});
        chains_.push_back(c);
        return {};
    }

    Status add_unique(const std::string& c, const IptRule& r, bool at_top) {
        CNI_TRY(ensure_chain_for_rule(c));
        if (std::ranges::any_of(rows_, [&](const Row& row) { return row.chain == c && !row.listed.foreign && row.listed.rule == r; }))
            return {};
        auto probe = [this](bool target, const char* xt, std::uint8_t rev) {
            std::string key = (target ? "t:" : "m:") + std::string(xt) + "/" + std::to_string(rev);
            auto it = revisions_.find(key);
            if (it == revisions_.end()) it = revisions_.emplace(key, nft::has_xt_revision(family_, target, xt, rev)).first;
            return it->second;
        };
        nft::RulePlacement placement{at_top, r.proto ? std::optional<std::uint32_t>(std::uint32_t(r.proto)) : std::nullopt};
        batch_.add_rule(family_, table_, c, expressions(codec_, r, probe), "", placement);
        Row row{c, 0, {r, false}};
        if (at_top) rows_.insert(std::ranges::find_if(rows_, [&](const Row& x) { return x.chain == c; }), std::move(row));
        else rows_.push_back(std::move(row));
        return {};
    }

    nft::Family family_;
    std::string table_;
    const detail::XtCodec& codec_;
    std::vector<std::string> chains_;
    bool table_exists_ = false;
    std::vector<Row> rows_;
    nft::Batch batch_;
    std::map<std::string, bool> revisions_;
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
    if (!iptables || !is_nft_binary(*iptables)) return Variant::legacy;
    return nft::available() ? Variant::nft : Variant::legacy;
}

}  // namespace cni::fw
