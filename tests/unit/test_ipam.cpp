// SPDX-License-Identifier: Apache-2.0
// host-local ranges, allocator and on-disk store against temporary directories: reference
// defaults and messages, overlaps found in n log n, allocation order, exhaustion, files written
// by the Go plugin, the index, 10,000 allocations in a /16, and a walk past a full stretch.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <thread>

#include "applets/host_local/resolv_conf.hpp"
#include "core/ipam/allocator.hpp"
#include "core/os/node_folder.hpp"
#include "core/strings.hpp"
#include "temp_dir.hpp"

using namespace cni;
using namespace cni::ipam;
using cni::host_local::parse_resolv_conf;
using cni::host_local::parse_resolv_conf_text;

namespace {

Range range(std::string subnet, std::string start = "", std::string end = "", std::string gw = "") {
    Range r;
    r.subnet = net::IpNet::parse(subnet);
    if (!start.empty()) r.range_start = net::IpAddr::parse(start);
    if (!end.empty()) r.range_end = net::IpAddr::parse(end);
    if (!gw.empty()) r.gateway = net::IpAddr::parse(gw);
    return r;
}

RangeSet set_of(std::vector<Range> rs) {
    RangeSet s(rs.begin(), rs.end());
    auto st = canonicalize(s);
    REQUIRE(st);
    return s;
}

std::vector<std::string> warnings;
Store open_store(const TempDir& d, const std::string& net = "net1") {
    warnings.clear();
    auto s = Store::open(d.path, net, [](std::string_view w) { warnings.emplace_back(w); });
    REQUIRE(s);
    return std::move(*s);
}

std::string alloc(Store& s, const RangeSet& set, std::string id, std::optional<std::string> want = std::nullopt, int idx = 0) {
    std::optional<net::IpAddr> req;
    if (want) req = net::IpAddr::parse(*want);
    auto r = allocate(s, set, idx, id, "eth0", req);
    return r ? r->address.str() + (r->gateway ? " gw " + r->gateway->str() : "") : "ERR " + r.error().msg;
}

}  // namespace

TEST_CASE("ranges get the reference's defaults", "[host-local]") {
    auto v4 = set_of({range("10.1.2.0/24")});
    CHECK(str(v4) == "10.1.2.1-10.1.2.254");
    CHECK(v4[0].gateway->str() == "10.1.2.1");
    auto v6 = set_of({range("fd00::/120")});
    CHECK(str(v6) == "fd00::1-fd00::ff");  // IPv6 keeps the last address
    auto custom = set_of({range("10.1.0.0/16", "10.1.1.20", "10.1.3.50", "10.1.0.254")});
    CHECK(str(custom) == "10.1.1.20-10.1.3.50");
    CHECK(size(custom) == 543);
}

TEST_CASE("range validation messages", "[host-local]") {
    auto err = [](Range r) {
        RangeSet s{r};
        auto st = canonicalize(s);
        return st ? std::string("ok") : st.error().msg;
    };
    CHECK(err(range("10.0.0.0/31")) == "Network 10.0.0.0/31 too small to allocate from");
    CHECK(err(range("10.0.0.5/24")) == "Network has host bits set. For a subnet mask of length 24 the network address is 10.0.0.0");
    CHECK(err(range("10.0.0.0/24", "10.0.1.1")) == "RangeStart 10.0.1.1 not in network 10.0.0.0/24");
    CHECK(err(range("10.0.0.0/24", "", "10.0.1.10")) == "RangeEnd 10.0.1.10 not in network 10.0.0.0/24");
    // Like the reference, a start after the end fails the start's check.
    CHECK(err(range("10.0.0.0/24", "10.0.0.50", "10.0.0.10")) == "RangeStart 10.0.0.50 not in network 10.0.0.0/24");
    CHECK(err(Range{}) == "IP <nil> not v4 nor v6");
    RangeSet mixed{range("10.0.0.0/24"), range("fd00::/64")};
    CHECK(canonicalize(mixed).error().msg == "mixed address families");
    RangeSet overlap{range("10.0.0.0/24"), range("10.0.0.0/25")};
    CHECK(canonicalize(overlap).error().msg == "subnets 10.0.0.1-10.0.0.254 and 10.0.0.1-10.0.0.126 overlap");
    RangeSet empty;
    CHECK(canonicalize(empty).error().msg == "empty range set");
}

