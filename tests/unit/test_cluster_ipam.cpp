// SPDX-License-Identifier: Apache-2.0
// cluster-ipam's allocator against an in-memory etcd (fake_kv.hpp): uniqueness under many nodes
// at once, blocks, borrowing, exhaustion, dual stack, exclude, idempotent ADD and DEL, GC and
// its repairs, lost replies, round trips per call, the config's checks, and the operator's
// show and release.
#include <catch2/catch.hpp>

#include <set>
#include <thread>

#include "applets/cluster_ipam/config.hpp"
#include "fake_kv.hpp"
#include "temp_dir.hpp"

using namespace cni;
using namespace cni::cluster_ipam;
using cni::cluster_ipam::test::FakeKv;

namespace {

std::string conf_json(const std::string& ipam_extra, const std::string& ranges) {
    return R"({"cniVersion":"1.0.0","name":"net1","ipam":{"type":"cluster-ipam","etcd":{"endpoints":["http://127.0.0.1:2379"]},)" +
           ipam_extra + R"("ranges":)" + ranges + "}}";
}

ClusterConf conf(const std::string& ipam_extra, const std::string& ranges) {
    Request req;
    req.config = conf_json(ipam_extra, ranges);
    auto c = parse_conf(req);
    if (!c) FAIL(c.error().msg);
    return std::move(*c);
}

Call call(Kv& kv, const std::string& node, std::int64_t now = 1000, const NodeCache* cache = nullptr) {
    return Call{kv, Keys{"/cni-all/ipam/"}, node, now, 300, cache};
}

std::string add_one(Kv& kv, const ClusterConf& c, const std::string& node, const std::string& cid, std::int64_t now = 1000) {
    auto ips = allocate(call(kv, node, now), c.sets, handle_id("net1", cid, "eth0"));
    if (!ips) FAIL(ips.error().msg);
    REQUIRE(ips->size() == 1);
    return (*ips)[0].address.str();
}

// Every handle's address is in its block under its handle id, and no address is held twice.
void check_consistent(FakeKv& kv) {
    std::map<std::string, Block> blocks;
    std::size_t allocations = 0, held = 0;
    for (const auto& [key, v] : kv.dump())
        if (key.find("/blocks/") != std::string::npos) {
            blocks[key] = *decode_block(v.value);
            allocations += blocks[key].allocations.size();
        }
    for (const auto& [key, v] : kv.dump())
        if (key.starts_with("/cni-all/ipam/handles/")) {
            auto h = decode_handle(v.value);
            REQUIRE(h);
            for (const auto& a : h->addresses) {
                ++held;
                REQUIRE(blocks.contains(a.block));
                CHECK(blocks[a.block].allocations[a.ordinal] == key.substr(std::string("/cni-all/ipam/handles/").size()));
            }
        }
    CHECK(allocations == held);
}

}  // namespace

TEST_CASE("cluster-ipam: prefix_end is etcd's range end of a prefix", "[cluster-ipam]") {
    CHECK(prefix_end("/a/") == "/a0");
    CHECK(prefix_end("a\xff") == "b");
    CHECK(prefix_end("\xff\xff") == std::string(1, '\0'));
}

TEST_CASE("cluster-ipam: one node claims a block, ADD twice gives the same address, one txn per ADD with the cache", "[cluster-ipam]") {
    FakeKv kv;
    TempDir tmp;
    auto dir = os::Dir::open(tmp.path);
    REQUIRE(dir);
    NodeCache cache(std::move(*dir), "store", "n1");
    auto c = conf("", R"([[{"subnet":"10.1.0.0/24"}]])");
    const auto id = handle_id("net1", "c1", "eth0");
    auto first = allocate(call(kv, "n1", 1000, &cache), c.sets, id);
    REQUIRE(first);
    CHECK((*first)[0].address.str() == "10.1.0.2/24");  // .0 is not in the range, .1 is the gateway
    CHECK((*first)[0].gateway->str() == "10.1.0.1");
    CHECK(kv.round_trips() == 2);  // one read of the pool (nothing cached), one txn
    auto again = allocate(call(kv, "n1", 1000, &cache), c.sets, id);
    REQUIRE(again);
    CHECK(*again == *first);
    const auto before = kv.round_trips();
    auto second = allocate(call(kv, "n1", 1000, &cache), c.sets, handle_id("net1", "c2", "eth0"));
    REQUIRE(second);
    CHECK((*second)[0].address.str() == "10.1.0.3/24");
    CHECK(kv.round_trips() - before == 1);  // a block held and cached: ONE txn
    // Without the cache the same ADD reads first: two round trips.
    const auto b2 = kv.round_trips();
    REQUIRE(allocate(call(kv, "n1"), c.sets, handle_id("net1", "c3", "eth0")));
    CHECK(kv.round_trips() - b2 == 2);
    // A stale cache (another process wrote the block since) costs one failed txn, no duplicate.
    REQUIRE(allocate(call(kv, "n1", 1000, &cache), c.sets, handle_id("net1", "c4", "eth0")));
    check_consistent(kv);
}

