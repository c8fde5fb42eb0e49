// SPDX-License-Identifier: Apache-2.0
// The Kv of kv.hpp on an etcd v3 cluster (docs/design.md, The HTTP client), through its
// JSON gateway over HTTP/1.1 (core/http), plain or TLS with a client certificate. One kept
// connection per member; a call goes to the member that answered last, and on to the next when
// a member cannot be reached, answers that it cannot serve now (no leader, leader changed), or
// has not answered within a third of `dial_timeout` (a member whose leader died holds requests
// until etcd's own timeout), round and round until `dial_timeout` from the call's start has passed: then
// code::try_again_later naming every endpoint and the last failure. A txn whose answer was lost
// may have been applied; retried, its compares then fail, which the caller's compare-and-swap
// reads as a lost race. One object serves one thread.
//
// A test hook, in the one place cluster-ipam writes to etcd: with CNI_ALL_TEST_KILL_AFTER_WRITE=N
// in the environment, the process kills itself (SIGKILL) right after the answer to its N-th txn
// that wrote (a put or delete in the branch that ran), so a test can stop a plugin between its
// writes (docs/cluster-ipam.md, Failure behaviour). Only the runtime (root) sets a plugin's
// environment; no network config key reaches it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "applets/cluster_ipam/kv.hpp"
#include "core/http/connection.hpp"
#include "core/result.hpp"

namespace cni::cluster_ipam {

struct EtcdOptions {
    std::vector<std::string> endpoints;  // http:// or https:// URLs, a host name or an address each
    http::TlsCredentials tls;            // https:// endpoints: the CA, and a client certificate and key or none
    std::chrono::milliseconds dial_timeout{5000};
    // Root's folder where TLS sessions are kept across processes (http::TicketStore; empty:
    // none). Only the calling code chooses it, never a config.
    std::string tls_tickets;
};

// The largest answer read from etcd (a range over every block of a pool).
inline constexpr std::size_t kEtcdAnswerLimit = std::size_t(16) << 20;

class EtcdClient : public Kv {
public:
    // The endpoints parsed and the TLS credentials with them; nothing is connected yet. Errors
    // name the endpoint or credential (code::invalid_config).
    static Result<std::unique_ptr<EtcdClient>> open(const EtcdOptions& o);

    Result<std::vector<KeyValue>> range(const std::string& key, const std::string& range_end, std::int64_t limit = 0) override;
    Result<TxnResult> txn(const std::vector<Compare>& compares, const std::vector<Op>& success,
                          const std::vector<Op>& failure) override;
    std::uint64_t round_trips() const override { return round_trips_; }
    Handshakes handshakes() const override;
    // A lease of `ttl` seconds (for keys that go away with it); its ID.
    Result<std::int64_t> lease_grant(std::int64_t ttl);

    // The endpoints as given, ", "-joined, for messages.
    const std::string& endpoints_text() const { return endpoints_text_; }

private:
    EtcdClient() = default;
    // POST `path` with `body`, with failover; the answer's body.
    Result<std::string> call(std::string_view path, const std::string& body);

    std::vector<http::Connection> members_;
    std::size_t current_ = 0;  // the member that answered last
    std::chrono::milliseconds dial_timeout_{};
    std::uint64_t round_trips_ = 0;
    std::uint64_t writes_ = 0, kill_after_write_ = 0;  // the test hook (0: none)
    std::string endpoints_text_;
};

}  // namespace cni::cluster_ipam