TEST_CASE("overlaps are found in n log n, the first pair in the reference's order", "[host-local]") {
    // r0 overlaps r3, and r1 r2: the reference's loop over i, then j, names r0 and r3 first.
    RangeSet set{range("10.0.0.0/24", "10.0.0.10", "10.0.0.20"), range("10.0.0.0/24", "10.0.0.30", "10.0.0.40"),
                 range("10.0.0.0/24", "10.0.0.35", "10.0.0.36"), range("10.0.0.0/24", "10.0.0.5", "10.0.0.12")};
    CHECK(canonicalize(set).error().msg == "subnets 10.0.0.10-10.0.0.20 and 10.0.0.5-10.0.0.12 overlap");
    std::vector<RangeSet> sets{set_of({range("10.1.0.0/24")}), set_of({range("fd00::/64")}),
                               set_of({range("10.2.0.0/24", "10.2.0.5", "10.2.0.9")}), set_of({range("10.2.0.0/24", "10.2.0.9")}),
                               set_of({range("10.1.0.0/24", "10.1.0.200", "10.1.0.200")})};
    CHECK(first_overlapping_sets(sets) == std::pair<std::size_t, std::size_t>{0, 4});
    sets.pop_back();
    CHECK(first_overlapping_sets(sets) == std::pair<std::size_t, std::size_t>{2, 3});
    sets.pop_back();
    CHECK_FALSE(first_overlapping_sets(sets));
    // 20,000 single-address ranges, the last one a repeat of the first: 200 million pair tests
    // when every pair was tested (seconds, and tens of them under the sanitizers).
    RangeSet many;
    for (int i = 0; i < 20000; ++i) {
        auto ip = net::IpAddr::from_v4(0x0a100000u + std::uint32_t(i * 7 % 65521 + 2)).str();
        many.push_back(range("10.16.0.0/16", ip, ip));
    }
    auto t0 = std::chrono::steady_clock::now();
    CHECK(canonicalize(many));
    many.push_back(many.front());
    CHECK(canonicalize(many).error().msg.ends_with(" overlap"));
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1));
}

TEST_CASE("allocation walks round-robin from last_reserved_ip, skipping the gateway", "[host-local]") {
    TempDir d;
    auto set = set_of({range("10.9.0.0/29")});  // .1 gateway, .2-.6 usable
    {
        auto s = open_store(d);
        CHECK(alloc(s, set, "a") == "10.9.0.2/29 gw 10.9.0.1");
        CHECK(alloc(s, set, "b") == "10.9.0.3/29 gw 10.9.0.1");
        s.flush();
    }
    CHECK(d.read("net1/10.9.0.2") == "a\r\neth0");
    CHECK(d.read("net1/last_reserved_ip.0") == "10.9.0.3");
    CHECK((std::filesystem::status(d / "net1/10.9.0.2").permissions() & std::filesystem::perms::all) ==
          (std::filesystem::perms::owner_read | std::filesystem::perms::owner_write));
    {
        auto s = open_store(d);
        REQUIRE(s.release_by_id("a", "eth0"));
        CHECK(alloc(s, set, "c") == "10.9.0.4/29 gw 10.9.0.1");  // continues after .3, not reusing .2 first
        CHECK(alloc(s, set, "d") == "10.9.0.5/29 gw 10.9.0.1");
        CHECK(alloc(s, set, "e") == "10.9.0.6/29 gw 10.9.0.1");
        CHECK(alloc(s, set, "f") == "10.9.0.2/29 gw 10.9.0.1");  // wraps around
        CHECK(alloc(s, set, "g") == "ERR no IP addresses available in range set: 10.9.0.1-10.9.0.6");
        CHECK_FALSE(has_free_address(s, set, 0));
    }
}

