// SPDX-License-Identifier: Apache-2.0
// cluster-ipam's allocator against an in-memory etcd (fake_kv.hpp): uniqueness under many nodes
// at once, blocks, borrowing, exhaustion, dual stack, exclude, idempotent ADD and DEL, GC and
// its repairs, lost replies, round trips per call, the config's checks, and the operator's
// show and release.
#include <catch2/catch.hpp>

#include <set>
#include <thread>

#include "applets/cluster_ipam/config.hpp"
#include "core/fw/sha512.hpp"
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

Call call(Kv& kv, const std::string& node, std::int64_t now = 1000, const NodeCache* cache = nullptr, std::string config = {}) {
    return Call{kv, Keys{"/cni-all/ipam/"}, node, now, 300, cache, std::move(config)};
}

std::string add_one(Kv& kv, const ClusterConf& c, const std::string& node, const std::string& cid, std::int64_t now = 1000) {
    auto ips = allocate(call(kv, node, now), c.sets, handle_id(node, "net1", cid, "eth0"));
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
    const auto id = handle_id("n1", "net1", "c1", "eth0");
    auto first = allocate(call(kv, "n1", 1000, &cache), c.sets, id);
    REQUIRE(first);
    CHECK((*first)[0].address.str() == "10.1.0.2/24");  // .0 is not in the range, .1 is the gateway
    CHECK((*first)[0].gateway->str() == "10.1.0.1");
    CHECK(kv.round_trips() == 2);  // one read of the pool (nothing cached), one txn
    auto again = allocate(call(kv, "n1", 1000, &cache), c.sets, id);
    REQUIRE(again);
    CHECK(*again == *first);
    const auto before = kv.round_trips();
    auto second = allocate(call(kv, "n1", 1000, &cache), c.sets, handle_id("n1", "net1", "c2", "eth0"));
    REQUIRE(second);
    CHECK((*second)[0].address.str() == "10.1.0.3/24");
    CHECK(kv.round_trips() - before == 1);  // a block held and cached: ONE txn
    // Without the cache the same ADD reads first: two round trips.
    const auto b2 = kv.round_trips();
    REQUIRE(allocate(call(kv, "n1"), c.sets, handle_id("n1", "net1", "c3", "eth0")));
    CHECK(kv.round_trips() - b2 == 2);
    // A stale cache (another process wrote the block since) costs one failed txn, no duplicate.
    REQUIRE(allocate(call(kv, "n1", 1000, &cache), c.sets, handle_id("n1", "net1", "c4", "eth0")));
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
                auto ips = allocate(call(kv, node, 1000, cached ? &caches[std::size_t(t % 8)] : nullptr), c.sets, handle_id(node, "net1", "c" + std::to_string(t) + "-" + std::to_string(i), "eth0"));
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
    auto more = allocate(call(kv, "a"), c.sets, handle_id("a", "net1", "late", "eth0"));
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
        auto h = lookup(call(kv, "a"), handle_id("a", "net1", "c" + std::to_string(i), "eth0"));
        freed.insert((*h)->addresses[0].ip.address.str());
        REQUIRE(release(call(kv, "a"), handle_id("a", "net1", "c" + std::to_string(i), "eth0")));
    }
    std::set<std::string> borrowed;
    for (int i = 0; i < 3; ++i) borrowed.insert(add_one(kv, c, "b", "b" + std::to_string(i)));
    CHECK(borrowed == freed);
    for (const auto& [key, v] : kv.dump())
        if (key.find("/blocks/") != std::string::npos) CHECK(decode_block(v.value)->node == "a");
    CHECK(!allocate(call(kv, "b"), c.sets, handle_id("b", "net1", "b9", "eth0")));
    check_consistent(kv);
}

TEST_CASE("cluster-ipam: dual stack gives one address per family in blocks of each family's size", "[cluster-ipam]") {
    FakeKv kv;
    auto c = conf("", R"([[{"subnet":"10.3.0.0/16"}],[{"subnet":"fd00:3::/64"}]])");
    auto ips = allocate(call(kv, "n1"), c.sets, handle_id("n1", "net1", "c1", "eth0"));
    REQUIRE(ips);
    REQUIRE(ips->size() == 2);
    CHECK((*ips)[0].address.ip.is_v4());
    CHECK((*ips)[1].address.str().starts_with("fd00:3::"));
    CHECK((*ips)[1].address.prefix == 64);
    std::set<std::string> blocks;
    for (const auto& [key, v] : kv.dump())
        if (key.find("/blocks/") != std::string::npos) blocks.insert(key.substr(key.rfind('-')));
    CHECK(blocks == std::set<std::string>{"-26", "-122"});
    REQUIRE(release(call(kv, "n1"), handle_id("n1", "net1", "c1", "eth0")));
    check_consistent(kv);
}

