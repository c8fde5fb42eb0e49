// SPDX-License-Identifier: Apache-2.0
// SHA-512 and the reference's chain names and comments, against values computed independently
// (Python hashlib, Go fmt %q); portmap's conditions parsed into rule selectors and matches.
#include <catch2/catch.hpp>

#include <linux/netfilter/xt_addrtype.h>

#include "applets/firewall/handle_record.hpp"
#include "applets/portmap/host_ports.hpp"
#include "core/fw/ipmasq.hpp"
#include "core/fw/names.hpp"
#include "core/fw/sha512.hpp"
#include "temp_dir.hpp"

using namespace cni::fw;
using namespace cni::firewall;

TEST_CASE("SHA-512 test vectors", "[fw]") {
    CHECK(sha512_hex("").substr(0, 32) == "cf83e1357eefb8bdf1542850d66d8007");
    CHECK(sha512_hex("abc") ==
          "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f");
    CHECK(sha512_hex(std::string(200, 'a')).substr(0, 32) == "4b11459c33f52a22ee8236782714c150");  // several blocks
    CHECK(sha512_hex(std::string(111, 'x')).size() == 128);  // padding edge: 111 + 1 + 16 = 128
}

TEST_CASE("chain names and comments are bit-exact with the reference", "[fw]") {
    CHECK(chain_name("CNI-", "mynet", "1234567890abcdef") == "CNI-e2e8cd5c6ebacde4cecc8b58");
    CHECK(chain_name("CNI-", "mynet", "1234567890abcdef").size() == 28);
    CHECK(chain_name("CNI-DN-", "mynet", "1234567890abcdef").starts_with("CNI-DN-"));
    CHECK(masq_comment("mynet", "cid-1") == "name: \"mynet\" id: \"cid-1\"");
    CHECK(masq_comment("mynet", std::string(300, 'x')).size() == 255);  // what iptables keeps of it
}

TEST_CASE("ipMasq backends: iptables and nftables served, others unknown", "[fw]") {
    CHECK(validate_ipmasq_backend(""));
    CHECK(validate_ipmasq_backend("iptables"));
    CHECK(validate_ipmasq_backend("nftables"));
    CHECK(validate_ipmasq_backend("pf").error().msg == "unknown ipmasq backend \"pf\"");
}

TEST_CASE("ipMasq nft comments: the reference's two hashes, quotes dropped, cut to 128 characters", "[fw]") {
    CHECK(nft_masq_comment({"mynet", "1234567890abcdef", "eth0", {}}) ==
          "d23676b4f2d9fe04-7f8ae66c8b7b7afa, net: mynet, if: eth0, id: 1234567890abcdef");
    std::string id(200, 'x');
    auto long_one = nft_masq_comment({"my\"net", id, "eth0", {}});
    CHECK(long_one.size() == 128);
    CHECK(long_one.starts_with("b591271a779eb12b-bf11d27beac4d86c, net: mynet, if: eth0, id: xxx"));
}

TEST_CASE("portmap conditions: selectors and the addrtype, iprange and mark matches, in order", "[portmap]") {
    using namespace cni::fw;
    constexpr auto parse_conditions = cni::portmap::iptables_conditions;
    auto c = parse_conditions({"!", "-s", "10.1.0.0/16", "-o", "eth1", "-m", "addrtype", "--src-type", "LOCAL,BROADCAST", "!",
                               "--dst-type", "UNICAST", "-m", "iprange", "--dst-range", "10.0.0.5", "-m", "mark", "--mark", "7"},
                              "conditionsV4");
    REQUIRE(c);
    CHECK(c->src == cni::net::IpNet::parse("10.1.0.0/16"));
    CHECK(c->src_inverted);
    CHECK(c->out_iface == "eth1");
    REQUIRE(c->matches.size() == 3);
    CHECK(std::get<AddrType>(c->matches[0]) == AddrType{XT_ADDRTYPE_LOCAL | XT_ADDRTYPE_BROADCAST, XT_ADDRTYPE_UNICAST, false, true});
    auto ip = *cni::net::IpAddr::parse("10.0.0.5");
    CHECK(std::get<IpRange>(c->matches[1]).dst == std::pair{ip, ip});  // one address: a range of one
    CHECK(std::get<MarkMatch>(c->matches[2]) == MarkMatch{7, 0xffffffff, false});  // no mask: all bits
    auto v6 = parse_conditions({"-m", "iprange", "!", "--src-range", "fd00::1-fd00::9"}, "conditionsV6");
    REQUIRE(v6);
    CHECK(std::get<IpRange>(v6->matches[0]).src_inverted);
    CHECK(!parse_conditions({"-s"}, "conditionsV4"));
    CHECK(!parse_conditions({"-s", "1.2.3.4", "!"}, "conditionsV4"));
    CHECK(parse_conditions({"!", "-m", "mark"}, "conditionsV4").error().msg == "conditionsV4: \"!\" cannot negate -m");
    CHECK(parse_conditions({"--mark", "1"}, "conditionsV4").error().code == 2);  // an option without its -m
}