TEST_CASE("requested addresses, the gateway and duplicates", "[host-local]") {
    TempDir d;
    auto set = set_of({range("10.9.0.0/24")});
    auto s = open_store(d);
    CHECK(alloc(s, set, "a", "10.9.0.77") == "10.9.0.77/24 gw 10.9.0.1");
    CHECK(d.read("net1/last_reserved_ip.0") == "10.9.0.77");
    CHECK(alloc(s, set, "b", "10.9.0.77") == "ERR requested IP address 10.9.0.77 is not available in range set 10.9.0.1-10.9.0.254");
    CHECK(alloc(s, set, "b", "10.9.0.1") == "ERR requested ip 10.9.0.1 is subnet's gateway");
    CHECK(alloc(s, set, "a") == "ERR 10.9.0.77 has been allocated to a, duplicate allocation is not allowed");
    CHECK(alloc(s, set, "b") == "10.9.0.78/24 gw 10.9.0.1");
}

TEST_CASE("a reservation whose last_reserved_ip cannot be written is undone", "[host-local]") {
    TempDir d;
    auto set = set_of({range("10.8.0.0/24")});
    std::filesystem::create_directories(d / "net1/last_reserved_ip.0");  // open(O_WRONLY) gets EISDIR
    auto s = open_store(d);
    for (std::optional<std::string> want : {std::optional<std::string>(), std::optional<std::string>("10.8.0.9")}) {
        auto got = alloc(s, set, "c0", want);
        CHECK(got.starts_with("ERR "));
        CHECK(got.find("last_reserved_ip.0") != std::string::npos);
    }
    CHECK_FALSE(d.exists("net1/10.8.0.2"));  // no file left for an ADD that failed
    CHECK_FALSE(d.exists("net1/10.8.0.9"));
    CHECK_FALSE(s.taken(*net::IpAddr::parse("10.8.0.2")));
    CHECK(s.find_by_id("c0", "eth0").empty());
    std::filesystem::remove(d / "net1/last_reserved_ip.0");
    CHECK(alloc(s, set, "c0") == "10.8.0.2/24 gw 10.8.0.1");
    CHECK(d.read("net1/10.8.0.2") == "c0\r\neth0");
}

TEST_CASE("several ranges in a set are walked in order", "[host-local]") {
    TempDir d;
    auto set = set_of({range("10.1.0.0/24", "10.1.0.253"), range("10.2.0.0/24", "", "10.2.0.3")});
    auto s = open_store(d);
    CHECK(alloc(s, set, "a") == "10.1.0.253/24 gw 10.1.0.1");
    CHECK(alloc(s, set, "b") == "10.1.0.254/24 gw 10.1.0.1");
    CHECK(alloc(s, set, "c") == "10.2.0.2/24 gw 10.2.0.1");  // 10.2.0.1 is that range's gateway
    CHECK(alloc(s, set, "d") == "10.2.0.3/24 gw 10.2.0.1");
    CHECK(alloc(s, set, "e").starts_with("ERR no IP addresses available in range set: 10.1.0.253-10.1.0.254,10.2.0.1-10.2.0.3"));
}

TEST_CASE("exhaustion of a huge IPv6 range is decided without walking it", "[host-local]") {
    TempDir d;
    auto set = set_of({range("fd00::/64", "fd00::ffff:ffff:ffff:fffe")});
    auto s = open_store(d);
    CHECK(alloc(s, set, "a") == "fd00::ffff:ffff:ffff:fffe/64 gw fd00::1");
    CHECK(alloc(s, set, "b") == "fd00::ffff:ffff:ffff:ffff/64 gw fd00::1");
    auto t0 = std::chrono::steady_clock::now();
    CHECK(alloc(s, set, "c").starts_with("ERR no IP addresses available"));
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1));
}