TEST_CASE("cluster-ipam: 8 nodes x 4 threads allocating at once never share an address", "[cluster-ipam]") {
    FakeKv kv;
    auto c = conf(R"("blockSize":28,)", R"([[{"subnet":"10.2.0.0/22"}]])");
    // Half the runs with each node's cache file shared by its threads (as a node's processes share it).
    const bool cached = GENERATE(false, true);
    TempDir tmp;
    std::vector<NodeCache> caches;
    for (int n = 0; n < 8; ++n) caches.emplace_back(*os::Dir::open(tmp.path), "store", "node" + std::to_string(n));
    std::mutex mu;
    std::vector<std::string> got;
    std::vector<std::thread> threads;
    for (int t = 0; t < 32; ++t)
        threads.emplace_back([&, t] {
            const std::string node = "node" + std::to_string(t % 8);
            for (int i = 0; i < 25; ++i) {
                auto ips = allocate(call(kv, node, 1000, cached ? &caches[std::size_t(t % 8)] : nullptr), c.sets, handle_id("net1", "c" + std::to_string(t) + "-" + std::to_string(i), "eth0"));
                std::lock_guard l(mu);
                got.push_back(ips ? (*ips)[0].address.str() : "error: " + ips.error().msg);
            }
        });
    for (auto& t : threads) t.join();
    std::set<std::string> unique(got.begin(), got.end());
    for (const auto& a : got) CHECK_FALSE(a.starts_with("error"));
    CHECK(got.size() == 800);
    CHECK(unique.size() == 800);
    check_consistent(kv);
}

TEST_CASE("cluster-ipam: a /28 shared by two nodes hands out exactly its range, then names it", "[cluster-ipam]") {
    FakeKv kv;
    auto c = conf(R"("blockSize":30,)", R"([[{"subnet":"10.9.0.0/28"}]])");
    std::set<std::string> got;
    for (int i = 0; i < 13; ++i) got.insert(add_one(kv, c, i % 2 ? "a" : "b", "c" + std::to_string(i)));
    CHECK(got.size() == 13);
    CHECK(!got.contains("10.9.0.1/28"));
    CHECK(!got.contains("10.9.0.15/28"));
    auto more = allocate(call(kv, "a"), c.sets, handle_id("net1", "late", "eth0"));
    REQUIRE(!more);
    CHECK(more.error().msg == "no IP addresses available in range set: 10.9.0.1-10.9.0.14 (cluster-ipam: every block is full)");
    auto st = check_free(call(kv, "a"), c.sets);
    REQUIRE(!st);
    CHECK(st.error().code == code::plugin_not_available);
    check_consistent(kv);
}

TEST_CASE("cluster-ipam: a node whose neighbours hold every block borrows their free addresses", "[cluster-ipam]") {
    FakeKv kv;
    auto c = conf(R"("blockSize":30,)", R"([[{"subnet":"10.9.0.0/28"}]])");
    for (int i = 0; i < 13; ++i) add_one(kv, c, "a", "c" + std::to_string(i));
    std::set<std::string> freed;
    for (int i : {2, 6, 11}) {
        auto h = lookup(call(kv, "a"), handle_id("net1", "c" + std::to_string(i), "eth0"));
        freed.insert((*h)->addresses[0].ip.address.str());
        REQUIRE(release(call(kv, "a"), handle_id("net1", "c" + std::to_string(i), "eth0")));
    }
    std::set<std::string> borrowed;
    for (int i = 0; i < 3; ++i) borrowed.insert(add_one(kv, c, "b", "b" + std::to_string(i)));
    CHECK(borrowed == freed);
    for (const auto& [key, v] : kv.dump())
        if (key.find("/blocks/") != std::string::npos) CHECK(decode_block(v.value)->node == "a");
    CHECK(!allocate(call(kv, "b"), c.sets, handle_id("net1", "b9", "eth0")));
    check_consistent(kv);
}

