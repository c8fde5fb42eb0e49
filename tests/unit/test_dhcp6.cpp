// SPDX-License-Identifier: Apache-2.0
// DHCPv6 without sockets: the client's messages against literal bytes, a server's ADVERTISE and
// REPLY decoded (IA_NA, IAADDR, status codes, DNS servers, domain search list), malformed options
// refused, what a reply grants and the lease's times with their floors; the `protocol` key, a
// DHCPv6 lease as a CNI result and as a lease record.
#include <catch2/catch.hpp>

#include <time.h>

#include <climits>

#include "applets/dhcp/config.hpp"
#include "applets/dhcp/lease_store.hpp"
#include "applets/dhcp/message6.hpp"

using namespace cni;
using cni::dhcp::Bytes;
using cni::dhcp::Mac;
using namespace cni::dhcp::v6;

namespace {

net::IpAddr ip(std::string_view s) { return *net::IpAddr::parse(s); }

Bytes hex(std::string_view s) {
    Bytes b;
    for (std::size_t i = 0; i + 1 < s.size(); i += 2) {
        if (s[i] == ' ') {
            --i;
            continue;
        }
        b.push_back(std::uint8_t(std::stoul(std::string(s.substr(i, 2)), nullptr, 16)));
    }
    return b;
}

const Mac kMac{0x02, 0, 0, 0, 0, 0x01};

Message reply_with_address() {
    Message m;
    m.type = Type::reply;
    m.xid = 0xabcdef;
    m.client_id = duid_ll(kMac);
    m.server_id = {0, 1, 0, 1, 9, 9, 9, 9};
    m.ia_na.push_back(IaNa{7, 30, 48, {IaAddress{ip("fd00:55::10"), 60, 120, std::nullopt}}, std::nullopt});
    m.dns_servers = {ip("fd00:55::1"), ip("fd00:55::2")};
    m.search = {"example.com", "pods.local"};
    return m;
}

}  // namespace

TEST_CASE("dhcp6 client messages: SOLICIT on the wire, byte for byte", "[dhcp]") {
    Exchange x{0x123456, duid_ll(kMac), {}, 7, {}, 0, true};
    Bytes wire = encode(client_message(Type::solicit, x));
    CHECK(wire == hex("01123456"
                      "0001000a 0003 0001 020000000001"   // client id: DUID-LL
                      "0003000c 00000007 00000000 00000000"  // IA_NA, IAID 7, no addresses
                      "000e0000"                          // rapid commit
                      "00080002 0000"                     // elapsed time
                      "00060004 0017 0018"));             // ORO: 23, 24
}

TEST_CASE("dhcp6 client messages: server id in REQUEST/RENEW/RELEASE, not in REBIND; no IA in INFORMATION-REQUEST", "[dhcp]") {
    Exchange x{1, duid_ll(kMac), {0, 1, 2, 3}, 7, {ip("fd00:55::10")}, 150, true};
    for (Type t : {Type::request, Type::renew, Type::rebind, Type::release, Type::information_request}) {
        INFO(type_name(t));
        auto m = decode(encode(client_message(t, x)));
        REQUIRE(m);
        CHECK(m->type == t);
        CHECK(m->elapsed == 150);
        CHECK(!m->rapid_commit);
        CHECK(m->client_id == x.duid);
        CHECK(m->server_id.empty() == (t == Type::rebind || t == Type::information_request));
        CHECK(m->ia_na.empty() == (t == Type::information_request));
        if (!m->ia_na.empty()) CHECK(m->ia_na[0].addresses.at(0).address == ip("fd00:55::10"));
        CHECK(m->requested.empty() == (t == Type::release));
    }
}

TEST_CASE("dhcp6 server messages: a REPLY round trips; what it grants and the lease's times", "[dhcp]") {
    Message m = reply_with_address();
    m.rapid_commit = true;
    m.preference = 255;
    auto back = decode(encode(m));
    REQUIRE(back);
    CHECK(*back == m);
    CHECK(answers(*back, 0xabcdef, duid_ll(kMac)).code == status::success);
    CHECK(answers(*back, 0xabcdee, duid_ll(kMac)).code != status::success);
    CHECK(answers(*back, 0xabcdef, duid_ll(Mac{})).code != status::success);
    auto g = granted(*back, 7);
    REQUIRE(g.address);
    CHECK(g.address->address == ip("fd00:55::10"));
    auto t = lease_times(g);
    CHECK((t.lease == 120 && t.t1 == 30 && t.t2 == 48 && !t.degenerate));
    CHECK(!granted(*back, 8).address);
}