TEST_CASE("files written by the reference plugin are read, matched and released alike", "[host-local]") {
    TempDir d;
    d.write("net1/10.5.0.2", "ref-a\r\neth0");
    d.write("net1/10.5.0.3", "legacy-b");
    d.write("net1/10.5.0.4", "ref-a\r\neth1");
    d.write("net1/last_reserved_ip.0", "10.5.0.4");
    d.write("net1/lock", "");
    auto set = set_of({range("10.5.0.0/24")});
    auto s = open_store(d);
    CHECK(warnings.empty());
    CHECK(s.taken(*net::IpAddr::parse("10.5.0.3")));
    CHECK(alloc(s, set, "new") == "10.5.0.5/24 gw 10.5.0.1");  // after the reference's last_reserved_ip
    CHECK(s.has_id("ref-a", "eth0"));
    CHECK(s.has_id("legacy-b", "eth0"));  // legacy files match any ifname
    CHECK_FALSE(s.has_id("nobody", "eth0"));
    CHECK(alloc(s, set, "ref-a").starts_with("ERR 10.5.0.2 has been allocated to ref-a"));
    REQUIRE(s.release_by_id("ref-a", "eth0"));
    CHECK_FALSE(d.exists("net1/10.5.0.2"));
    CHECK(d.exists("net1/10.5.0.4"));  // eth1 is another attachment
    REQUIRE(s.release_by_id("legacy-b", "eth0"));
    CHECK_FALSE(d.exists("net1/10.5.0.3"));
}

TEST_CASE("foreign files are skipped with a warning and keep their address unavailable", "[host-local]") {
    TempDir d;
    d.write("net1/notes.txt", "hello");
    d.write("net1/10.5.0.2", "");
    d.write("net1/010.5.0.3", "x\r\neth0");  // not how Go names a file
    auto s = open_store(d);
    CHECK(warnings.size() == 3);
    CHECK(s.taken(*net::IpAddr::parse("10.5.0.2")));
    CHECK_FALSE(s.taken(*net::IpAddr::parse("10.5.0.3")));
    auto set = set_of({range("10.5.0.0/24")});
    CHECK(alloc(s, set, "a") == "10.5.0.3/24 gw 10.5.0.1");
}

// Containers c0..c<n-1> get addresses in 10.7.0.0/24 and the index is written.
void allocate_and_flush(const TempDir& d, int n) {
    auto set = set_of({range("10.7.0.0/24")});
    auto s = open_store(d);
    for (int i = 0; i < n; ++i) REQUIRE(alloc(s, set, "c" + std::to_string(i)).starts_with("10.7.0."));
    s.flush();
}

TEST_CASE("the index spares re-reading files, and notices files replaced behind its back", "[host-local]") {
    TempDir d;
    allocate_and_flush(d, 20);
    {
        auto s = open_store(d);
        CHECK(s.files_read() == 0);
        CHECK(s.has_id("c7", "eth0"));
    }
    // The Go plugin (a separate process, at once) releases c3's address and gives it to someone
    // else; the file system may even hand the new file the old inode number.
    std::filesystem::remove(d / "net1/10.7.0.5");
    d.write("net1/10.7.0.5", "other\r\neth0");
    {
        auto s = open_store(d);
        CHECK(s.files_read() == 20);  // a foreign change: everything is read once
        CHECK(s.has_id("other", "eth0"));
        CHECK_FALSE(s.has_id("c3", "eth0"));
        s.flush();
    }
    {
        auto s = open_store(d);
        CHECK(s.files_read() == 0);  // and the index is trusted again
        CHECK(s.has_id("other", "eth0"));
    }
    // The Go plugin adds a reservation at once after our call: noticed, though the clock's tick
    // has not moved (the directory's mtime was set to a time no create writes).
    {
        auto s = open_store(d);
        REQUIRE(alloc(s, set_of({range("10.7.0.0/24")}), "late").starts_with("10.7.0."));
        s.flush();
    }
    d.write("net1/10.7.0.100", "go\r\neth0");
    CHECK(open_store(d).has_id("go", "eth0"));
    // A corrupt header is ignored and the index rebuilt.
    d.write("net1/.cni-all-index", "garbage");
    {
        auto s = open_store(d);
        CHECK(s.files_read() == 22);
        s.flush();
    }
    CHECK(d.read("net1/.cni-all-index").starts_with("cni-all host-local index 3 "));
}