TEST_CASE("cluster-ipam: exclude is never handed out", "[cluster-ipam]") {
    FakeKv kv;
    auto c = conf(R"("blockSize":29,"exclude":["10.9.0.0/29","10.9.0.12/32"],)", R"([[{"subnet":"10.9.0.0/28"}]])");
    std::set<std::string> got;
    for (int i = 0; i < 6; ++i) got.insert(add_one(kv, c, "n1", "c" + std::to_string(i)));
    CHECK(got == std::set<std::string>{"10.9.0.8/28", "10.9.0.9/28", "10.9.0.10/28", "10.9.0.11/28", "10.9.0.13/28", "10.9.0.14/28"});
    CHECK(!allocate(call(kv, "n1"), c.sets, handle_id("n1", "net1", "x", "eth0")));
}

TEST_CASE("cluster-ipam: DEL needs no prevResult, twice is fine, and the address comes back", "[cluster-ipam]") {
    FakeKv kv;
    auto c = conf(R"("blockSize":30,)", R"([[{"subnet":"10.9.0.0/29"}]])");
    const auto a = add_one(kv, c, "n1", "c1");
    REQUIRE(release(call(kv, "n1"), handle_id("n1", "net1", "c1", "eth0")));
    REQUIRE(release(call(kv, "n1"), handle_id("n1", "net1", "c1", "eth0")));
    CHECK(!*lookup(call(kv, "n1"), handle_id("n1", "net1", "c1", "eth0")));
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
    b.allocations[40] = handle_id("n1", "net1", "ghost", "eth0");
    kv.put(block_key, encode(b));
    REQUIRE(collect(call(kv, "n1"), "net1", c.sets, {{"keep", "eth0"}}));
    auto after = *decode_block(kv.dump()[block_key].value);
    CHECK(after.allocations.size() == 1);
    CHECK(after.allocations.begin()->second == handle_id("n1", "net1", "keep", "eth0"));
    CHECK(*lookup(call(kv, "n2"), handle_id("n2", "net1", "other-node", "eth0")));  // n2's: not n1's GC's
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
    auto down = allocate(call(kv, "n1"), c.sets, handle_id("n1", "net1", "c1", "eth0"));
    REQUIRE(!down);
    CHECK(down.error().code == code::try_again_later);
    kv.lose_next_replies(1);
    auto lost = allocate(call(kv, "n1"), c.sets, handle_id("n1", "net1", "c1", "eth0"));
    REQUIRE(!lost);
    CHECK(lost.error().code == code::try_again_later);
    const auto a = add_one(kv, c, "n1", "c1");
    CHECK(a == "10.5.0.2/24");
    CHECK(add_one(kv, c, "n1", "c2") == "10.5.0.3/24");
    // A DEL whose reply is lost: the next DEL finds nothing held, and GC has nothing to repair.
    kv.lose_next_replies(1);
    CHECK(!release(call(kv, "n1"), handle_id("n1", "net1", "c1", "eth0")));
    REQUIRE(release(call(kv, "n1"), handle_id("n1", "net1", "c1", "eth0")));
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
    auto mixed = allocate(call(kv, "n2"), conf(R"("blockSize":28,)", R"([[{"subnet":"10.6.0.0/24"}]])").sets, handle_id("n2", "net1", "c2", "eth0"));
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
    REQUIRE(release(call(kv, "n2", 1400), handle_id("n2", "net1", "b0", "eth0")));
    CHECK(add_one(kv, c, "n3", "c0", 1400) != "");  // emptied and past gone's grace period: n3 claims it
    for (const auto& [key, v] : kv.dump())
        if (key.find("/blocks/") != std::string::npos) CHECK(decode_block(v.value)->node == "n3");
    check_consistent(kv);
    CHECK(borrowed == "10.8.0.3/28");
}

