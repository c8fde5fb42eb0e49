// SPDX-License-Identifier: Apache-2.0
// The allocation, release and GC of cluster-ipam (allocator.hpp; docs/cluster-ipam.md). An ADD
// first plans on what it knows (the node cache's blocks, or one read of the pools), then sends
// ONE txn comparing every block it changes and the handle's absence; when a compare fails the
// txn's failure branch returns the current values, so the retry plans again without another read.
#include "applets/cluster_ipam/allocator.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace cni::cluster_ipam {
namespace {

constexpr int kAttempts = 64;

struct BlockView {
    std::int64_t rev = 0;
    Block block;
};
struct PoolView {
    bool complete = false;  // read whole: an index not in blocks is free
    std::int64_t meta_rev = 0;
    std::string meta;
    std::map<net::U128, BlockView> blocks;
};
using Views = std::map<std::string, PoolView>;

Op range_op(const std::string& key, const std::string& end = {}) { return Op{Op::Kind::range, key, {}, end, 0}; }
Op put_op(const std::string& key, const std::string& value) { return Op{Op::Kind::put, key, value, {}, 0}; }
Op del_op(const std::string& key) { return Op{Op::Kind::del, key, {}, {}, 0}; }
Compare rev_is(const std::string& key, std::int64_t rev) { return Compare{key, Compare::Target::mod_revision, rev, {}}; }

// The pool id and block id of a block key, when it is one: `pools/<pool>/blocks/<block>` right
// under the prefix, neither id holding a '/' (a config whose prefix lies inside this one's pools
// puts longer keys there, which are not this prefix's blocks).
std::optional<std::pair<std::string, std::string>> split_block_key(const Keys& k, std::string_view key) {
    if (!key.starts_with(k.pools())) return std::nullopt;
    key.remove_prefix(k.pools().size());
    auto slash = key.find("/blocks/");
    if (slash == std::string_view::npos) return std::nullopt;
    auto pool = key.substr(0, slash), block = key.substr(slash + 8);
    if (pool.empty() || block.empty() || pool.find('/') != std::string_view::npos || block.find('/') != std::string_view::npos)
        return std::nullopt;
    return std::pair{std::string(pool), std::string(block)};
}

// The block index of a key of pool `g`, when it is one of its blocks.
std::optional<net::U128> block_index(const Keys& k, const PoolGeometry& g, std::string_view key) {
    auto ids = split_block_key(k, key);
    if (!ids || ids->first != g.id) return std::nullopt;
    return g.parse_block_id(ids->second);
}

// A block's value, an error naming its key when it cannot be read.
Result<Block> decode_block_at(const std::string& text, const std::string& key) {
    auto b = decode_block(text);
    if (!b) return cni::Unexpected(b.error().context(key));
    return b;
}

const PoolGeometry* find_pool(const std::vector<SetPlan>& sets, const std::string& id) {
    for (const auto& s : sets)
        for (const auto& g : s.pools)
            if (g.id == id) return &g;
    return nullptr;
}

// A pool read whole (its meta and blocks) into a view; a block that cannot be read stops the call.
Result<PoolView> read_view(const Call& c, const PoolGeometry& g, const std::vector<KeyValue>& kvs) {
    PoolView v;
    v.complete = true;
    for (const auto& kv : kvs) {
        if (kv.key == c.keys.meta(g.id)) {
            v.meta_rev = kv.mod_revision;
            v.meta = kv.value;
            if (v.meta != g.meta())
                return fail(code::invalid_config, "cluster-ipam: pool " + g.id + " is kept in the store with " + v.meta +
                                                      ", this config asks {\"blockSize\":" + std::to_string(g.block_prefix) +
                                                      "}: every network on one subnet must use one block size");
            continue;
        }
        auto idx = block_index(c.keys, g, kv.key);
        if (!idx) continue;
        CNI_TRY_ASSIGN(auto b, decode_block_at(kv.value, kv.key));
        v.blocks[*idx] = BlockView{kv.mod_revision, std::move(b)};
    }
    return v;
}

// The first ordinal of the block, after its last one, that the set may hand out and no one holds.
std::optional<std::uint32_t> free_ordinal(const PoolGeometry& g, net::U128 idx, const Block& b) {
    const std::uint32_t n = g.block_size();
    if (b.allocations.size() >= n) return std::nullopt;
    const std::uint32_t start = std::uint32_t((b.last + 1) % n);
    for (std::uint32_t i = 0; i < n; ++i) {
        const std::uint32_t o = (start + i) % n;
        if (!b.allocations.contains(o) && g.usable(idx, o)) return o;
    }
    return std::nullopt;
}

bool expired(const Call& c, const Block& b) { return b.allocations.empty() && b.last_write + c.grace <= c.now; }

// The block a key-value under the prefix holds, when its key is a block's and its value reads.
std::optional<Block> block_of(const Keys& k, const KeyValue& kv) {
    if (!split_block_key(k, kv.key)) return std::nullopt;
    auto b = decode_block(kv.value);
    return b ? std::optional<Block>(std::move(*b)) : std::nullopt;
}

// The node cache's entries a call may plan on: keys of this prefix's blocks whose value is a block
// of this node. The file is only a hint, and what it holds is read again as a stranger's.
std::map<std::string, KeyValue> cached_blocks(const Call& c) {
    std::map<std::string, KeyValue> out;
    if (!c.cache) return out;
    for (auto& [key, kv] : c.cache->load()) {
        auto b = block_of(c.keys, kv);
        if (b && b->node == c.node && kv.key == key) out.emplace(key, std::move(kv));
    }
    return out;
}

std::uint64_t node_hash(const std::string& s) {
    std::uint64_t h = 14695981039346656037ull;
    for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
    return h;
}

// One ADD's plan: the blocks it changes (value as planned, mod_revision compared), the pools
// whose meta it compares (a claim), and the addresses chosen.
struct Change {
    std::string pool;
    net::U128 index = 0;
    std::int64_t rev = 0;
    Block block;
};
struct Plan {
    std::map<std::string, Change> changes;  // by block key
    std::set<std::string> claimed_pools;
    std::vector<Held> held;
};

enum class Pick { done, need_read, exhausted };

class Adder {
public:
    Adder(const Call& c, const std::vector<SetPlan>& sets, std::string id)
        : c_(c), sets_(sets), id_(std::move(id)), handle_key_(c.keys.handle(id_)) {}

