// SPDX-License-Identifier: Apache-2.0
// etcd's v3 JSON gateway as cluster-ipam speaks it (docs/design.md, The HTTP client):
// the bodies of POST /v3/kv/range, /v3/kv/txn and
// /v3/lease/grant, and their answers decoded. Keys and values travel in base64, 64-bit integers
// as JSON strings (proto3's JSON mapping; numbers are read too), enums by name, and a field at
// its zero value is left out of an answer. An answer that is not what etcd sends is refused
// with code::decoding_failure, never half read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "applets/cluster_ipam/kv.hpp"
#include "core/result.hpp"

namespace cni::cluster_ipam {

std::string base64_encode(std::string_view bytes);
// Standard base64 with padding, as etcd writes it; nothing for anything else.
std::optional<std::string> base64_decode(std::string_view text);

std::string range_request(const std::string& key, const std::string& range_end, std::int64_t limit);
std::string txn_request(const std::vector<Compare>& compares, const std::vector<Op>& success,
                        const std::vector<Op>& failure);
std::string lease_grant_request(std::int64_t ttl_seconds);

// An error etcd answers instead (grpc-gateway's {"error", "code", "message"}): its gRPC code
// and text.
struct EtcdError {
    int grpc_code = 0;
    std::string message;
};
std::optional<EtcdError> parse_etcd_error(std::string_view body);
// Whether another member, or the same one a little later, may answer it (no leader, leader
// changed, not leader, timed out: gRPC's Unavailable, DeadlineExceeded, Aborted).
bool etcd_error_may_pass(const EtcdError& e);

Result<std::vector<KeyValue>> parse_range_answer(std::string_view body);
// The txn's answer: whether the compares held, the revision, and the kvs of each range op of
// the branch that ran, in order (as many as that branch's range ops).
Result<TxnResult> parse_txn_answer(std::string_view body, std::size_t success_ranges, std::size_t failure_ranges);
// The lease's ID.
Result<std::int64_t> parse_lease_grant_answer(std::string_view body);

}  // namespace cni::cluster_ipam