TEST_CASE("dhcp6 lease times: T1/T2 of 0 are 0.5 and 0.8 of the preferred lifetime; floors under zeros", "[dhcp]") {
    Granted g{IaAddress{ip("fd00::1"), 100, 200, std::nullopt}, 0, 0, {}};
    auto t = lease_times(g);
    CHECK((t.lease == 200 && t.t1 == 50 && t.t2 == 80));
    g.address->preferred = g.address->valid = 1;
    t = lease_times(g);
    CHECK((t.lease == 10 && t.t1 == 5 && t.t2 == 8 && t.degenerate));
    g.t1 = 500, g.t2 = 1;  // nonsense: T1 past the lease, T2 before T1
    g.address->valid = 100;
    t = lease_times(g);
    CHECK((t.t1 == 50 && t.t2 == 80));
}

TEST_CASE("dhcp6 lease times: infinite lifetimes and T1/T2 are renewed within the hour (T1 <= 1 h, T2 <= 1.6 h)", "[dhcp]") {
    constexpr std::uint32_t inf = 0xffffffff;
    for (std::uint32_t t1 : {0u, inf, 100000u}) {
        Granted g{IaAddress{ip("fd00::1"), inf, inf, std::nullopt}, t1, t1 == 100000u ? 200000u : t1, {}};
        auto t = lease_times(g);
        CHECK((t.lease == inf && t.t1 == kMaxRenewSeconds && t.t2 == kMaxRebindSeconds && !t.degenerate));
    }
    Granted short_lease{IaAddress{ip("fd00::1"), 3000, 4000, std::nullopt}, 0, 0, {}};
    auto t = lease_times(short_lease);  // under the ceilings: the server's pace
    CHECK((t.t1 == 1500 && t.t2 == 2400));
    Granted given{IaAddress{ip("fd00::1"), 9000, 10000, std::nullopt}, 1000, 7000, {}};
    t = lease_times(given);  // T2 capped, T1 not
    CHECK((t.t1 == 1000 && t.t2 == kMaxRebindSeconds));
}

TEST_CASE("dhcp6 grants: status codes of the message, the IA and the address; zero and inverted lifetimes ignored", "[dhcp]") {
    Message m = reply_with_address();
    m.status = StatusCode{status::no_addrs_avail, "full"};
    CHECK(granted(m, 7).status.code == status::no_addrs_avail);
    m = reply_with_address();
    m.ia_na[0].status = StatusCode{status::no_binding, ""};
    CHECK(granted(m, 7).status.code == status::no_binding);
    m = reply_with_address();
    m.ia_na[0].addresses[0].status = StatusCode{status::not_on_link, "moved"};
    auto g = granted(decode(encode(m)).value(), 7);
    CHECK(!g.address);
    CHECK((g.status.code == status::not_on_link && g.status.message == "moved"));
    m = reply_with_address();
    m.ia_na[0].addresses[0].valid = 0;
    CHECK(!granted(m, 7).address);
    m.ia_na[0].addresses[0] = IaAddress{ip("fd00::1"), 200, 100, std::nullopt};
    CHECK(!granted(m, 7).address);
    for (auto bad : {"::", "::1", "fe80::1", "febf::1", "ff02::1:2"}) {
        m.ia_na[0].addresses[0] = IaAddress{ip(bad), 100, 200, std::nullopt};
        CHECK(!granted(m, 7).address);
    }
    m.ia_na[0].addresses[0] = IaAddress{ip("fec0::1"), 100, 200, std::nullopt};
    CHECK(granted(m, 7).address);
}