TEST_CASE("cluster-ipam: dual stack gives one address per family in blocks of each family's size", "[cluster-ipam]") {
    FakeKv kv;
    auto c = conf("", R"([[{"subnet":"10.3.0.0/16"}],[{"subnet":"fd00:3::/64"}]])");
    auto ips = allocate(call(kv, "n1"), c.sets, handle_id("net1", "c1", "eth0"));
    REQUIRE(ips);
    REQUIRE(ips->size() == 2);
    CHECK((*ips)[0].address.ip.is_v4());
    CHECK((*ips)[1].address.str().starts_with("fd00:3::"));
    CHECK((*ips)[1].address.prefix == 64);
    std::set<std::string> blocks;
    for (const auto& [key, v] : kv.dump())
        if (key.find("/blocks/") != std::string::npos) blocks.insert(key.substr(key.rfind('-')));
    CHECK(blocks == std::set<std::string>{"-26", "-122"});
    REQUIRE(release(call(kv, "n1"), handle_id("net1", "c1", "eth0")));
    check_consistent(kv);
}

TEST_CASE("cluster-ipam: exclude is never handed out", "[cluster-ipam]") {
    FakeKv kv;
    auto c = conf(R"("blockSize":29,"exclude":["10.9.0.0/29","10.9.0.12/32"],)", R"([[{"subnet":"10.9.0.0/28"}]])");
    std::set<std::string> got;
    for (int i = 0; i < 6; ++i) got.insert(add_one(kv, c, "n1", "c" + std::to_string(i)));
    CHECK(got == std::set<std::string>{"10.9.0.8/28", "10.9.0.9/28", "10.9.0.10/28", "10.9.0.11/28", "10.9.0.13/28", "10.9.0.14/28"});
    CHECK(!allocate(call(kv, "n1"), c.sets, handle_id("net1", "x", "eth0")));
}

TEST_CASE("cluster-ipam: DEL needs no prevResult, twice is fine, and the address comes back", "[cluster-ipam]") {
    FakeKv kv;
    auto c = conf(R"("blockSize":30,)", R"([[{"subnet":"10.9.0.0/29"}]])");
    const auto a = add_one(kv, c, "n1", "c1");
    REQUIRE(release(call(kv, "n1"), handle_id("net1", "c1", "eth0")));
    REQUIRE(release(call(kv, "n1"), handle_id("net1", "c1", "eth0")));
    CHECK(!*lookup(call(kv, "n1"), handle_id("net1", "c1", "eth0")));
    std::set<std::string> got;
    for (int i = 0; i < 5; ++i) got.insert(add_one(kv, c, "n1", "d" + std::to_string(i)));
    CHECK(got.contains(a));
    check_consistent(kv);
}

TEST_CASE("cluster-ipam: GC releases this node's stale handles, orphan allocations and old empty blocks", "[cluster-ipam]") {
    FakeKv kv;
    auto c = conf("", R"([[{"subnet":"10.4.0.0/24"}]])");
    for (auto id : {"keep", "stale1", "stale2"}) add_one(kv, c, "n1", id);
    add_one(kv, c, "n2", "other-node");
    std::string block_key;
    for (const auto& [key, v] : kv.dump())
        if (key.find("/blocks/") != std::string::npos && decode_block(v.value)->node == "n1") block_key = key;
    // An allocation without its handle (as a write that died half way would leave, were there one).
    auto b = *decode_block(kv.dump()[block_key].value);
    b.allocations[40] = handle_id("net1", "ghost", "eth0");
    kv.put(block_key, encode(b));
    REQUIRE(collect(call(kv, "n1"), "net1", c.sets, {{"keep", "eth0"}}));
    auto after = *decode_block(kv.dump()[block_key].value);
    CHECK(after.allocations.size() == 1);
    CHECK(after.allocations.begin()->second == handle_id("net1", "keep", "eth0"));
    CHECK(*lookup(call(kv, "n1"), handle_id("net1", "other-node", "eth0")));  // n2's: not n1's GC's
    check_consistent(kv);
    // Emptied, the block stays n1's through the grace period, then GC gives it back.
    REQUIRE(collect(call(kv, "n1", 1000), "net1", c.sets, {}));
    CHECK(kv.dump().contains(block_key));
    REQUIRE(collect(call(kv, "n1", 1000 + 301), "net1", c.sets, {}));
    CHECK(!kv.dump().contains(block_key));
}

