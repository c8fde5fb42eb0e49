// SPDX-License-Identifier: Apache-2.0
// IP address and prefix parsing/printing against Go net semantics.
#include <catch2/catch.hpp>

#include "core/net/ip.hpp"

using cni::net::IpAddr;
using cni::net::IpNet;

static std::string round(std::string_view s) {
    auto ip = IpAddr::parse(s);
    return ip ? ip->str() : "<nil>";
}

TEST_CASE("IPv4 parsing follows Go net.ParseIP", "[net]") {
    CHECK(round("10.1.2.3") == "10.1.2.3");
    CHECK(round("0.0.0.0") == "0.0.0.0");
    CHECK(round("255.255.255.255") == "255.255.255.255");
    CHECK(round("256.1.1.1") == "<nil>");
    CHECK(round("010.1.1.1") == "<nil>");  // leading zeros rejected since Go 1.17
    CHECK(round("1.2.3") == "<nil>");
    CHECK(round("1.2.3.4.5") == "<nil>");
    CHECK(round("1.2.3.4 ") == "<nil>");
    CHECK(round("") == "<nil>");
    CHECK(IpAddr::parse("10.0.0.1")->is_v4());
}

TEST_CASE("IPv6 parsing and RFC 5952 printing", "[net]") {
    CHECK(round("2001:db8::1") == "2001:db8::1");
    CHECK(round("2001:DB8:0:0:0:0:0:1") == "2001:db8::1");
    CHECK(round("::") == "::");
    CHECK(round("::1") == "::1");
    CHECK(round("fe80::") == "fe80::");
    CHECK(round("2001:db8:0:0:1:0:0:1") == "2001:db8::1:0:0:1");
    CHECK(round("1:0:0:1:0:0:0:1") == "1:0:0:1::1");
    CHECK(round("1:2:3:4:5:6:7:8") == "1:2:3:4:5:6:7:8");
    CHECK(round("1:0:3:4:5:6:7:8") == "1:0:3:4:5:6:7:8");  // a single zero group is not compressed
    CHECK(round("::ffff:10.1.2.3") == "10.1.2.3");          // mapped: treated as IPv4
    CHECK(IpAddr::parse("::ffff:10.1.2.3")->is_v4());
    CHECK(round("64:ff9b::192.0.2.1") == "64:ff9b::c000:201");
    CHECK(round("fe80::1%eth0") == "<nil>");  // no zones
    CHECK(round("1::2::3") == "<nil>");
    CHECK(round("1:2:3:4:5:6:7:8:9") == "<nil>");
    CHECK(round("12345::") == "<nil>");
    CHECK(round("1:2:3:4:5:6:7::8") == "<nil>");
}

TEST_CASE("IP arithmetic carries across bytes", "[net]") {
    CHECK(IpAddr::parse("10.0.0.255")->next().str() == "10.0.1.0");
    CHECK(IpAddr::parse("10.0.1.0")->prev().str() == "10.0.0.255");
    CHECK(IpAddr::parse("fd00::ffff")->next().str() == "fd00::1:0");
    CHECK(*IpAddr::parse("10.0.0.2") < *IpAddr::parse("10.0.0.10"));
    CHECK(IpAddr::parse("127.0.0.1")->is_loopback());
    CHECK(IpAddr::parse("::1")->is_loopback());
    CHECK(IpAddr::parse("10.1.1.1")->is_global_unicast());
    CHECK_FALSE(IpAddr::parse("fe80::1")->is_global_unicast());
    CHECK_FALSE(IpAddr::parse("224.0.0.1")->is_global_unicast());
}

TEST_CASE("CIDR parsing keeps host bits; network, last and contains", "[net]") {
    auto n = IpNet::parse("10.1.0.5/16");
    REQUIRE(n);
    CHECK(n->str() == "10.1.0.5/16");
    CHECK(n->network().str() == "10.1.0.0");
    CHECK(n->last().str() == "10.1.255.255");
    CHECK(n->contains(*IpAddr::parse("10.1.200.1")));
    CHECK_FALSE(n->contains(*IpAddr::parse("10.2.0.1")));
    CHECK_FALSE(n->contains(*IpAddr::parse("fd00::1")));
    auto v6 = IpNet::parse("fd00:1::/64");
    REQUIRE(v6);
    CHECK(v6->last().str() == "fd00:1::ffff:ffff:ffff:ffff");
    CHECK(IpNet::parse("0.0.0.0/0")->contains(*IpAddr::parse("8.8.8.8")));
    CHECK_FALSE(IpNet::parse("10.0.0.0/33"));
    CHECK_FALSE(IpNet::parse("10.0.0.0"));
    CHECK_FALSE(IpNet::parse("10.0.0.0/-1"));
    CHECK_FALSE(IpNet::parse("10.0.0.0/ 8"));
    CHECK(IpNet::parse("::ffff:10.0.0.0/104")->mask_bits == 128);
    CHECK_FALSE(IpNet::parse("::ffff:10.0.0.0/104")->family_matches());
}