TEST_CASE("dhcp6 domain search list: names decoded bounded; compression, bad bytes and long names refused", "[dhcp]") {
    auto root = decode_names(hex("076578616d706c6503636f6d00 00"));
    REQUIRE(!root);
    CHECK(root.error().msg.find("empty (root)") != std::string::npos);
    auto n = decode_names(hex("076578616d706c6503636f6d00 016100"));
    REQUIRE(n);
    CHECK(*n == std::vector<std::string>{"example.com", "a"});
    CHECK(!decode_names(hex("c00c")));             // a compression pointer
    CHECK(!decode_names(hex("03616263")));         // no final empty label
    CHECK(!decode_names(hex("0561")));             // a label past the option
    CHECK(!decode_names(hex("03612e6300")));       // a dot inside a label
    CHECK(!decode_names(hex("0361206300")));       // a space
    Bytes longname;
    for (int i = 0; i < 5; ++i) {
        longname.push_back(60);
        longname.insert(longname.end(), 60, 'a');
    }
    longname.push_back(0);
    auto too_long = decode_names(longname);
    REQUIRE(!too_long);
    CHECK(too_long.error().msg.find("over 255") != std::string::npos);
    CHECK(encode_name("example.com").value() == hex("076578616d706c6503636f6d00"));
    CHECK(!encode_name("a..b"));
    CHECK(!encode_name(std::string(64, 'a')));
}

TEST_CASE("dhcp6 decode: truncated, relayed and malformed options are decoding errors; unknown options ignored", "[dhcp]") {
    Bytes wire = encode(reply_with_address());
    CHECK(!decode(std::span(wire.data(), 3)));
    for (std::size_t cut = 5; cut < wire.size(); ++cut)  // every truncation inside an option fails
        if (auto m = decode(std::span(wire.data(), cut))) CHECK(encode(*m).size() <= cut);
    Bytes relay = wire;
    relay[0] = 12;
    CHECK(!decode(relay));
    auto odd = decode(hex("07000001 00170003 000000"));
    REQUIRE(!odd);
    CHECK(odd.error().msg.find("multiple of 16") != std::string::npos);
    CHECK(!decode(hex("07000001 000e0001 00")));        // rapid commit with data
    CHECK(!decode(hex("07000001 00070002 0000")));      // preference of 2 bytes
    CHECK(!decode(hex("07000001 00020001 00")));        // a 1-byte DUID
    CHECK(!decode(hex("07000001 0003000b 0000000000000000000000")));  // IA_NA under 12 bytes
    CHECK(!decode(hex("07000001 000d0001 00")));        // status under 2 bytes
    CHECK(!decode(hex("07000001 00170010 00000000000000000000ffff0a000001")));  // mapped IPv4
    auto m = decode(hex("07000001 00200002 abcd 00070001 05"));  // option 32 ignored
    REQUIRE(m);
    CHECK(m->preference == 5);
}

TEST_CASE("dhcp6 protocol key: ipv4 by default, ipv6 and dual; anything else names the key and the value", "[dhcp]") {
    auto conf = [](std::string_view protocol) {
        return dhcp::parse_dhcp_conf(R"({"name":"n","ipam":{"type":"dhcp","protocol":")" + std::string(protocol) + "\"}}", "");
    };
    CHECK(dhcp::parse_dhcp_conf(R"({"name":"n","ipam":{"type":"dhcp"}})", "")->protocol == dhcp::Protocol::ipv4);
    CHECK(conf("ipv4")->protocol == dhcp::Protocol::ipv4);
    CHECK(conf("ipv6")->protocol == dhcp::Protocol::ipv6);
    CHECK(conf("dual")->protocol == dhcp::Protocol::dual);
    auto bad = conf("IPv6");
    REQUIRE(!bad);
    CHECK(bad.error().code == code::invalid_config);
    CHECK(bad.error().msg == R"(invalid ipam.protocol "IPv6": must be "ipv4", "ipv6" or "dual")");
    CHECK(!dhcp::parse_dhcp_conf(R"({"name":"n","ipam":{"type":"dhcp","protocol":6}})", ""));
}

TEST_CASE("dhcp6 protocol key: request and provide (DHCPv4 options) are refused with ipv6, kept with dual", "[dhcp]") {
    auto conf = [](std::string_view protocol, std::string_view key) {
        return dhcp::parse_dhcp_conf(R"({"name":"n","ipam":{"type":"dhcp","protocol":")" + std::string(protocol) + "\",\"" +
                                         std::string(key) + R"(":[{"option":"host-name","value":"h"}]}})",
                                     "");
    };
    for (std::string key : {"request", "provide"}) {
        auto bad = conf("ipv6", key);
        REQUIRE(!bad);
        CHECK(bad.error().code == code::invalid_config);
        CHECK(bad.error().msg == "ipam." + key + R"( names DHCPv4 options, and ipam.protocol "ipv6" leases by DHCPv6 only)");
        CHECK(conf("dual", key));
    }
    CHECK(conf("dual", "provide")->provide.size() == 1);
}