TEST_CASE("cluster-ipam: a reply lost after the commit, then the ADD again, gives the same address; refusals are code 11", "[cluster-ipam]") {
    FakeKv kv;
    auto c = conf("", R"([[{"subnet":"10.5.0.0/24"}]])");
    kv.refuse_next(1);
    auto down = allocate(call(kv, "n1"), c.sets, handle_id("net1", "c1", "eth0"));
    REQUIRE(!down);
    CHECK(down.error().code == code::try_again_later);
    kv.lose_next_replies(1);
    auto lost = allocate(call(kv, "n1"), c.sets, handle_id("net1", "c1", "eth0"));
    REQUIRE(!lost);
    CHECK(lost.error().code == code::try_again_later);
    const auto a = add_one(kv, c, "n1", "c1");
    CHECK(a == "10.5.0.2/24");
    CHECK(add_one(kv, c, "n1", "c2") == "10.5.0.3/24");
    // A DEL whose reply is lost: the next DEL finds nothing held, and GC has nothing to repair.
    kv.lose_next_replies(1);
    CHECK(!release(call(kv, "n1"), handle_id("net1", "c1", "eth0")));
    REQUIRE(release(call(kv, "n1"), handle_id("net1", "c1", "eth0")));
    REQUIRE(collect(call(kv, "n1"), "net1", c.sets, {{"c2", "eth0"}}));
    check_consistent(kv);
}