TEST_CASE("cluster-ipam: GC of one network config never releases another's of the same name", "[cluster-ipam]") {
    FakeKv kv;
    // Two tenants' configs both named net1: other subnets, and the same subnet with other keys.
    auto a = conf("", R"([[{"subnet":"10.30.0.0/24"}]])");
    auto b = conf("", R"([[{"subnet":"10.31.0.0/24"}]])");
    auto a2 = conf(R"("exclude":["10.30.0.128/25"],)", R"([[{"subnet":"10.30.0.0/24"}]])");
    REQUIRE(a.digest != b.digest);
    REQUIRE(a.digest != a2.digest);
    auto add = [&](const ClusterConf& c, const std::string& cid) {
        auto ips = allocate(call(kv, "n1", 1000, nullptr, c.digest), c.sets, handle_id("n1", "net1", cid, "eth0"));
        REQUIRE(ips);
        return (*ips)[0].address.str();
    };
    add(a, "a-pod");
    const auto b_addr = add(b, "b-pod");
    const auto a2_addr = add(a2, "a2-pod");
    auto gc = collect(call(kv, "n1", 1000, nullptr, a.digest), "net1", a.sets, {});
    REQUIRE(gc);
    CHECK(gc->released == 1);
    CHECK(gc->others == 2);
    CHECK(!*lookup(call(kv, "n1"), handle_id("n1", "net1", "a-pod", "eth0")));
    auto b_held = *lookup(call(kv, "n1"), handle_id("n1", "net1", "b-pod", "eth0"));
    REQUIRE(b_held);
    CHECK(b_held->addresses[0].ip.address.str() == b_addr);
    CHECK(b_held->config == b.digest);
    auto a2_held = *lookup(call(kv, "n1"), handle_id("n1", "net1", "a2-pod", "eth0"));
    REQUIRE(a2_held);
    CHECK(a2_held->addresses[0].ip.address.str() == a2_addr);
    check_consistent(kv);  // B's and A2's allocations are still in their blocks
    // A handle of this config's digest whose address lies outside its ranges (written by hand, or
    // by a config of another subnet with the same keys otherwise) is left alone too.
    auto h = *decode_handle(kv.dump()["/cni-all/ipam/handles/" + handle_id("n1", "net1", "b-pod", "eth0")].value);
    h.config = a.digest;
    kv.put("/cni-all/ipam/handles/" + handle_id("n1", "net1", "b-pod", "eth0"), encode(h));
    gc = collect(call(kv, "n1", 1000, nullptr, a.digest), "net1", a.sets, {});
    REQUIRE(gc);
    CHECK(gc->released == 0);
    CHECK(*lookup(call(kv, "n1"), handle_id("n1", "net1", "b-pod", "eth0")));
    // B's own GC releases it.
    h.config = b.digest;
    kv.put("/cni-all/ipam/handles/" + handle_id("n1", "net1", "b-pod", "eth0"), encode(h));
    gc = collect(call(kv, "n1", 1000, nullptr, b.digest), "net1", b.sets, {});
    REQUIRE(gc);
    CHECK(gc->released == 1);
    check_consistent(kv);
}

TEST_CASE("cluster-ipam: the network digest leaves out what a runtime sets per call", "[cluster-ipam]") {
    const std::string base = R"({"cniVersion":"1.0.0","name":"n","ipam":{"type":"cluster-ipam","ranges":[[{"subnet":"10.1.0.0/24"}]]}})";
    const std::string gc = R"({"ipam":{"ranges":[[{"subnet":"10.1.0.0/24"}]],"type":"cluster-ipam"},"name":"n","cniVersion":"1.1.0",)"
                           R"("cni.dev/valid-attachments":[],"runtimeConfig":{},"args":{},"prevResult":{}})";
    CHECK(network_digest(base) == network_digest(gc));
    CHECK(network_digest(base).size() == 32);
    CHECK(network_digest(base) != network_digest(R"({"cniVersion":"1.0.0","name":"n","ipam":{"type":"cluster-ipam"}})"));
}