TEST_CASE("dhcp6 lease: a /128 with the DNS servers and search list as the result; its times from the REPLY", "[dhcp]") {
    dhcp::Lease6 l{reply_with_address(), 7, 1000, ip("fd00:55::10")};
    CHECK(l.address_text() == "fd00:55::10");
    CHECK((l.t1() == 1030 && l.t2() == 1048 && l.expiry() == 1120 && !l.degenerate()));
    auto r = l.result(0);
    REQUIRE(r);
    REQUIRE(r->ips.size() == 1);
    CHECK(r->ips[0].address.ip == ip("fd00:55::10"));
    CHECK(r->ips[0].address.prefix == 128);
    CHECK(!r->ips[0].gateway);
    CHECK(r->routes.empty());
    CHECK(r->dns.nameservers == std::vector<std::string>{"fd00:55::1", "fd00:55::2"});
    CHECK(r->dns.search == std::vector<std::string>{"example.com", "pods.local"});
    CHECK(!dhcp::Lease6{reply_with_address(), 8, 1000, ip("fd00:55::10")}.result(0));  // another IA's
    CHECK(!dhcp::Lease6{reply_with_address(), 7, 1000, ip("fd00:55::11")}.result(0));  // another address
}

TEST_CASE("dhcp6 lease record: the REPLY, IAID and time round trip; a record whose reply leases nothing is refused", "[dhcp]") {
    dhcp::LeaseRecord r{"c1/n/eth0", "c1", "n", "eth0", "/run/netns/x", "{}", "", {}, true, dhcp::Lease6{reply_with_address(), 7, 1700000000, ip("fd00:55::10")}};
    auto text = dhcp::encode_record(r);
    CHECK(text.find("\"family\": \"ipv6\"") != std::string::npos);
    auto back = dhcp::decode_record(text);
    REQUIRE(back);
    CHECK((back->v6 && back->key == r.key && back->lease6.reply == r.lease6.reply && back->lease6.iaid == 7));
    CHECK((back->lease6.bound_at == 1700000000 && back->lease6.leased == ip("fd00:55::10")));
    r.lease6.iaid = 8;
    CHECK(!dhcp::decode_record(dhcp::encode_record(r)));
    r.lease6.iaid = 7;
    r.lease6.leased = ip("fd00:55::11");  // not in the REPLY
    CHECK(!dhcp::decode_record(dhcp::encode_record(r)));
    CHECK(!dhcp::decode_record(R"({"key":"k","family":"ipv7"})"));
}

TEST_CASE("dhcp6 renewal: only the lease's own address counts; ended (lifetime 0) or left out, it is not granted", "[dhcp]") {
    Message m = reply_with_address();
    auto& ia = m.ia_na[0];
    ia.addresses.insert(ia.addresses.begin(), IaAddress{ip("fd00:55::20"), 100, 200, std::nullopt});
    CHECK(granted(m, 7).address->address == ip("fd00:55::20"));  // a SOLICIT's answer: the first usable one
    auto g = granted(m, 7, ip("fd00:55::10"));
    REQUIRE(g.address);
    CHECK((g.address->address == ip("fd00:55::10") && g.address->valid == 120 && g.t1 == 30));
    dhcp::Lease6 l{m, 7, 1000, ip("fd00:55::10")};
    CHECK(l.address_text() == "fd00:55::10");
    CHECK(l.expiry() == 1120);
    ia.addresses[1].preferred = ia.addresses[1].valid = 0;  // the server moves the lease to ::20
    CHECK(!granted(m, 7, ip("fd00:55::10")).address);
    CHECK(!dhcp::Lease6{m, 7, 1000, ip("fd00:55::10")}.grant().address);
    ia.addresses.pop_back();
    g = granted(m, 7, ip("fd00:55::10"));
    CHECK((!g.address && g.status.code == status::no_addrs_avail));
}