TEST_CASE("cluster-ipam: the config's keys are checked and name what is wrong", "[cluster-ipam]") {
    auto err = [](const std::string& extra, const std::string& ranges) {
        Request req;
        req.config = conf_json(extra, ranges);
        auto c = parse_conf(req);
        return c ? std::string() : c.error().msg;
    };
    CHECK(err(R"("blockSize":20,)", R"([[{"subnet":"10.1.0.0/24"}]])").find("ipam.blockSize 20 does not fit range 10.1.0.1-10.1.0.254") !=
          std::string::npos);
    CHECK(err(R"("blockSize":8,)", R"([[{"subnet":"10.0.0.0/8"}]])").find("more than 4096") != std::string::npos);
    CHECK(err(R"("blockSize":"x",)", R"([[{"subnet":"10.1.0.0/24"}]])").find("of type int") != std::string::npos);
    CHECK(err(R"("exclude":["nope"],)", R"([[{"subnet":"10.1.0.0/24"}]])") != "");
    CHECK(err(R"("etcd":{"endpoints":["tcp://x"]},)", R"([[{"subnet":"10.1.0.0/24"}]])").find("not an http://") != std::string::npos);
    CHECK(err(R"("etcd":{"endpoints":["http://x"],"dialTimeout":"5 parsecs"},)", R"([[{"subnet":"10.1.0.0/24"}]])")
              .find("dialTimeout") != std::string::npos);
    Request req;
    req.config = conf_json(R"("etcd":{"endpoints":["http://x"],"dialTimeout":"500ms","certFile":"/etc/shadow","keyFile":"/etc/cni/k"},)",
                           R"([[{"subnet":"10.1.0.0/24"}]])");
    auto c = parse_conf(req);
    REQUIRE(c);
    CHECK(c->etcd.dial_timeout_ms == 500);
    auto s = etcd_settings(c->etcd);
    REQUIRE(!s);
    CHECK(s.error().msg.find("ipam.etcd.certFile \"/etc/shadow\" is not usable") != std::string::npos);
    CHECK(s.error().msg.find("root:") == std::string::npos);
    auto other = node_name("some-other-node");
    REQUIRE(!other);
    CHECK(other.error().msg.find("may only restate it") != std::string::npos);
    // Two networks on one subnet with different block sizes would overlap blocks: refused.
    FakeKv kv;
    add_one(kv, conf("", R"([[{"subnet":"10.6.0.0/24"}]])"), "n1", "c1");
    auto mixed = allocate(call(kv, "n2"), conf(R"("blockSize":28,)", R"([[{"subnet":"10.6.0.0/24"}]])").sets, handle_id("net1", "c2", "eth0"));
    REQUIRE(!mixed);
    CHECK(mixed.error().msg.find("every network on one subnet must use one block size") != std::string::npos);
}

TEST_CASE("cluster-ipam: blockGracePeriod below the node's floor of 30 s is refused with code 7 naming it", "[cluster-ipam]") {
    for (const char* grace : {"29", "0", "-1"}) {
        Request req;
        req.config = conf_json(std::string(R"("blockGracePeriod":)") + grace + ",", R"([[{"subnet":"10.1.0.0/24"}]])");
        auto c = parse_conf(req);
        REQUIRE(!c);
        CHECK(c.error().code == code::invalid_config);
        CHECK(c.error().msg.find(std::string("ipam.blockGracePeriod ") + grace + " is below the least a node allows, 30 seconds") !=
              std::string::npos);
    }
    CHECK(conf(R"("blockGracePeriod":30,)", R"([[{"subnet":"10.1.0.0/24"}]])").grace == 30);
    CHECK(conf("", R"([[{"subnet":"10.1.0.0/24"}]])").grace == 300);
}

TEST_CASE("cluster-ipam: show lists blocks per node; release --node refuses a recent writer unless forced", "[cluster-ipam]") {
    FakeKv kv;
    auto c = conf(R"("blockSize":28,)", R"([[{"subnet":"10.7.0.0/24"}]])");
    for (int i = 0; i < 3; ++i) add_one(kv, c, "gone", "g" + std::to_string(i));
    add_one(kv, c, "alive", "a0");
    auto out = show(call(kv, "operator"));
    REQUIRE(out);
    CHECK(out->find("pool 10.7.0.0-24") != std::string::npos);
    CHECK(out->find("node gone: 1 blocks, 3 used, 13 unallocated") != std::string::npos);
    auto refused = release_node(call(kv, "operator", 1100), "gone", false);
    REQUIRE(!refused);
    CHECK(refused.error().msg.find("within the grace period") != std::string::npos);
    auto forced = release_node(call(kv, "operator", 1100), "gone", true);
    REQUIRE(forced);
    CHECK(*forced == "node gone: 3 handles and 1 blocks released\n");
    // The operator's release wrote gone's block, but that is not gone writing: run again later, it is not refused.
    auto again = release_node(call(kv, "operator", 1400), "gone", false);
    REQUIRE(again);
    CHECK(*again == "node gone: 0 handles and 0 blocks released\n");
    auto later = release_node(call(kv, "operator", 5000), "alive", false);
    REQUIRE(later);
    CHECK(later->find("1 handles") != std::string::npos);
    CHECK(kv.dump().size() == 1);  // the pool's meta alone
}

TEST_CASE("cluster-ipam: another node's borrow and release leave a block's lastWrite, which is its node's", "[cluster-ipam]") {
    FakeKv kv;
    auto c = conf(R"("blockSize":28,)", R"([[{"subnet":"10.8.0.0/28"}]])");  // one block: the pool
    add_one(kv, c, "gone", "g0", 1000);
    const auto borrowed = add_one(kv, c, "n2", "b0", 1400);  // no block free: borrowed from gone's
    auto released = release_node(call(kv, "operator", 1400), "gone", false);
    REQUIRE(released);  // gone last wrote at 1000: n2's borrow does not make it look alive
    CHECK(*released == "node gone: 1 handles and 0 blocks released\n");  // its block holds n2's address
    REQUIRE(release(call(kv, "n2", 1400), handle_id("net1", "b0", "eth0")));
    CHECK(add_one(kv, c, "n3", "c0", 1400) != "");  // emptied and past gone's grace period: n3 claims it
    for (const auto& [key, v] : kv.dump())
        if (key.find("/blocks/") != std::string::npos) CHECK(decode_block(v.value)->node == "n3");
    check_consistent(kv);
    CHECK(borrowed == "10.8.0.3/28");
}