    Result<std::vector<IpConfig>> run() {
        load_cache();
        for (int attempt = 0; attempt < kAttempts; ++attempt) {
            Plan plan;
            bool need_read = false;
            for (const auto& s : sets_) {
                auto p = pick(s, plan);
                if (p == Pick::need_read) {
                    need_read = true;
                    break;
                }
                if (p == Pick::exhausted)
                    return fail("no IP addresses available in range set: " + s.name + " (cluster-ipam: every block is full)");
            }
            std::optional<Handle> existing;
            if (need_read) CNI_TRY_ASSIGN(existing, read_all());
            else CNI_TRY_ASSIGN(existing, commit(plan));
            if (existing) return ips_of(*existing);
            if (!need_read && committed_) return ips_of(Handle{c_.node, plan.held, c_.config});
        }
        return fail(code::try_again_later, "cluster-ipam: the pool's blocks changed under " + std::to_string(kAttempts) +
                                               " attempts in a row; try again");
    }

private:
    static std::vector<IpConfig> ips_of(const Handle& h) {
        std::vector<IpConfig> out;
        for (const auto& a : h.addresses) out.push_back(a.ip);
        return out;
    }

    void load_cache() {
        for (const auto& s : sets_)
            for (const auto& g : s.pools) views_[g.id];
        for (const auto& [key, kv] : cached_blocks(c_)) {
            const auto* g = find_pool(sets_, split_block_key(c_.keys, key)->first);
            auto idx = g ? block_index(c_.keys, *g, key) : std::nullopt;
            if (idx) views_[g->id].blocks[*idx] = BlockView{kv.mod_revision, *block_of(c_.keys, kv)};
        }
    }

    // The block as this plan leaves it so far.
    const Block* current(const Plan& plan, const PoolGeometry& g, net::U128 idx) const {
        if (auto it = plan.changes.find(c_.keys.blocks(g.id) + g.block_id(idx)); it != plan.changes.end()) return &it->second.block;
        const auto& v = views_.at(g.id);
        auto it = v.blocks.find(idx);
        return it == v.blocks.end() ? nullptr : &it->second.block;
    }

