// SPDX-License-Identifier: Apache-2.0
// An answer of etcd's JSON gateway as cluster-ipam's etcd client reads it: the same body as a
// range's, a txn's (of one range op per branch), a lease grant's and an error's. A refusal is
// code 6, never half an answer; a key is never empty, and keys and values are bytes that
// base64 carries back unchanged; a txn's ranges are as many as its branch's range ops; a lease
// ID is positive.
#include "applets/cluster_ipam/etcd_json.hpp"
#include "fuzz_check.hpp"

using namespace cni;
using namespace cni::cluster_ipam;

namespace {

void check_kvs(const std::vector<KeyValue>& kvs) {
    for (const auto& kv : kvs) {
        property(!kv.key.empty(), "a kv without a key");
        property(base64_decode(base64_encode(kv.key)) == kv.key && base64_decode(base64_encode(kv.value)) == kv.value,
                 "bytes base64 does not carry back");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view body = text_of(data, size);
    if (auto kvs = parse_range_answer(body)) check_kvs(*kvs);
    else property(kvs.error().code == code::decoding_failure, "a range answer refused with another code");
    if (auto t = parse_txn_answer(body, 1, 1)) {
        property(t->ranges.size() == 1, "a txn's ranges unlike its branch's");
        check_kvs(t->ranges.front());
    } else {
        property(t.error().code == code::decoding_failure, "a txn answer refused with another code");
    }
    if (auto id = parse_lease_grant_answer(body)) property(*id > 0, "a lease ID that is not positive");
    if (auto e = parse_etcd_error(body)) (void)etcd_error_may_pass(*e);
    if (auto bytes = base64_decode(body)) property(base64_encode(*bytes) == body, "base64 with two texts for one string");
    return 0;
}