namespace {

// A driver that records what it was asked and fails where told to.
struct FakeRules final : cni::fw::Rules<std::string> {
    std::string name;
    bool fail_teardown = false;
    mutable std::vector<std::string>* log;
    FakeRules(std::string n, std::vector<std::string>* l, bool fail = false) : name(std::move(n)), fail_teardown(fail), log(l) {}
    cni::Status setup(const std::string& s, cni::Rollback& undo) const override {
        log->push_back(name + " setup " + s);
        undo.push([this, s] { log->push_back(name + " undo " + s); });
        return {};
    }
    cni::Status check(const std::string& s) const override {
        log->push_back(name + " check " + s);
        return {};
    }
    cni::Status teardown(const std::string& s) const override {
        log->push_back(name + " teardown " + s);
        if (fail_teardown) return cni::fail(name + " failed");
        return {};
    }
    cni::Status gc(std::string_view network, const std::vector<cni::net::Attachment>& keep) const override {
        log->push_back(name + " gc " + std::string(network) + " " + std::to_string(keep.size()));
        return {};
    }
};

}  // namespace

TEST_CASE("firewall drivers: the verbs reach the chosen driver; DEL and GC reach every one and go on past a failure", "[fw]") {
    std::vector<std::string> log;
    FakeRules ipt("iptables", &log, true), nft("nftables", &log);
    Drivers<std::string> drivers{{Driver::iptables, &ipt}, {Driver::nftables, &nft}};
    CHECK(drivers.choose(Driver::nftables) == Driver::nftables);
    {
        cni::Rollback undo;
        REQUIRE(drivers.setup(Driver::nftables, "a", undo));
        REQUIRE(drivers.check(Driver::nftables, "a"));
    }  // not dismissed: the undo runs
    auto torn = drivers.teardown_all("a");
    REQUIRE_FALSE(torn);
    CHECK(torn.error().msg == "iptables failed");
    REQUIRE(drivers.gc_all("net", {{"c1", "eth0"}}));
    CHECK(log == std::vector<std::string>{"nftables setup a", "nftables check a", "nftables undo a", "iptables teardown a",
                                          "nftables teardown a", "iptables gc net 1", "nftables gc net 1"});
    auto absent = drivers.setup(Driver::firewalld, "a", *std::make_unique<cni::Rollback>());
    REQUIRE_FALSE(absent);
    CHECK(absent.error().msg == "the firewalld firewall driver does not have these rules");
}