    void take(Plan& plan, const PoolGeometry& g, net::U128 idx, std::uint32_t ord, bool claim) {
        const std::string key = c_.keys.blocks(g.id) + g.block_id(idx);
        auto it = plan.changes.find(key);
        if (it == plan.changes.end()) {
            const auto& v = views_.at(g.id);
            auto b = v.blocks.find(idx);
            Change ch{g.id, idx, b == v.blocks.end() ? 0 : b->second.rev, b == v.blocks.end() ? Block{} : b->second.block};
            it = plan.changes.emplace(key, std::move(ch)).first;
        }
        Block& b = it->second.block;
        if (claim) {
            b.node = c_.node;
            plan.claimed_pools.insert(g.id);
        }
        b.allocations[ord] = id_;
        b.last = ord;
        if (b.node == c_.node) b.last_write = c_.now;
        const auto& r = *std::ranges::find_if(g.ranges, [&](const ipam::Range& r) { return r.contains(g.address(idx, ord)); });
        plan.held.push_back(Held{key, ord, IpConfig{std::nullopt, r.with_prefix(g.address(idx, ord)), r.gateway}});
    }

    Pick pick(const SetPlan& s, Plan& plan) {
        // This node's own blocks first.
        for (const auto& g : s.pools)
            for (const auto& [idx, bv] : views_.at(g.id).blocks) {
                const Block* b = current(plan, g, idx);
                if (idx < g.first_block || idx > g.last_block || b->node != c_.node) continue;
                if (auto o = free_ordinal(g, idx, *b)) return take(plan, g, idx, *o, false), Pick::done;
            }
        if (std::ranges::any_of(s.pools, [&](const PoolGeometry& g) { return !views_.at(g.id).complete; })) return Pick::need_read;
        // A free block (or one left empty past its grace period), from a place that depends on
        // the node, so that nodes claiming at once seldom race for one block.
        for (const auto& g : s.pools) {
            const auto& v = views_.at(g.id);
            const net::U128 count = g.last_block - g.first_block + 1;
            const net::U128 start = node_hash(c_.node) % count;
            const net::U128 tries = std::min<net::U128>(count, v.blocks.size() + 65536);
            for (net::U128 i = 0; i < tries; ++i) {
                const net::U128 idx = g.first_block + (start + i) % count;
                const Block* b = current(plan, g, idx);
                if (b && (b->node == c_.node || !expired(c_, *b))) continue;
                if (auto o = free_ordinal(g, idx, [&] {
                    Block fresh;
                    fresh.last = b ? b->last : -1;
                    return fresh;
                }()))
                    return take(plan, g, idx, *o, true), Pick::done;
            }
        }
        // Borrow a free address in another node's block.
        for (const auto& g : s.pools)
            for (const auto& [idx, bv] : views_.at(g.id).blocks) {
                const Block* b = current(plan, g, idx);
                if (idx < g.first_block || idx > g.last_block) continue;
                if (auto o = free_ordinal(g, idx, *b)) return take(plan, g, idx, *o, false), Pick::done;
            }
        return Pick::exhausted;
    }

    std::optional<Handle> handle_in(const std::vector<KeyValue>& kvs, Status& bad) {
        if (kvs.empty()) return std::nullopt;
        auto h = decode_handle(kvs[0].value);
        if (!h) bad = cni::Unexpected(h.error().context(handle_key_));
        return h ? std::optional<Handle>(std::move(*h)) : std::nullopt;
    }

    // One txn of reads: the handle and every pool whole.
    Result<std::optional<Handle>> read_all() {
        std::vector<Op> ops{range_op(handle_key_)};
        std::vector<const PoolGeometry*> order;
        for (const auto& s : sets_)
            for (const auto& g : s.pools)
                if (std::ranges::find(order, &g) == order.end() &&
                    std::ranges::none_of(order, [&](const PoolGeometry* o) { return o->id == g.id; })) {
                    order.push_back(&g);
                    ops.push_back(range_op(c_.keys.pool(g.id), prefix_end(c_.keys.pool(g.id))));
                }
        CNI_TRY_ASSIGN(auto r, c_.kv.txn({}, ops, {}));
        Status bad;
        auto h = handle_in(r.ranges.at(0), bad);
        CNI_TRY(bad);
        if (h) return h;
        for (std::size_t i = 0; i < order.size(); ++i) CNI_TRY_ASSIGN(views_[order[i]->id], read_view(c_, *order[i], r.ranges.at(i + 1)));
        return std::nullopt;
    }

