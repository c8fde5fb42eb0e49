// SPDX-License-Identifier: Apache-2.0
// cluster-ipam's etcd client (see etcd_client.hpp): each call one POST to the JSON gateway
// (etcd_json.hpp), tried member after member until one answers or the call's time is up.
#include "applets/cluster_ipam/etcd_client.hpp"

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <thread>

#include "applets/cluster_ipam/etcd_json.hpp"

namespace cni::cluster_ipam {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The pause after a round in which every member failed, before the next.
constexpr milliseconds kRoundPause{100};
// The least time one member is given (its share is a third of the dial timeout): a member that
// lost its leader holds a request until etcd's own timeout, while another may answer at once.
constexpr milliseconds kLeastAttempt{500};

}  // namespace

Result<std::unique_ptr<EtcdClient>> EtcdClient::open(const EtcdOptions& o) {
    if (o.endpoints.empty()) return fail(code::invalid_config, "etcd: no endpoints");
    if (o.dial_timeout <= milliseconds(0)) return fail(code::invalid_config, "etcd: a dial timeout that is not positive");
    std::unique_ptr<EtcdClient> c(new EtcdClient());
    std::shared_ptr<const http::TlsConfig> tls;
    std::vector<http::Endpoint> endpoints;
    for (const std::string& url : o.endpoints) {
        CNI_TRY_ASSIGN(auto e, http::parse_url(url, {.what = "etcd endpoint", .https = true, .names = true}));
        endpoints.push_back(std::move(e));
        c->endpoints_text_ += (c->endpoints_text_.empty() ? "" : ", ") + endpoints.back().url;
    }
    const bool any_tls = std::any_of(endpoints.begin(), endpoints.end(), [](auto& e) { return e.tls; });
    if (any_tls) {
        if (o.tls.ca_pem.empty()) return fail(code::invalid_config, "etcd: https:// endpoints without a CA file");
        auto tickets = o.tls_tickets.empty() ? std::nullopt : http::TicketStore::open(o.tls_tickets);
        auto loaded = http::TlsConfig::load(o.tls, std::move(tickets));
        if (!loaded) return fail(code::invalid_config, "etcd TLS: " + loaded.error().msg);
        tls = *loaded;
    }
    for (auto& e : endpoints) c->members_.emplace_back(std::move(e), tls, kEtcdAnswerLimit);
    c->dial_timeout_ = o.dial_timeout;
    if (const char* n = std::getenv("CNI_ALL_TEST_KILL_AFTER_WRITE")) c->kill_after_write_ = std::strtoull(n, nullptr, 10);
    return c;
}

Kv::Handshakes EtcdClient::handshakes() const {
    Handshakes h;
    for (const auto& m : members_) {
        h.full += m.full_handshakes();
        h.resumed += m.resumed();
    }
    return h;
}

Result<std::string> EtcdClient::call(std::string_view path, const std::string& body) {
    const auto deadline = Clock::now() + dial_timeout_;
    const http::Headers headers{{"Content-Type", "application/json"}};
    std::string last;
    for (;;) {
        for (std::size_t tried = 0; tried < members_.size(); ++tried) {
            const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
            if (left <= milliseconds(0)) break;
            const milliseconds attempt = std::min(left, std::max(dial_timeout_ / 3, kLeastAttempt));
            http::Connection& m = members_[current_];
            ++round_trips_;
            auto r = m.request(http::Request{"POST", path, &headers, body}, attempt);
            if (r && r->status == 200) return std::move(r->body);
            if (!r) {
                if (r.error().code != code::try_again_later) return cni::Unexpected(r.error().context("etcd"));
                last = r.error().msg;
            } else {
                auto e = parse_etcd_error(r->body);
                const std::string where = "POST " + m.endpoint().url + std::string(path);
                if (!e)
                    return fail(code::io_failure, "etcd: " + where + ": HTTP " + std::to_string(r->status));
                if (!etcd_error_may_pass(*e))
                    return fail(code::io_failure, "etcd: " + where + ": " + e->message);
                last = where + ": " + e->message;
                m.close();  // its next request starts afresh
            }
            current_ = (current_ + 1) % members_.size();
        }
        if (Clock::now() + kRoundPause >= deadline) break;
        std::this_thread::sleep_for(kRoundPause);
    }
    return fail(code::try_again_later, "etcd: no member of " + endpoints_text_ + " answered within " +
                                           std::to_string(dial_timeout_.count()) + " ms (last: " + last + ")");
}

Result<std::vector<KeyValue>> EtcdClient::range(const std::string& key, const std::string& range_end, std::int64_t limit) {
    CNI_TRY_ASSIGN(auto body, call("/v3/kv/range", range_request(key, range_end, limit)));
    auto kvs = parse_range_answer(body);
    if (!kvs) return cni::Unexpected(kvs.error().context("etcd"));
    return kvs;
}

Result<TxnResult> EtcdClient::txn(const std::vector<Compare>& compares, const std::vector<Op>& success,
                                  const std::vector<Op>& failure) {
    auto ranges = [](const std::vector<Op>& ops) {
        return std::size_t(std::count_if(ops.begin(), ops.end(), [](const Op& op) { return op.kind == Op::Kind::range; }));
    };
    CNI_TRY_ASSIGN(auto body, call("/v3/kv/txn", txn_request(compares, success, failure)));
    auto t = parse_txn_answer(body, ranges(success), ranges(failure));
    if (!t) return cni::Unexpected(t.error().context("etcd"));
    const auto& ran = t->succeeded ? success : failure;
    if (kill_after_write_ && ranges(ran) < ran.size() && ++writes_ == kill_after_write_) std::raise(SIGKILL);  // the test hook
    return t;
}

Result<std::int64_t> EtcdClient::lease_grant(std::int64_t ttl) {
    CNI_TRY_ASSIGN(auto body, call("/v3/lease/grant", lease_grant_request(ttl)));
    auto id = parse_lease_grant_answer(body);
    if (!id) return cni::Unexpected(id.error().context("etcd"));
    return id;
}

}  // namespace cni::cluster_ipam