TEST_CASE("the firewall's handle records: what encode writes decodes back; anything else is no record", "[firewall]") {
    ForwardHandles h{.v4 = {12, 13}, .v6 = {40, 41, 42, 43}};
    CHECK(encode_handles(h) == "v4 12 13\nv6 40 41 42 43\n");
    auto back = decode_handles(encode_handles(h));
    REQUIRE(back);
    CHECK(back->v4 == h.v4);
    CHECK(back->v6 == h.v6);
    CHECK(decode_handles("v6 7\n")->v4.empty());
    for (const char* bad : {"", "\n", "v4\n", "v4 0\n", "v4 012\n", "v4 -1\n", "v4 1x\n", "v4 18446744073709551616\n",
                            "v5 1\n", "v4 1\nv4 2\n", "V4 1\n"})
        CHECK_FALSE(decode_handles(bad));
    CHECK_FALSE(decode_handles(std::string("v4 1 2\0 3\n", 10)));
    std::string many = "v4";
    for (int i = 1; i <= 65; ++i) many += " " + std::to_string(i);
    CHECK_FALSE(decode_handles(many));  // more than kMaxHandles
    ForwardHandles owned{.v4 = {3}, .network_tag = "0123456789abcdef-", .ips = {*cni::net::IpAddr::parse("10.1.0.2"),
                                                                              *cni::net::IpAddr::parse("fd01::2")}};
    CHECK(encode_handles(owned) == "net 0123456789abcdef-\nip 10.1.0.2 fd01::2\nv4 3\n");
    auto again = decode_handles(encode_handles(owned));
    REQUIRE(again);
    CHECK((again->network_tag == owned.network_tag && again->ips == owned.ips && again->v4 == owned.v4));
    CHECK(decode_handles("ip 10.1.0.2\n")->ips.size() == 1);  // addresses alone: a legacy node's record
    for (const char* bad : {"net a b\n", "ip 10.1.0.300\n", "ip 10.1.0.2\nip 10.1.0.3\n", "net x\n", "net x\nnet y\nv4 1\n"})
        CHECK_FALSE(decode_handles(bad));
}

TEST_CASE("GC finds the records of a network's attachments not kept, and the addresses the others hold", "[firewall]") {
    TempDir t;
    const std::string dir = t / "records";
    auto ip = [](const char* s) { return *cni::net::IpAddr::parse(s); };
    auto owned = [](const char* net, cni::net::IpAddr a) { return ForwardHandles{.network_tag = cni::fw::nft_network_tag(net), .ips = {a}}; };
    ForwardRecord("n1", {"gone", "eth0"}, dir).save(owned("n1", ip("10.1.0.2")));
    ForwardRecord("n1", {"kept", "eth0"}, dir).save(owned("n1", ip("10.1.0.3")));
    ForwardRecord("n2", {"gone", "eth0"}, dir).save(owned("n2", ip("10.1.0.4")));
    ForwardRecord("n1", {"gone2", "eth0"}, dir, "nft").save(owned("n1", ip("10.1.0.5")));
    auto found = ForwardRecord::collectable(dir, {}, "n1", {{"kept", "eth0"}});
    REQUIRE(found.gone.size() == 1);
    CHECK(found.gone[0].second.ips == std::vector{ip("10.1.0.2")});
    CHECK(found.live_ips.size() == 2);  // n1's kept and n2's; the nft driver's record is not this driver's
    auto nft = ForwardRecord::collectable(dir, "nft", "n1", {});
    REQUIRE(nft.gone.size() == 1);
    CHECK(nft.gone[0].second.ips == std::vector{ip("10.1.0.5")});
}

TEST_CASE("a firewall handle record lives in its folder by a hash of network, container and interface; the folder goes with the last", "[firewall]") {
    TempDir t;
    const std::string dir = t / "records";
    ForwardRecord a("net", {"ctr", "eth0"}, dir), b("net", {"ctr", "eth1"}, dir);
    CHECK_FALSE(a.load());
    a.save({.v4 = {5, 6}});
    b.save({.v6 = {9, 10}});
    REQUIRE(a.load());
    CHECK(a.load()->v4 == std::vector<std::uint64_t>{5, 6});
    CHECK(b.load()->v6 == std::vector<std::uint64_t>{9, 10});
    CHECK(std::distance(std::filesystem::directory_iterator(dir), {}) == 2);
    a.forget();
    CHECK_FALSE(a.load());
    CHECK(std::filesystem::exists(dir));
    b.save({});  // nothing to remember: forgotten
    CHECK_FALSE(std::filesystem::exists(dir));
    // A link planted where the record goes is neither followed nor written through.
    std::filesystem::create_directories(dir);
    t.write("victim", "v4 1 2\n");
    ForwardRecord c("net", {"ctr", "eth2"}, dir);
    c.save({.v4 = {3, 4}});
    auto name = std::filesystem::directory_iterator(dir)->path().filename().string();
    std::filesystem::remove(dir + "/" + name);
    std::filesystem::create_symlink(t / "victim", dir + "/" + name);
    CHECK_FALSE(c.load());
    c.save({.v4 = {7, 8}});
    CHECK(t.read("victim") == "v4 1 2\n");
}