    // The plan's one txn. On success committed_ is set; on a failed compare the views take the
    // values the failure branch read, and the handle is returned when it exists.
    Result<std::optional<Handle>> commit(const Plan& plan) {
        std::vector<Compare> cmp{rev_is(handle_key_, 0)};
        std::vector<Op> ok, no{range_op(handle_key_)};
        for (const auto& [key, ch] : plan.changes) {
            cmp.push_back(rev_is(key, ch.rev));
            ok.push_back(put_op(key, encode(ch.block)));
            no.push_back(range_op(key));
        }
        for (const auto& pool : plan.claimed_pools) {
            const auto& v = views_.at(pool);
            const std::string meta = find_pool(sets_, pool)->meta();
            if (v.meta_rev == 0) {
                cmp.push_back(rev_is(c_.keys.meta(pool), 0));
                ok.push_back(put_op(c_.keys.meta(pool), meta));
            } else {
                cmp.push_back(Compare{c_.keys.meta(pool), Compare::Target::value, 0, meta});
            }
            no.push_back(range_op(c_.keys.meta(pool)));
        }
        ok.push_back(put_op(handle_key_, encode(Handle{c_.node, plan.held, c_.config})));
        CNI_TRY_ASSIGN(auto r, c_.kv.txn(cmp, ok, no));
        if (r.succeeded) {
            for (const auto& [key, ch] : plan.changes) views_[ch.pool].blocks[ch.index] = BlockView{r.revision, ch.block};
            committed_ = true;
            save_cache();
            return std::nullopt;
        }
        Status bad;
        auto h = handle_in(r.ranges.at(0), bad);
        CNI_TRY(bad);
        if (h) return h;
        std::size_t i = 1;
        for (const auto& [key, ch] : plan.changes) {
            auto& v = views_[ch.pool];
            const auto& got = r.ranges.at(i++);
            if (got.empty()) {
                v.blocks.erase(ch.index);
                continue;
            }
            CNI_TRY_ASSIGN(auto b, decode_block_at(got[0].value, key));
            v.blocks[ch.index] = BlockView{got[0].mod_revision, std::move(b)};
        }
        for (const auto& pool : plan.claimed_pools) {
            const auto& got = r.ranges.at(i++);
            const auto* g = find_pool(sets_, pool);
            if (!got.empty()) CNI_TRY(read_view(c_, *g, got));  // refuses another block size
            views_[pool].meta_rev = got.empty() ? 0 : got[0].mod_revision;
        }
        return std::nullopt;
    }

    void save_cache() const {
        if (!c_.cache) return;
        std::map<std::string, KeyValue> own;
        for (const auto& s : sets_)
            for (const auto& g : s.pools)
                for (const auto& [idx, bv] : views_.at(g.id).blocks)
                    if (bv.block.node == c_.node) {
                        const std::string key = c_.keys.blocks(g.id) + g.block_id(idx);
                        own[key] = KeyValue{key, encode(bv.block), 0, bv.rev, 0};
                    }
        c_.cache->save(own);
    }