TEST_CASE("a bucket that is torn or holds an owner of another bucket is not trusted", "[host-local]") {
    TempDir d;
    allocate_and_flush(d, 3);
    auto open_counting = [&](std::string_view id) {
        auto s = open_store(d);
        bool found = s.has_id(id, "eth0");
        s.flush();
        return std::pair{found, s.files_read()};
    };
    // Find c0's bucket by its content.
    std::string name, text;
    for (auto& e : std::filesystem::directory_iterator(d / "net1/.cni-all-index.d")) {
        std::string t = d.read("net1/.cni-all-index.d/" + e.path().filename().string());
        if (t.find(" c c0 eth0 ;\n") != std::string::npos) name = e.path().filename().string(), text = t;
    }
    REQUIRE(!name.empty());
    CHECK(open_counting("c0") == std::pair{true, std::size_t(0)});
    auto rewrite = [&](const std::string& t) {  // rewritten in place: the directory keeps its stamp
        std::FILE* f = std::fopen((d / ("net1/.cni-all-index.d/" + name)).c_str(), "r+");
        REQUIRE(f);
        std::fwrite(t.data(), 1, t.size(), f);
        std::fclose(f);
        std::filesystem::resize_file(d / ("net1/.cni-all-index.d/" + name), t.size());
    };
    rewrite(text.substr(0, text.size() - 2));  // a torn last line
    CHECK(open_counting("c0") == std::pair{true, std::size_t(3)});
    CHECK(open_counting("c0") == std::pair{true, std::size_t(0)});  // rebuilt
    rewrite(text + "10.7.0.9 c not-this-bucket eth0 ;\n");
    CHECK(open_counting("c0") == std::pair{true, std::size_t(3)});
    CHECK_FALSE(open_counting("not-this-bucket").first);
}

TEST_CASE("a stale index never releases someone else's address", "[host-local]") {
    TempDir d;
    auto set = set_of({range("10.7.0.0/24")});
    auto s = open_store(d);
    REQUIRE(alloc(s, set, "a") == "10.7.0.2/24 gw 10.7.0.1");
    // Rewritten in place (same inode) by something else: the store still believes "a".
    d.write("net1/10.7.0.2", "b\r\neth0");
    REQUIRE(s.release_by_id("a", "eth0"));
    CHECK(d.read("net1/10.7.0.2") == "b\r\neth0");
}

TEST_CASE("10,000 allocations in a /16, and a new call does not re-read them", "[host-local]") {
    TempDir d;
    auto set = set_of({range("10.200.0.0/16")});
    {
        auto s = open_store(d);
        for (int i = 0; i < 10000; ++i) {
            auto r = allocate(s, set, 0, "c" + std::to_string(i), "eth0", std::nullopt);
            REQUIRE(r);
        }
        s.flush();
    }
    CHECK(d.read("net1/last_reserved_ip.0") == "10.200.39.17");  // .2 + 9999, the gateway .1 skipped
    auto t0 = std::chrono::steady_clock::now();
    auto s = open_store(d);
    auto r = allocate(s, set, 0, "one-more", "eth0", std::nullopt);
    s.flush();
    auto elapsed = std::chrono::steady_clock::now() - t0;
    REQUIRE(r);
    CHECK(r->address.str() == "10.200.39.18/16");
    CHECK(s.files_read() == 0);
    CHECK(elapsed < std::chrono::milliseconds(250));
    CHECK(s.has_id("c9999", "eth0"));
}

