// SPDX-License-Identifier: Apache-2.0
// An in-memory Kv (src/applets/cluster_ipam/kv.hpp) for cluster-ipam's unit tests: one map
// under a mutex with etcd's revisions (every txn that writes bumps the store's revision, and
// each key's mod_revision is that of its last write), compares on mod_revision or value, a
// count of round trips, and injected failures: calls refused before they run, or a txn applied
// whose reply is lost (as when a plugin is killed, or a connection drops, after etcd commits).
#pragma once

#include <atomic>
#include <map>
#include <mutex>

#include "applets/cluster_ipam/kv.hpp"

namespace cni::cluster_ipam::test {

class FakeKv : public Kv {
public:
    Result<std::vector<KeyValue>> range(const std::string& key, const std::string& end, std::int64_t limit) override {
        ++trips_;
        std::lock_guard l(mu_);
        CNI_TRY(injected());
        auto out = read(key, end);
        if (limit > 0 && std::int64_t(out.size()) > limit) out.resize(std::size_t(limit));
        return out;
    }
    Result<TxnResult> txn(const std::vector<Compare>& cmp, const std::vector<Op>& ok, const std::vector<Op>& no) override {
        ++trips_;
        std::lock_guard l(mu_);
        CNI_TRY(injected());
        TxnResult r;
        r.succeeded = true;
        for (const auto& c : cmp) {
            auto it = data_.find(c.key);
            if (c.target == Compare::Target::mod_revision)
                r.succeeded = r.succeeded && (it == data_.end() ? 0 : it->second.mod_revision) == c.mod_revision;
            else
                r.succeeded = r.succeeded && it != data_.end() && it->second.value == c.value;
        }
        bool wrote = false;
        for (const auto& op : r.succeeded ? ok : no) wrote = wrote || op.kind != Op::Kind::range;
        if (wrote) ++revision_;
        for (const auto& op : r.succeeded ? ok : no) {
            if (op.kind == Op::Kind::range) {
                r.ranges.push_back(read(op.key, op.range_end));
            } else if (op.kind == Op::Kind::del) {
                data_.erase(op.key);
            } else {
                auto& kv = data_[op.key];
                if (kv.create_revision == 0) kv.create_revision = revision_;
                kv.key = op.key;
                kv.value = op.value;
                kv.mod_revision = revision_;
            }
        }
        r.revision = revision_;
        if (wrote && lose_replies_ > 0) {
            --lose_replies_;
            return fail(code::try_again_later, "fake etcd: reply lost");
        }
        return r;
    }
    std::uint64_t round_trips() const override { return trips_; }

    void refuse_next(int n) { std::lock_guard l(mu_); refuse_ = n; }
    void lose_next_replies(int n) { std::lock_guard l(mu_); lose_replies_ = n; }
    std::map<std::string, KeyValue> dump() { std::lock_guard l(mu_); return data_; }
    void put(const std::string& k, const std::string& v) { (void)txn({}, {Op{Op::Kind::put, k, v, {}, 0}}, {}); }

private:
    Status injected() {
        if (refuse_ > 0) {
            --refuse_;
            return fail(code::try_again_later, "fake etcd: unreachable");
        }
        return {};
    }
    std::vector<KeyValue> read(const std::string& key, const std::string& end) const {
        std::vector<KeyValue> out;
        if (end.empty()) {
            if (auto it = data_.find(key); it != data_.end()) out.push_back(it->second);
            return out;
        }
        for (auto it = data_.lower_bound(key); it != data_.end() && (end == std::string(1, '\0') || it->first < end); ++it)
            out.push_back(it->second);
        return out;
    }

    std::mutex mu_;
    std::map<std::string, KeyValue> data_;
    std::int64_t revision_ = 1;
    std::atomic<std::uint64_t> trips_{0};
    int refuse_ = 0, lose_replies_ = 0;
};

}  // namespace cni::cluster_ipam::test