    const Call& c_;
    const std::vector<SetPlan>& sets_;
    std::string id_, handle_key_;
    Views views_;
    bool committed_ = false;
};

// The values of `keys`, read in one txn: nothing for an absent one.
Result<std::vector<std::optional<KeyValue>>> read_keys(Kv& kv, const std::vector<std::string>& keys) {
    std::vector<Op> ops;
    for (const auto& k : keys) ops.push_back(range_op(k));
    CNI_TRY_ASSIGN(auto r, kv.txn({}, ops, {}));
    std::vector<std::optional<KeyValue>> out;
    for (auto& got : r.ranges) out.push_back(got.empty() ? std::nullopt : std::optional<KeyValue>(std::move(got[0])));
    return out;
}

// Releases a handle read at revision `rev`: one txn deleting it and taking its ordinals out of
// its blocks, retried on the values the failure branch returns.
Status release_read(const Call& c, const std::string& id, const Handle& h, std::int64_t rev) {
    std::vector<std::string> blocks;
    for (const auto& a : h.addresses)
        if (std::ranges::find(blocks, a.block) == blocks.end()) blocks.push_back(a.block);
    std::map<std::string, KeyValue> known = cached_blocks(c);
    std::vector<std::optional<KeyValue>> values;
    if (std::ranges::all_of(blocks, [&](const std::string& b) { return known.contains(b); })) {
        for (const auto& b : blocks) values.push_back(known[b]);
    } else {
        CNI_TRY_ASSIGN(values, read_keys(c.kv, blocks));
    }
    const std::string key = c.keys.handle(id);
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
        std::vector<Compare> cmp{rev_is(key, rev)};
        std::vector<Op> ok{del_op(key)}, no{range_op(key)};
        std::vector<std::pair<std::string, Block>> written;
        for (std::size_t i = 0; i < blocks.size(); ++i) {
            cmp.push_back(rev_is(blocks[i], values[i] ? values[i]->mod_revision : 0));
            no.push_back(range_op(blocks[i]));
            if (!values[i]) continue;
            CNI_TRY_ASSIGN(auto b, decode_block_at(values[i]->value, blocks[i]));
            for (const auto& a : h.addresses)
                if (a.block == blocks[i] && b.allocations.contains(a.ordinal) && b.allocations[a.ordinal] == id) b.allocations.erase(a.ordinal);
            if (b.node == c.node) b.last_write = c.now;
            ok.push_back(put_op(blocks[i], encode(b)));
            written.emplace_back(blocks[i], std::move(b));
        }
        CNI_TRY_ASSIGN(auto r, c.kv.txn(cmp, ok, no));
        if (r.succeeded) {
            if (c.cache) {
                bool changed = false;
                for (auto& [bk, b] : written)
                    if (b.node == c.node) {
                        known[bk] = KeyValue{bk, encode(b), 0, r.revision, 0};
                        changed = true;
                    }
                if (changed) c.cache->save(known);
            }
            return {};
        }
        if (r.ranges.at(0).empty() || r.ranges[0][0].mod_revision != rev) return {};  // released (or replaced) meanwhile
        for (std::size_t i = 0; i < blocks.size(); ++i)
            values[i] = r.ranges.at(i + 1).empty() ? std::nullopt : std::optional<KeyValue>(r.ranges[i + 1][0]);
    }
    return fail(code::try_again_later, "cluster-ipam: the blocks of " + id + " changed under every attempt; try again");
}

// The pools' keys read whole in one txn: pool id -> its key-values.
Result<std::map<std::string, std::vector<KeyValue>>> read_pools(const Call& c, const std::vector<std::string>& ids) {
    std::vector<Op> ops;
    for (const auto& id : ids) ops.push_back(range_op(c.keys.pool(id), prefix_end(c.keys.pool(id))));
    CNI_TRY_ASSIGN(auto r, c.kv.txn({}, ops, {}));
    std::map<std::string, std::vector<KeyValue>> out;
    for (std::size_t i = 0; i < ids.size(); ++i) out[ids[i]] = std::move(r.ranges.at(i));
    return out;
}

std::vector<std::string> pool_ids(const std::vector<SetPlan>& sets) {
    std::vector<std::string> ids;
    for (const auto& s : sets)
        for (const auto& g : s.pools)
            if (std::ranges::find(ids, g.id) == ids.end()) ids.push_back(g.id);
    return ids;
}

// May GC of this config release the handle? Only one this config made: its digest, and each
// address in a block of this config's pools, at its ordinal, in one of its ranges
// (docs/cluster-ipam.md, Networks of one name).
bool made_here(const Call& c, const std::vector<SetPlan>& sets, const Handle& h) {
    auto in_ranges = [&](const Held& a) {
        for (const auto& s : sets)
            for (const auto& g : s.pools) {
                auto idx = block_index(c.keys, g, a.block);
                if (idx && a.ordinal < g.block_size() && g.address(*idx, a.ordinal) == a.ip.address.ip &&
                    std::ranges::any_of(g.ranges, [&](const ipam::Range& r) { return r.contains(a.ip.address.ip); }))
                    return true;
            }
        return false;
    };
    return h.config == c.config && std::ranges::all_of(h.addresses, in_ranges);
}

}  // namespace