TEST_CASE("cluster-ipam: one container ID on two nodes makes two handles and two addresses", "[cluster-ipam]") {
    FakeKv kv;
    auto c = conf(R"("blockSize":28,)", R"([[{"subnet":"10.32.0.0/24"}]])");
    const auto on1 = add_one(kv, c, "n1", "same");
    const auto on2 = add_one(kv, c, "n2", "same");
    CHECK(on1 != on2);
    CHECK(add_one(kv, c, "n2", "same") == on2);  // the same ADD again on n2: its own
    check_consistent(kv);
    // DEL on n2 leaves n1's; GC on n1 with nothing valid leaves n2's.
    REQUIRE(release(call(kv, "n2"), handle_id("n2", "net1", "same", "eth0")));
    CHECK(*lookup(call(kv, "n1"), handle_id("n1", "net1", "same", "eth0")));
    add_one(kv, c, "n2", "same");
    REQUIRE(collect(call(kv, "n1"), "net1", c.sets, {}));
    CHECK(!*lookup(call(kv, "n1"), handle_id("n1", "net1", "same", "eth0")));
    auto kept = *lookup(call(kv, "n2"), handle_id("n2", "net1", "same", "eth0"));
    REQUIRE(kept);
    CHECK(kept->node == "n2");
    check_consistent(kv);
    CHECK(kv.dump().contains("/cni-all/ipam/handles/n2/net1/same/eth0"));
}

TEST_CASE("cluster-ipam: a cache file is read only for its store and node, and only its entries of this prefix's own blocks", "[cluster-ipam]") {
    TempDir tmp;
    auto cache_in = [&](const std::string& store, const std::string& node) { return NodeCache(*os::Dir::open(tmp.path), store, node); };
    // Another store's file in this store's name (as a hash collision would make it): ignored.
    const std::string mine = "/cni-all/ipam/\nhttp://127.0.0.1:2379";
    cache_in("/cni-all/ipam/\nhttp://10.9.9.9:2379", "n1").save({{"k", KeyValue{"k", "v", 0, 7, 0}}});
    auto dir = *os::Dir::open(tmp.path);
    auto other_file = dir.read_if_exists("blocks-" + fw::sha512_hex("/cni-all/ipam/\nhttp://10.9.9.9:2379" + std::string(1, '\0') + "n1").substr(0, 64) + ".json", 1 << 20);
    REQUIRE(other_file);
    REQUIRE(*other_file);
    REQUIRE(dir.write_atomic("blocks-" + fw::sha512_hex(mine + std::string(1, '\0') + "n1").substr(0, 64) + ".json", **other_file, 0600));
    CHECK(cache_in(mine, "n1").load().empty());
    CHECK(cache_in("/cni-all/ipam/\nhttp://10.9.9.9:2379", "n1").load().size() == 1);
    CHECK(cache_in("/cni-all/ipam/\nhttp://10.9.9.9:2379", "n2").load().empty());
    // Entries of another prefix, of another node's block, or not a block: never planned on.
    FakeKv kv;
    auto c = conf("", R"([[{"subnet":"10.33.0.0/24"}]])");
    auto cache = cache_in(mine, "n1");
    Block fake;
    fake.node = "n1";
    fake.last = 40;
    Block theirs = fake;
    theirs.node = "n2";
    cache.save({{"/elsewhere/pools/10.33.0.0-24/blocks/10.33.0.0-26", KeyValue{"/elsewhere/pools/10.33.0.0-24/blocks/10.33.0.0-26", encode(fake), 0, 1, 0}},
                {"/cni-all/ipam/pools/10.33.0.0-24/blocks/10.33.0.0-26", KeyValue{"/cni-all/ipam/pools/10.33.0.0-24/blocks/10.33.0.0-26", encode(theirs), 0, 1, 0}},
                {"/cni-all/ipam/pools/10.33.0.0-24/blocks/x/10.33.0.0-26", KeyValue{"/cni-all/ipam/pools/10.33.0.0-24/blocks/x/10.33.0.0-26", encode(fake), 0, 1, 0}}});
    auto ips = allocate(call(kv, "n1", 1000, &cache), c.sets, handle_id("n1", "net1", "c1", "eth0"));
    REQUIRE(ips);
    CHECK((*ips)[0].address.str() == "10.33.0.2/24");  // not .41, after the poisoned `last`
    CHECK(kv.round_trips() == 2);                      // nothing usable cached: a read first
    // DEL with the cache's entry of the real block replaced by another node's value at the real
    // revision: not used (it would give the block to n2); the block is read from the store.
    std::string real;
    for (const auto& [key, v] : kv.dump())
        if (key.find("/blocks/") != std::string::npos) real = key;
    cache.save({{real, KeyValue{real, encode(theirs), 0, kv.dump()[real].mod_revision, 0}}});
    const auto before = kv.round_trips();
    REQUIRE(release(call(kv, "n1", 1000, &cache), handle_id("n1", "net1", "c1", "eth0")));
    CHECK(kv.round_trips() - before == 3);  // the handle, its block, one txn
    CHECK(decode_block(kv.dump()[real].value)->node == "n1");
    check_consistent(kv);
}

