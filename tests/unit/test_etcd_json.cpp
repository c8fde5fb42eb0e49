// SPDX-License-Identifier: Apache-2.0
// Unit tests of cluster-ipam's etcd JSON gateway codec (src/applets/cluster_ipam/etcd_json.hpp)
// and prefix_end() of kv.hpp: base64 both ways, the request bodies as etcd reads them, answers
// as etcd 3.4 writes them (int64 as strings, zero fields left out), errors that may pass, and
// answers that are not etcd's refused. Tagged [http] until meson.build lists cluster-ipam.
#include <catch2/catch.hpp>

#include "applets/cluster_ipam/etcd_json.hpp"

using namespace cni;
using namespace cni::cluster_ipam;

TEST_CASE("base64 both ways, one text per byte string", "[cluster-ipam]") {
    for (std::string s : {std::string(), std::string("f"), std::string("fo"), std::string("foo"), std::string("foob"),
                          std::string("fooba"), std::string("foobar"), std::string("\0\xff\x80", 3)})
        CHECK(base64_decode(base64_encode(s)) == s);
    CHECK(base64_encode("foobar") == "Zm9vYmFy");
    CHECK(base64_encode("fo") == "Zm8=");
    for (std::string bad : {"Zm8", "Zm9=", "Zh==", "Z===", "Zm 8", "Zm8=Zm8="})
        CHECK_FALSE(base64_decode(bad));
}

TEST_CASE("prefix_end is etcd's range end of a prefix", "[cluster-ipam]") {
    CHECK(prefix_end("/cni-all/ipam/") == "/cni-all/ipam0");
    CHECK(prefix_end("a\xff") == "b");
    CHECK(prefix_end("\xff\xff") == std::string(1, '\0'));
}

TEST_CASE("requests are etcd's JSON gateway bodies", "[cluster-ipam]") {
    CHECK(range_request("/k", "/l", 0) == R"({"key":"L2s=","range_end":"L2w="})");
    CHECK(range_request("/k", "", 5) == R"({"key":"L2s=","limit":"5"})");
    CHECK(txn_request({Compare{"/k", Compare::Target::mod_revision, 0, {}}}, {Op{Op::Kind::put, "/k", "v", {}, 7}},
                      {Op{Op::Kind::range, "/k", {}, {}, 0}, Op{Op::Kind::del, "/j", {}, {}, 0}}) ==
          R"({"compare":[{"key":"L2s=","result":"EQUAL","target":"MOD","mod_revision":"0"}],)"
          R"("success":[{"request_put":{"key":"L2s=","value":"dg==","lease":"7"}}],)"
          R"("failure":[{"request_range":{"key":"L2s="}},{"request_delete_range":{"key":"L2o="}}]})");
    CHECK(txn_request({Compare{"/k", Compare::Target::value, 0, "v"}}, {}, {}) ==
          R"({"compare":[{"key":"L2s=","result":"EQUAL","target":"VALUE","value":"dg=="}],"success":[],"failure":[]})");
    CHECK(lease_grant_request(30) == R"({"TTL":"30"})");
}

TEST_CASE("answers are read as etcd 3.4 writes them", "[cluster-ipam]") {
    auto kvs = parse_range_answer(
        R"({"header":{"cluster_id":"1","member_id":"2","revision":"12","raft_term":"3"},)"
        R"("kvs":[{"key":"L2s=","create_revision":"5","mod_revision":"11","version":"2","value":"dg=="},)"
        R"({"key":"L2w=","create_revision":"6","mod_revision":"6","version":"1","lease":"99"}],"count":"2"})");
    REQUIRE(kvs);
    REQUIRE(kvs->size() == 2);
    CHECK(((*kvs)[0].key == "/k" && (*kvs)[0].value == "v" && (*kvs)[0].create_revision == 5 && (*kvs)[0].mod_revision == 11));
    CHECK(((*kvs)[1].value.empty() && (*kvs)[1].lease == 99));
    auto none = parse_range_answer(R"({"header":{"revision":"12"}})");
    REQUIRE(none);
    CHECK(none->empty());

    auto t = parse_txn_answer(R"({"header":{"revision":"13"},"succeeded":true,"responses":[{"response_put":{"header":{"revision":"13"}}},)"
                              R"({"response_range":{"header":{"revision":"13"},"kvs":[{"key":"L2s=","mod_revision":"13","value":"dg=="}],"count":"1"}}]})",
                              1, 0);
    REQUIRE(t);
    CHECK((t->succeeded && t->revision == 13 && t->ranges.size() == 1 && t->ranges[0][0].mod_revision == 13));
    auto lost = parse_txn_answer(R"({"header":{"revision":"13"},"responses":[{"response_range":{"header":{"revision":"13"}}}]})", 0, 1);
    REQUIRE(lost);
    CHECK((!lost->succeeded && lost->ranges.size() == 1 && lost->ranges[0].empty()));
    CHECK(parse_lease_grant_answer(R"({"header":{"revision":"13"},"ID":"7587883","TTL":"30"})") == std::int64_t(7587883));
}

TEST_CASE("etcd's errors, those that may pass, and answers that are not etcd's", "[cluster-ipam]") {
    auto e = parse_etcd_error(R"({"error":"etcdserver: leader changed","code":14,"message":"etcdserver: leader changed"})");
    REQUIRE(e);
    CHECK((e->grpc_code == 14 && e->message == "etcdserver: leader changed" && etcd_error_may_pass(*e)));
    auto big = parse_etcd_error(R"({"error":"etcdserver: request is too large","code":3})");
    REQUIRE(big);
    CHECK_FALSE(etcd_error_may_pass(*big));
    CHECK_FALSE(parse_etcd_error("{}"));
    for (std::string_view bad : {R"([])", R"({"kvs":[]})", R"({"header":{"revision":"x"}})",
                                 R"({"header":{"revision":"99999999999999999999"}})",
                                 R"({"header":{},"kvs":[{"key":"@@@@"}]})", R"({"header":{},"kvs":[{"value":"dg=="}]})",
                                 R"({"header":{},"kvs":{}})", "not json"}) {
        auto r = parse_range_answer(bad);
        REQUIRE_FALSE(r);
        CHECK(r.error().code == code::decoding_failure);
    }
    CHECK_FALSE(parse_txn_answer(R"({"header":{},"succeeded":true,"responses":[]})", 1, 0));
    CHECK_FALSE(parse_lease_grant_answer(R"({"header":{}})"));
}