Result<std::vector<IpConfig>> allocate(const Call& c, const std::vector<SetPlan>& sets, const std::string& handle) {
    return Adder(c, sets, handle).run();
}

Result<std::optional<Handle>> lookup(const Call& c, const std::string& handle) {
    CNI_TRY_ASSIGN(auto got, read_keys(c.kv, {c.keys.handle(handle)}));
    if (!got.at(0)) return std::nullopt;
    CNI_TRY_ASSIGN(auto h, decode_handle(got[0]->value));
    return h;
}

Status release(const Call& c, const std::string& handle) {
    CNI_TRY_ASSIGN(auto got, read_keys(c.kv, {c.keys.handle(handle)}));
    if (!got.at(0)) return {};
    CNI_TRY_ASSIGN(auto h, decode_handle(got[0]->value));
    return release_read(c, handle, h, got[0]->mod_revision);
}

Result<Collected> collect(const Call& c, const std::string& network, const std::vector<SetPlan>& sets,
                          const std::vector<net::Attachment>& valid) {
    const std::string names = handles_of(c.node, network), mine = c.keys.handles() + names;
    const auto ids = pool_ids(sets);
    std::vector<Op> ops{range_op(mine, prefix_end(mine))};
    for (const auto& id : ids) ops.push_back(range_op(c.keys.pool(id), prefix_end(c.keys.pool(id))));
    CNI_TRY_ASSIGN(auto r, c.kv.txn({}, ops, {}));
    std::set<std::string> valid_ids, handles;
    for (const auto& a : valid) valid_ids.insert(handle_id(c.node, network, a.container_id, a.ifname));
    // A handle's name is names + "containerID/ifname"; a longer key is another prefix's (nested in this one).
    auto name_of = [&](const KeyValue& kv) {
        std::string id = kv.key.substr(c.keys.handles().size());
        return std::ranges::count(std::string_view(id).substr(names.size()), '/') == 1 ? id : std::string();
    };
    Collected done;
    for (const auto& kv : r.ranges.at(0)) {
        const std::string id = name_of(kv);
        auto h = decode_handle(kv.value);
        if (id.empty() || !h || h->node != c.node || valid_ids.contains(id)) continue;
        if (!made_here(c, sets, *h)) {
            ++done.others;
            continue;
        }
        CNI_TRY(release_read(c, id, *h, kv.mod_revision));
        ++done.released;
    }
    if (done.released) CNI_TRY_ASSIGN(r, c.kv.txn({}, ops, {}));  // the blocks as the releases left them
    for (const auto& kv : r.ranges.at(0)) handles.insert(kv.key.substr(c.keys.handles().size()));
    // This node's blocks: allocations of this node's and network's handles without their handle
    // (the read was one revision, so an ADD's handle and allocation are both in it or both not),
    // and blocks empty for longer than the grace period. A txn that finds the block changed leaves
    // it to the next GC.
    for (std::size_t i = 0; i < ids.size(); ++i) {
        const auto* g = find_pool(sets, ids[i]);
        for (const auto& kv : r.ranges.at(i + 1)) {
            if (!block_index(c.keys, *g, kv.key)) continue;
            auto b = decode_block(kv.value);
            if (!b || b->node != c.node) continue;
            bool orphans = false;
            for (auto it = b->allocations.begin(); it != b->allocations.end();) {
                const bool orphan = it->second.starts_with(names) && !handles.contains(it->second);
                orphans = orphans || orphan;
                it = orphan ? b->allocations.erase(it) : std::next(it);
            }
            if (b->allocations.empty() && b->last_write + c.grace <= c.now)
                CNI_TRY(c.kv.txn({rev_is(kv.key, kv.mod_revision)}, {del_op(kv.key)}, {}));
            else if (orphans)
                CNI_TRY(c.kv.txn({rev_is(kv.key, kv.mod_revision)}, {put_op(kv.key, encode(*b))}, {}));
        }
    }
    return done;
}