TEST_CASE("dhcp6 lease record: a boundAt before 1970 or after 2099 is refused, one days ahead of the clock taken", "[dhcp]") {
    dhcp::LeaseRecord r{"c1/n/eth0", "c1", "n", "eth0", "/run/netns/x", "{}", "", {}, true, dhcp::Lease6{reply_with_address(), 7, 0, ip("fd00:55::10")}};
    CHECK(dhcp::decode_record(dhcp::encode_record(r)));
    r.lease6.bound_at = std::int64_t(::time(nullptr)) + 3 * 86400;  // a clock set back three days
    CHECK(dhcp::decode_record(dhcp::encode_record(r)));
    for (std::int64_t bad : {std::int64_t(-1), std::int64_t(4102444801), INT64_MAX, INT64_MIN}) {
        r.lease6.bound_at = bad;
        auto back = dhcp::decode_record(dhcp::encode_record(r));
        REQUIRE(!back);
        CHECK(back.error().msg == "lease record: boundAt " + std::to_string(bad) + " out of range");
    }
}

TEST_CASE("dhcp6 DNS servers: unspecified, loopback, multicast and link-local ones are left out", "[dhcp]") {
    Message m = reply_with_address();
    m.dns_servers = {ip("::"), ip("::1"), ip("ff02::1"), ip("fe80::1"), ip("fd00:55::1")};
    auto back = decode(encode(m));
    REQUIRE(back);
    CHECK(back->dns_servers == std::vector<net::IpAddr>{ip("fd00:55::1")});
}

TEST_CASE("dhcp6 Information-request: asked for when the REPLY has no DNS options; its DNS goes into the result", "[dhcp]") {
    Message bare = reply_with_address();
    bare.dns_servers.clear();
    bare.search.clear();
    dhcp::Lease6 l{bare, 7, 1000, ip("fd00:55::10")};
    CHECK(l.wants_information());
    CHECK(!dhcp::Lease6{reply_with_address(), 7, 1000, ip("fd00:55::10")}.wants_information());
    CHECK(l.result(0)->dns.nameservers.empty());
    Message info;
    info.type = Type::reply;
    info.server_id = {0, 1, 0, 1, 9, 9, 9, 9};
    info.dns_servers = {ip("fd00:55::53")};
    info.search = {"info.test"};
    l.info = info;
    auto r = l.result(0);
    REQUIRE(r);
    CHECK(r->dns.nameservers == std::vector<std::string>{"fd00:55::53"});
    CHECK(r->dns.search == std::vector<std::string>{"info.test"});
    dhcp::Lease6 with_own{reply_with_address(), 7, 1000, ip("fd00:55::10"), info};
    CHECK(with_own.result(0)->dns.nameservers == std::vector<std::string>{"fd00:55::1", "fd00:55::2"});  // the REPLY's own
    auto m = client_message(Type::information_request, Exchange{0x123456, duid_ll(kMac), {}, 7, {ip("fd00:55::10")}, 0, true});
    CHECK((m.ia_na.empty() && m.server_id.empty() && !m.rapid_commit));
    CHECK(m.requested == std::vector<std::uint16_t>{opt::dns_servers, opt::domain_list});
}

TEST_CASE("dhcp6 lease record: the Information-request's REPLY and the given address round trip; a given address of the other family is refused", "[dhcp]") {
    Message info;
    info.type = Type::reply;
    info.server_id = {0, 1, 0, 1, 9, 9, 9, 9};
    info.dns_servers = {ip("fd00:55::53")};
    dhcp::LeaseRecord r{"c1/n/eth0", "c1", "n", "eth0", "/run/netns/x", "{}", "", {}, true,
                        dhcp::Lease6{reply_with_address(), 7, 1700000000, ip("fd00:55::10"), info}, ip("fd00:55::9")};
    auto back = dhcp::decode_record(dhcp::encode_record(r));
    REQUIRE(back);
    CHECK((back->lease6.info == info && back->given == ip("fd00:55::9")));
    r.lease6.info.reset();
    r.given.reset();
    auto text = dhcp::encode_record(r);
    CHECK((text.find("information") == std::string::npos && text.find("given") == std::string::npos));
    back = dhcp::decode_record(text);
    REQUIRE(back);
    CHECK((!back->lease6.info && !back->given));
    r.given = ip("10.0.0.9");
    CHECK(dhcp::decode_record(dhcp::encode_record(r)).error().msg == "lease record whose given address is not one of its family");
    r.given.reset();
    auto bad = dhcp::encode_record(r);
    bad.insert(bad.rfind('}'), ", \"information\": \"zz\"");
    CHECK(dhcp::decode_record(bad).error().msg == "lease record with a DHCPv6 message that is not hex");
}