TEST_CASE("a walk past more taken addresses than it probes goes on with the index, in order", "[host-local]") {
    TempDir d;
    auto set = set_of({range("10.12.0.0/22")});
    {
        auto s = open_store(d);
        for (int i = 0; i < 300; ++i) REQUIRE(allocate(s, set, 0, "c" + std::to_string(i), "eth0", std::nullopt));
        REQUIRE(s.release_by_id("c150", "eth0"));  // 10.12.0.152, behind 148 taken ones from .2
        s.flush();
    }
    std::filesystem::remove(d / "net1/last_reserved_ip.0");  // the walk starts at the first address
    auto s = open_store(d);
    CHECK(alloc(s, set, "x") == "10.12.0.152/22 gw 10.12.0.1");
    CHECK(alloc(s, set, "y") == "10.12.1.46/22 gw 10.12.0.1");  // after the 300 (.2 to 10.12.1.45)
    CHECK(has_free_address(s, set, 0));
}

TEST_CASE("a store is never opened in a node's folder, nor under a name that is no folder name", "[ipam][os]") {
    TempDir d;
    auto open = [](const std::string& dir, const std::string& net) { return Store::open(dir, net, [](std::string_view) {}); };
    for (std::string bad : {"..", "../x", "a/b", ".", ""}) {
        auto s = open(d.path, bad);
        REQUIRE(!s);
        CHECK(s.error().code == code::invalid_config);
        CHECK(s.error().msg == "invalid characters found in network name");
        CHECK(s.error().details == bad);
    }
    auto node = os::Dir::create(d / "node", 0755);
    REQUIRE(node);
    REQUIRE(os::mark_node_folder(*node, "the node's folder"));
    REQUIRE(os::mark_node_folder(*node, "not written again"));
    CHECK(d.read("node/.cni-all-node-folder") == "the node's folder");
    std::filesystem::create_symlink(d / "node", d / "link");
    for (std::string inside : {d / "node", d / "node/a/b", d / "link", d / "link/c"}) {
        auto s = open(inside, "net");
        REQUIRE(!s);
        CHECK(s.error().code == code::invalid_config);
        CHECK(s.error().msg == "host-local: ipam.dataDir \"" + inside +
                                   "\" lies in the node's folder, a folder of the node's that no network config may choose "
                                   "(docs/compatibility.md: host-local)");
        CHECK(s.error().details == inside);
    }
    CHECK(std::filesystem::directory_entry(d / "node").exists());
    CHECK(!d.exists("node/a"));
    CHECK(!d.exists("node/net"));
    auto dotted = open(d / "x/../node", "net");
    REQUIRE(!dotted);
    CHECK(dotted.error().msg == "host-local: ipam.dataDir \"" + d / "x/../node" + "\" has \".\" or \"..\" in it");
    // A marker others could have written does not count: no one marks /tmp for host-local.
    d.write("open/.cni-all-node-folder", "anyone's");
    std::filesystem::permissions(d / "open/.cni-all-node-folder", std::filesystem::perms(0666));
    CHECK(open(d / "open", "net"));
    CHECK(open(d / "pools", "net"));
}

TEST_CASE("resolv.conf parsing", "[host-local]") {
    auto dns = parse_resolv_conf_text("# comment\nnameserver 10.0.0.1\n; other\nnameserver 10.0.0.2\ndomain example.com\n"
                                      "search a.example b.example\noptions ndots:5 edns0\nnameserver\n");
    CHECK(dns.nameservers == std::vector<std::string>{"10.0.0.1", "10.0.0.2"});
    CHECK(dns.domain == "example.com");
    CHECK(dns.search == std::vector<std::string>{"a.example", "b.example"});
    CHECK(dns.options == std::vector<std::string>{"ndots:5", "edns0"});
    CHECK(parse_resolv_conf("/nonexistent/resolv.conf").error().msg == "open /nonexistent/resolv.conf: no such file or directory");
}