Status check_free(const Call& c, const std::vector<SetPlan>& sets) {
    CNI_TRY_ASSIGN(auto pools, read_pools(c, pool_ids(sets)));
    for (const auto& s : sets) {
        bool any = false;
        for (const auto& g : s.pools) {
            CNI_TRY_ASSIGN(auto v, read_view(c, g, pools[g.id]));
            for (net::U128 idx = g.first_block; !any && idx <= g.last_block && idx - g.first_block < 65536; ++idx) {
                auto it = v.blocks.find(idx);
                any = free_ordinal(g, idx, it == v.blocks.end() || expired(c, it->second.block) ? Block{} : it->second.block).has_value();
            }
            for (const auto& [idx, bv] : v.blocks) any = any || (idx >= g.first_block && idx <= g.last_block && free_ordinal(g, idx, bv.block));
        }
        if (!any) return fail(code::plugin_not_available, "cluster-ipam: no IP addresses available in range set: " + s.name);
    }
    return {};
}

Result<std::string> show(const Call& c) {
    CNI_TRY_ASSIGN(auto r, c.kv.range(c.keys.pools(), prefix_end(c.keys.pools())));
    struct Use {
        int blocks = 0;
        std::uint64_t used = 0, unallocated = 0;
    };
    std::map<std::string, std::map<std::string, Use>> by_pool;
    for (const auto& kv : r) {
        auto split = split_block_key(c.keys, kv.key);
        if (!split) continue;
        auto dash = split->second.rfind('-');
        auto ip = net::IpAddr::parse(split->second.substr(0, dash == std::string::npos ? 0 : dash));
        auto b = decode_block(kv.value);
        if (!ip || !b) continue;
        const int prefix = std::atoi(split->second.c_str() + dash + 1);
        const std::uint64_t size = std::uint64_t(1) << std::min(ip->bits() - prefix, 63);
        auto& u = by_pool[split->first][b->node];
        u.blocks++;
        u.used += b->allocations.size();
        u.unallocated += size - b->allocations.size();
    }
    std::string out;
    for (const auto& [pool, nodes] : by_pool) {
        out += "pool " + pool + "\n";
        for (const auto& [node, u] : nodes)
            out += "  node " + node + ": " + std::to_string(u.blocks) + " blocks, " + std::to_string(u.used) + " used, " +
                   std::to_string(u.unallocated) + " unallocated\n";
    }
    return out.empty() ? std::string("no pools under " + c.keys.prefix + "\n") : out;
}

Result<std::string> release_node(const Call& c, const std::string& node, bool force) {
    const std::string theirs = c.keys.node_handles(node);
    std::vector<Op> ops{range_op(theirs, prefix_end(theirs)), range_op(c.keys.pools(), prefix_end(c.keys.pools()))};
    CNI_TRY_ASSIGN(auto r, c.kv.txn({}, ops, {}));
    std::int64_t last = 0;
    for (const auto& kv : r.ranges.at(1))
        if (auto b = block_of(c.keys, kv); b && b->node == node) last = std::max(last, b->last_write);
    if (!force && last + c.grace > c.now)
        return fail("cluster-ipam: node " + node + " wrote " + std::to_string(c.now - last) + " s ago, within the grace period of " +
                    std::to_string(c.grace) + " s: is it gone? --force releases it anyway");
    int handles = 0, blocks = 0;
    for (const auto& kv : r.ranges.at(0)) {
        auto h = decode_handle(kv.value);
        if (!h || h->node != node) continue;
        CNI_TRY(release_read(c, kv.key.substr(c.keys.handles().size()), *h, kv.mod_revision));
        ++handles;
    }
    CNI_TRY_ASSIGN(auto now, c.kv.range(c.keys.pools(), prefix_end(c.keys.pools())));
    for (const auto& kv : now) {
        auto b = block_of(c.keys, kv);
        if (!b || b->node != node || !b->allocations.empty()) continue;
        CNI_TRY_ASSIGN(auto t, c.kv.txn({rev_is(kv.key, kv.mod_revision)}, {del_op(kv.key)}, {}));
        blocks += t.succeeded;
    }
    return "node " + node + ": " + std::to_string(handles) + " handles and " + std::to_string(blocks) + " blocks released\n";
}

}  // namespace cni::cluster_ipam
