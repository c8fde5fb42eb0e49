// SPDX-License-Identifier: Apache-2.0
// Root tests of the libiptc layer inside throwaway namespaces: ipMasq rules are exactly the ones
// `iptables` writes for the reference's command lines - the iptables-legacy binary finds and
// deletes ours, and our teardown removes ones the binary wrote - for IPv4 and IPv6.
#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <memory>

#include "core/fw/ipmasq.hpp"
#include "core/fw/iptables.hpp"
#include "core/fw/names.hpp"
#include "core/os/netns.hpp"
#include "test_ns.hpp"

using namespace cni;

namespace {

std::string run(const std::string& cmd) {
    std::string out;
    std::unique_ptr<FILE, int (*)(FILE*)> p(::popen(cmd.c_str(), "r"), ::pclose);
    std::array<char, 4096> buf;
    while (p && std::fgets(buf.data(), int(buf.size()), p.get())) out += buf.data();
    return out;
}

// The nat rules of the namespace as iptables-legacy-save prints them ("-A ..." lines only).
std::string nat_rules(const TestNs& ns, bool v6 = false) {
    std::string all = run("ip netns exec " + ns.name + (v6 ? " ip6tables-legacy-save" : " iptables-legacy-save") + " -t nat");
    std::string out;
    std::size_t pos = 0;
    while (pos < all.size()) {
        auto end = all.find('\n', pos);
        std::string line = all.substr(pos, end - pos);
        if (line.starts_with("-A ") || line.starts_with(":CNI")) out += line.substr(0, line.find(" [")) + "\n";
        pos = end == std::string::npos ? all.size() : end + 1;
    }
    return out;
}

template <class Fn>
auto inside(const TestNs& ns, Fn&& fn) {
    auto netns = os::Netns::open(ns.path);
    REQUIRE(netns);
    auto guard = os::NetnsGuard::enter(*netns);
    REQUIRE(guard);
    return fn();
}

const std::string kChain = "CNI-e2e8cd5c6ebacde4cecc8b58";  // chain_name("CNI-", "mynet", "1234567890abcdef")
const std::string kComment = "--comment \"name: \\\"mynet\\\" id: \\\"1234567890abcdef\\\"\"";

}  // namespace

TEST_CASE("ipMasq rules are the reference's, byte for byte, for IPv4 and IPv6") {
    TestNs ns("cnit-fw");
    std::vector<IpNet> ips = {*IpNet::parse("10.1.0.5/24"), *IpNet::parse("fd01::5/64")};
    REQUIRE(inside(ns, [&] { return fw::setup_ipmasq(ips, "mynet", "1234567890abcdef"); }));
    REQUIRE(inside(ns, [&] { return fw::setup_ipmasq(ips, "mynet", "1234567890abcdef"); }));  // no duplicates
    CHECK(nat_rules(ns) == ":" + kChain + " -\n"
                           "-A POSTROUTING -s 10.1.0.5/32 -m comment " + kComment + " -j " + kChain + "\n"
                           "-A " + kChain + " -d 10.1.0.0/24 -m comment " + kComment + " -j ACCEPT\n"
                           "-A " + kChain + " ! -d 224.0.0.0/4 -m comment " + kComment + " -j MASQUERADE\n");
    CHECK(nat_rules(ns, true) == ":" + kChain + " -\n"
                                 "-A POSTROUTING -s fd01::5/128 -m comment " + kComment + " -j " + kChain + "\n"
                                 "-A " + kChain + " -d fd01::/64 -m comment " + kComment + " -j ACCEPT\n"
                                 "-A " + kChain + " ! -d ff00::/8 -m comment " + kComment + " -j MASQUERADE\n");
    CHECK(inside(ns, [&] { return fw::check_ipmasq(ips, "mynet", "1234567890abcdef"); }));
    // The iptables binary recognises our rules as the ones the reference's command lines make.
    std::string c = " -m comment --comment \"name: \\\"mynet\\\" id: \\\"1234567890abcdef\\\"\"";
    CHECK(ns.sh("iptables-legacy -t nat -C POSTROUTING -s 10.1.0.5 -j " + kChain + c) == 0);
    CHECK(ns.sh("iptables-legacy -t nat -C " + kChain + " -d 10.1.0.5/24 -j ACCEPT" + c) == 0);
    CHECK(ns.sh("iptables-legacy -t nat -C " + kChain + " ! -d 224.0.0.0/4 -j MASQUERADE" + c) == 0);
    CHECK(ns.sh("ip6tables-legacy -t nat -D " + kChain + " ! -d ff00::/8 -j MASQUERADE" + c) == 0);
    CHECK_FALSE(inside(ns, [&] { return fw::check_ipmasq(ips, "mynet", "1234567890abcdef"); }));
    REQUIRE(inside(ns, [&] { return fw::teardown_ipmasq("mynet", "1234567890abcdef"); }));
    CHECK(nat_rules(ns).empty());
    CHECK(nat_rules(ns, true).empty());
    REQUIRE(inside(ns, [&] { return fw::teardown_ipmasq("mynet", "1234567890abcdef"); }));  // idempotent
}

TEST_CASE("teardown removes rules written by the iptables binary, legacy form included") {
    TestNs ns("cnit-fw");
    std::string c = " -m comment --comment \"name: \\\"mynet\\\" id: \\\"1234567890abcdef\\\"\"";
    REQUIRE(ns.sh("iptables-legacy -t nat -N " + kChain) == 0);
    REQUIRE(ns.sh("iptables-legacy -t nat -A " + kChain + " -d 10.1.0.0/24 -j ACCEPT" + c) == 0);
    REQUIRE(ns.sh("iptables-legacy -t nat -A " + kChain + " ! -d 224.0.0.0/4 -j MASQUERADE" + c) == 0);
    REQUIRE(ns.sh("iptables-legacy -t nat -A POSTROUTING -s 10.1.0.5 -j " + kChain + c) == 0);
    REQUIRE(ns.sh("iptables-legacy -t nat -A POSTROUTING -s 10.1.0.5/24 -j " + kChain + c) == 0);  // pre-0.8 form
    REQUIRE(ns.sh("iptables-legacy -t nat -A POSTROUTING -s 10.9.0.0/16 -j MASQUERADE") == 0);   // not ours
    std::vector<IpNet> ips = {*IpNet::parse("10.1.0.5/24")};
    CHECK(inside(ns, [&] { return fw::check_ipmasq(ips, "mynet", "1234567890abcdef"); }));
    REQUIRE(inside(ns, [&] { return fw::teardown_ipmasq("mynet", "1234567890abcdef"); }));
    CHECK(nat_rules(ns) == "-A POSTROUTING -s 10.9.0.0/16 -j MASQUERADE\n");
}

TEST_CASE("rules beyond what IptRule describes are listed as foreign, never matched") {
    TestNs ns("cnit-fw");
    REQUIRE(ns.sh("iptables-legacy -t nat -A POSTROUTING -s 10.1.0.5 -p tcp -j ACCEPT") == 0);
    auto listed = inside(ns, [&] {
        auto nat = fw::IptTable::open(fw::Family::v4, "nat");
        REQUIRE(nat);
        return nat->rules("POSTROUTING");
    });
    REQUIRE(listed);
    REQUIRE(listed->size() == 1);
    CHECK((*listed)[0].foreign);
    CHECK((*listed)[0].rule.target == "ACCEPT");
    CHECK((*listed)[0].rule.src->str() == "10.1.0.5/32");
}