TEST_CASE("cluster-ipam: a prefix outside root's base, or endpoints root did not list, are refused with code 7", "[cluster-ipam]") {
    EtcdConf e;
    e.endpoints = {"https://10.0.0.11:2379"};
    e.prefix = "/registry/";
    auto st = check_store(e, NodeStore{});
    REQUIRE(!st);
    CHECK(st.error().code == code::invalid_config);
    CHECK(st.error().msg.find("ipam.etcd.prefix \"/registry/\" is not under this node's base prefix \"/cni-all/\"") != std::string::npos);
    e.prefix = "/cni-all/tenant-a/";
    CHECK(check_store(e, NodeStore{}));
    CHECK(!check_store(e, NodeStore{"/cni-all/ipam/", std::nullopt}));
    CHECK(check_store(e, NodeStore{"/", std::nullopt}));
    NodeStore listed{"/cni-all/", std::vector<std::string>{"https://10.0.0.11:2379", "https://10.0.0.12:2379"}};
    CHECK(check_store(e, listed));
    e.endpoints.push_back("http://169.254.169.254:80");
    st = check_store(e, listed);
    REQUIRE(!st);
    CHECK(st.error().code == code::invalid_config);
    CHECK(st.error().msg.find("ipam.etcd.endpoints: \"http://169.254.169.254:80\" is not one of this node's etcd endpoints") != std::string::npos);
    // A prefix inside another's keys, and a dialTimeout past a minute, are refused when parsed.
    Request req;
    req.config = conf_json(R"("etcd":{"endpoints":["http://x"],"prefix":"/cni-all/ipam/pools/10.20.0.0-16/"},)", R"([[{"subnet":"10.1.0.0/24"}]])");
    auto nested = parse_conf(req);
    REQUIRE(!nested);
    CHECK(nested.error().msg.find("holds /pools/ or /handles/") != std::string::npos);
    req.config = conf_json(R"("etcd":{"endpoints":["http://x"],"dialTimeout":"2m"},)", R"([[{"subnet":"10.1.0.0/24"}]])");
    auto slow = parse_conf(req);
    REQUIRE(!slow);
    CHECK(slow.error().msg.find("at most 1m") != std::string::npos);
    req.config = conf_json(R"("etcd":{"endpoints":["http://x"],"dialTimeout":60},)", R"([[{"subnet":"10.1.0.0/24"}]])");
    CHECK(parse_conf(req));
}

TEST_CASE("cluster-ipam: keys of a prefix nested in this one's pools are not this pool's blocks", "[cluster-ipam]") {
    FakeKv kv;
    auto c = conf(R"("blockSize":30,)", R"([[{"subnet":"10.34.0.0/29"}]])");
    add_one(kv, c, "n1", "c0");
    // A full block of node x under a nested prefix: /cni-all/ipam/pools/10.34.0.0-29/pools/...
    Block full;
    full.node = "x";
    for (std::uint32_t o = 0; o < 4; ++o) full.allocations[o] = "x/net1/c/eth0";
    kv.put("/cni-all/ipam/pools/10.34.0.0-29/pools/10.34.0.0-29/blocks/10.34.0.4-30", encode(full));
    kv.put("/cni-all/ipam/pools/10.34.0.0-29/blocks/10.34.0.4-30/x", encode(full));
    auto out = show(call(kv, "operator"));
    REQUIRE(out);
    CHECK(out->find("node x") == std::string::npos);
    CHECK(check_free(call(kv, "n1"), c.sets));  // 10.34.0.4-30 is still free
    CHECK(add_one(kv, c, "n2", "c1").starts_with("10.34.0."));
    REQUIRE(collect(call(kv, "n1", 5000), "net1", c.sets, {}));
    CHECK(kv.dump().contains("/cni-all/ipam/pools/10.34.0.0-29/pools/10.34.0.0-29/blocks/10.34.0.4-30"));
}
