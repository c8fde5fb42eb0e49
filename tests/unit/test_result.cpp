// SPDX-License-Identifier: Apache-2.0
// Result encoding at every spec version (literal expected JSON), decoding per version family,
// every conversion pair, the loopback label quirk, the error JSON, and Failures (errors of steps
// that must all be tried).
#include <catch2/catch.hpp>

#include "core/cni/cni_result.hpp"
#include "core/cni/netconf.hpp"
#include "core/cni/version.hpp"

using namespace cni;

namespace {

CniResult sample() {
    CniResult r;
    Interface eth0;
    eth0.name = "eth0";
    eth0.mac = "0a:58:0a:01:00:05";
    eth0.mtu = 1450;
    eth0.sandbox = "/run/netns/c1";
    r.interfaces.push_back(eth0);
    r.ips.push_back(IpConfig{0, *net::IpNet::parse("10.1.0.5/16"), net::IpAddr::parse("10.1.0.1")});
    r.ips.push_back(IpConfig{0, *net::IpNet::parse("fd00::5/64"), std::nullopt});
    Route def{*net::IpNet::parse("0.0.0.0/0"), net::IpAddr::parse("10.1.0.1"), 0, 0, 0, std::nullopt, std::nullopt};
    Route v6{*net::IpNet::parse("::/0"), std::nullopt, 0, 0, 100, 10, 0};
    r.routes = {def, v6};
    r.dns.nameservers = {"10.96.0.10"};
    r.dns.search = {"svc.cluster.local"};
    return r;
}

std::string enc(const CniResult& r, std::string_view v) {
    auto t = encode_result(r, v);
    return t ? *t : "ERROR: " + t.error().msg;
}

}  // namespace

TEST_CASE("1.1.0 and 1.0.0 results have every key sorted and no empty dns", "[cni]") {
    const char* want = R"({
    "cniVersion": "1.1.0",
    "dns": {
        "nameservers": [
            "10.96.0.10"
        ],
        "search": [
            "svc.cluster.local"
        ]
    },
    "interfaces": [
        {
            "mac": "0a:58:0a:01:00:05",
            "mtu": 1450,
            "name": "eth0",
            "sandbox": "/run/netns/c1"
        }
    ],
    "ips": [
        {
            "address": "10.1.0.5/16",
            "gateway": "10.1.0.1",
            "interface": 0
        },
        {
            "address": "fd00::5/64",
            "interface": 0
        }
    ],
    "routes": [
        {
            "dst": "0.0.0.0/0",
            "gw": "10.1.0.1"
        },
        {
            "dst": "::/0",
            "priority": 100,
            "scope": 0,
            "table": 10
        }
    ]
})";
    CHECK(enc(sample(), "1.1.0") == want);
    std::string v100 = want;
    v100.replace(v100.find("1.1.0"), 5, "1.0.0");
    CHECK(enc(sample(), "1.0.0") == v100);
    CniResult bare;
    bare.ips.push_back(IpConfig{std::nullopt, *net::IpNet::parse("10.0.0.2/24"), std::nullopt});
    CHECK(enc(bare, "1.1.0") == "{\n    \"cniVersion\": \"1.1.0\",\n    \"ips\": [\n        {\n            \"address\": \"10.0.0.2/24\"\n        }\n    ]\n}");
}

TEST_CASE("0.3.x and 0.4.0 results keep struct order, add version, drop 1.x interface keys", "[cni]") {
    const char* want = R"({
    "cniVersion": "0.4.0",
    "interfaces": [
        {
            "name": "eth0",
            "mac": "0a:58:0a:01:00:05",
            "sandbox": "/run/netns/c1"
        }
    ],
    "ips": [
        {
            "version": "4",
            "interface": 0,
            "address": "10.1.0.5/16",
            "gateway": "10.1.0.1"
        },
        {
            "version": "6",
            "interface": 0,
            "address": "fd00::5/64"
        }
    ],
    "routes": [
        {
            "dst": "0.0.0.0/0",
            "gw": "10.1.0.1"
        },
        {
            "dst": "::/0",
            "priority": 100,
            "table": 10,
            "scope": 0
        }
    ],
    "dns": {
        "nameservers": [
            "10.96.0.10"
        ],
        "search": [
            "svc.cluster.local"
        ]
    }
})";
    CHECK(enc(sample(), "0.4.0") == want);
    for (std::string v : {"0.3.0", "0.3.1"}) {
        std::string w = want;
        w.replace(w.find("0.4.0"), 5, v);
        CHECK(enc(sample(), v) == w);
    }
    CniResult empty_dns;
    empty_dns.ips.push_back(IpConfig{std::nullopt, *net::IpNet::parse("10.0.0.2/24"), net::IpAddr::parse("10.0.0.1")});
    CHECK(enc(empty_dns, "0.3.1") == R"({
    "cniVersion": "0.3.1",
    "ips": [
        {
            "version": "4",
            "address": "10.0.0.2/24",
            "gateway": "10.0.0.1"
        }
    ],
    "dns": {}
})");
}

TEST_CASE("0.1.0 and 0.2.0 results keep the first address per family with its routes", "[cni]") {
    CniResult r = sample();
    r.ips.push_back(IpConfig{0, *net::IpNet::parse("10.2.0.5/16"), std::nullopt});  // a second v4 is dropped
    const char* want = R"({
    "cniVersion": "0.2.0",
    "ip4": {
        "ip": "10.1.0.5/16",
        "gateway": "10.1.0.1",
        "routes": [
            {
                "dst": "0.0.0.0/0",
                "gw": "10.1.0.1"
            }
        ]
    },
    "ip6": {
        "ip": "fd00::5/64",
        "routes": [
            {
                "dst": "::/0"
            }
        ]
    },
    "dns": {
        "nameservers": [
            "10.96.0.10"
        ],
        "search": [
            "svc.cluster.local"
        ]
    }
})";
    CHECK(enc(r, "0.2.0") == want);
    std::string w1 = want;
    w1.replace(w1.find("0.2.0"), 5, "0.1.0");
    CHECK(enc(r, "0.1.0") == w1);
    CHECK(enc(r, "") == w1);  // an absent version means 0.1.0
    CniResult none;
    CHECK(enc(none, "0.2.0") == "ERROR: cannot convert: no valid IP addresses");
}

TEST_CASE("a result labelled with the target version keeps the 1.x shape (loopback quirk)", "[cni]") {
    CniResult r;
    r.cni_version = "0.3.1";
    Interface lo;
    lo.name = "lo";
    lo.mac = "00:00:00:00:00:00";
    r.interfaces.push_back(lo);
    r.ips.push_back(IpConfig{0, *net::IpNet::parse("127.0.0.1/8"), std::nullopt});
    CHECK(enc(r, "0.3.1") == R"({
    "cniVersion": "0.3.1",
    "interfaces": [
        {
            "mac": "00:00:00:00:00:00",
            "name": "lo"
        }
    ],
    "ips": [
        {
            "address": "127.0.0.1/8",
            "interface": 0
        }
    ]
})");
    CHECK(enc(r, "9.9.9") == "ERROR: no converter for CNI result version 0.3.1 to 9.9.9");
}

TEST_CASE("every conversion pair round-trips through the printed form", "[cni]") {
    for (auto from : kAllVersions) {
        auto printed = encode_result(sample(), from);
        REQUIRE(printed);
        auto doc = json::parse(*printed);
        REQUIRE(doc);
        auto parsed = decode_result(*doc, from);
        INFO("from " << from);
        REQUIRE(parsed);
        for (auto to : kAllVersions) {
            INFO("to " << to);
            auto out = encode_result(*parsed, to);
            REQUIRE(out);
            auto direct = round_trip(sample(), from);
            REQUIRE(direct);
            CHECK(*out == *encode_result(*direct, to));
            auto reparsed = json::parse(*out);
            REQUIRE(reparsed);
            auto back = decode_result(*reparsed, to);
            REQUIRE(back);
            // The first address of each family survives every conversion.
            CHECK(back->ips.front().address.str() == "10.1.0.5/16");
            bool v6_kept = std::any_of(back->ips.begin(), back->ips.end(), [](auto& ip) { return !ip.address.ip.is_v4(); });
            CHECK(v6_kept);
            CHECK(back->dns == sample().dns);
        }
    }
}

TEST_CASE("decoding requires the result's cniVersion to be of the config version's family", "[cni]") {
    auto doc = json::parse(R"({"cniVersion":"0.4.0","ips":[{"version":"4","address":"10.0.0.2/24"}]})");
    REQUIRE(doc);
    auto r = decode_result(*doc, "1.0.0");
    REQUIRE_FALSE(r);
    CHECK(r.error().msg == "result type supports [1.0.0 1.1.0] but unmarshalled CNIVersion is \"0.4.0\"");
    REQUIRE(decode_result(*doc, "0.3.1"));
    CHECK(decode_result(*doc, "7.0.0").error().msg == "unsupported CNI result version \"7.0.0\"");
    auto v02 = json::parse(R"({"cniVersion":"0.2.0","ip4":{"ip":"10.0.0.2/24","gateway":"10.0.0.1","routes":[{"dst":"0.0.0.0/0"}]}})");
    auto r02 = decode_result(*v02, "0.2.0");
    REQUIRE(r02);
    CHECK(r02->ips.size() == 1);
    CHECK(r02->routes.size() == 1);
    CHECK(r02->ips[0].gateway->str() == "10.0.0.1");
}

TEST_CASE("a left-out address or dst is Go's nil IPNet and a null element stays null, in place", "[cni]") {
    auto doc = json::parse(R"({"cniVersion":"1.0.0","interfaces":[null,{"name":"eth0"}],)"
                           R"("ips":[{"interface":1},null,{"address":"10.0.0.2/24","interface":1}],"routes":[{},null]})");
    REQUIRE(doc);
    auto r = decode_result(*doc, "1.0.0");
    REQUIRE(r);
    REQUIRE(r->interfaces.size() == 2);  // the index 1 still names eth0
    CHECK(r->interfaces[0].null);
    CHECK(r->interfaces[1].name == "eth0");
    CHECK(r->ips[0].address.is_nil());
    CHECK(r->ips[1].null);
    CHECK(r->routes[0].dst.is_nil());
    CHECK(r->routes[1].null);
    auto out = json::parse(enc(*r, "1.0.0"));
    REQUIRE(out);
    CHECK((*out)["interfaces"][0].IsNull());
    CHECK(std::string((*out)["ips"][0]["address"].GetString()) == "<nil>");
    CHECK((*out)["ips"][1].IsNull());
    CHECK(std::string((*out)["routes"][0]["dst"].GetString()) == "<nil>");
    CHECK((*out)["routes"][1].IsNull());
    // Printed, "<nil>" is no CIDR: the next plugin refuses it, as Go's do.
    CHECK_FALSE(decode_result(*out, "1.0.0"));
    // Go's conversion up from 0.4.0 crashes on a null interface or address; here it is an error.
    auto v04 = json::parse(R"({"cniVersion":"0.4.0","ips":[null],"routes":[null]})");
    CHECK(decode_result(*v04, "0.4.0").error().msg == "cannot convert: ips[0] is null");
    auto v04_routes = json::parse(R"({"cniVersion":"0.4.0","routes":[null]})");
    CHECK(decode_result(*v04_routes, "0.4.0"));
    // At 0.2.0 a nil address is of neither family; only the valid one is kept.
    CHECK(enc(*r, "0.2.0").find("\"ip\": \"10.0.0.2/24\"") != std::string::npos);
    // A plugin acting on the addresses refuses them.
    CHECK(require_ip_addresses(*r).error().msg == "invalid CIDR address: <nil>");
    r->ips.erase(r->ips.begin());
    CHECK(require_ip_addresses(*r).error().msg == "ips[0] is null");
    r->ips.erase(r->ips.begin());
    CHECK(require_ip_addresses(*r));
    CHECK(require_addresses_and_routes(*r).error().msg == "invalid CIDR address: <nil>");
    r->routes.erase(r->routes.begin());
    CHECK(require_addresses_and_routes(*r).error().msg == "routes[0] is null");
}

TEST_CASE("a 0.4.0 ip's version is recomputed when printed, or echoed as written when the plugin asks", "[cni]") {
    auto doc = json::parse(R"({"cniVersion":"0.4.0","ips":[{"version":"6","address":"10.0.0.2/24"},{"address":"10.0.0.3/24"}]})");
    REQUIRE(doc);
    auto r = decode_result(*doc, "0.4.0");
    REQUIRE(r);
    CHECK(r->ips[0].given_version == "6");
    CHECK(r->ips[1].given_version == "");
    auto versions = [](const std::string& text) {
        auto out = json::parse(text);
        return std::string((*out)["ips"][0]["version"].GetString()) + "," + (*out)["ips"][1]["version"].GetString();
    };
    CHECK(versions(enc(*r, "0.4.0")) == "4,4");  // converted to 1.x and back, as firewall/sbr/bandwidth do
    r->echo_given_versions = true;               // as tuning and portmap do
    CHECK(versions(enc(*r, "0.4.0")) == "6,");
    CHECK(enc(*r, "1.0.0").find("version") == std::string::npos);
}

TEST_CASE("prevResult: a missing or empty CNIVersion takes the config's; a lowercase one wins; null changes nothing", "[cni]") {
    auto conf = parse_netconf(R"({"cniVersion":"1.0.0","name":"n","prevResult":{"ips":[{"address":"10.0.0.2/24"}]}})");
    REQUIRE(conf);
    auto prev = parse_prev_result(*conf);
    REQUIRE(prev);
    REQUIRE(*prev);
    CHECK((*prev)->ips[0].address.str() == "10.0.0.2/24");
    auto mixed = parse_netconf(R"({"cniVersion":"1.0.0","name":"n","prevResult":{"cniVersion":"0.4.0","ips":[]}})");
    auto bad = parse_prev_result(*mixed);
    REQUIRE_FALSE(bad);
    CHECK(bad.error().msg == "result type supports [1.0.0 1.1.0] but unmarshalled CNIVersion is \"0.4.0\"");
    // "CNIVERSION" sorts before the injected "CNIVersion", so the config's version wins.
    auto upper = parse_netconf(R"({"cniVersion":"1.0.0","name":"n","prevResult":{"CNIVERSION":"0.4.0"}})");
    REQUIRE(parse_prev_result(*upper));
    auto none = parse_netconf(R"({"cniVersion":"1.0.0","name":"n"})");
    CHECK_FALSE(*parse_prev_result(*none));
    // A null changes nothing; an empty exact "CNIVersion" is replaced by the config's version.
    auto label_error = [](const char* prev) {
        auto c = parse_netconf(std::string(R"({"cniVersion":"1.0.0","name":"n","prevResult":)") + prev + "}");
        auto r = parse_prev_result(*c);
        return r ? std::string() : r.error().msg;
    };
    CHECK(label_error(R"({"cniVersion":null,"ips":[]})") == "");
    CHECK(label_error(R"({"CNIVersion":""})") == "");
    CHECK(label_error(R"({"CNIVersion":null})") == "result type supports [1.0.0 1.1.0] but unmarshalled CNIVersion is \"\"");
    CHECK(label_error(R"({"CNIVersion":"","cniVersion":"0.4.0"})") ==
          "result type supports [1.0.0 1.1.0] but unmarshalled CNIVersion is \"0.4.0\"");
    CHECK(label_error(R"({"cniVersion":5})") == "json: cannot unmarshal number into Go struct field Result.cniVersion of type string");
}

TEST_CASE("prevResult as given (sbr): no version injected, so an unversioned one is refused after 0.2.0", "[cni]") {
    auto as_given = [](const char* version, const char* prev) {
        auto c = parse_netconf(std::string(R"({"cniVersion":")") + version + R"(","name":"n","prevResult":)" + prev + "}");
        auto r = parse_prev_result(*c, PrevResultVersion::as_given);
        return r ? std::string() : r.error().msg;
    };
    CHECK(as_given("1.0.0", R"({"ips":[]})") == "result type supports [1.0.0 1.1.0] but unmarshalled CNIVersion is \"\"");
    CHECK(as_given("0.4.0", R"({"CNIVersion":""})") == "result type supports [0.3.0 0.3.1 0.4.0] but unmarshalled CNIVersion is \"\"");
    CHECK(as_given("0.2.0", R"({"ip4":{"ip":"10.0.0.2/24"}})") == "");
    CHECK(as_given("1.0.0", R"({"cniVersion":"1.0.0","ips":[]})") == "");
}

TEST_CASE("an address's interface index is Go's 64-bit int", "[cni]") {
    auto index_of = [](const char* index) -> std::string {
        auto doc = json::parse(std::string(R"({"cniVersion":"1.0.0","ips":[{"address":"10.0.0.2/24","interface":)") + index + "}]}");
        auto r = decode_result(*doc, "1.0.0");
        return r ? std::to_string(*r->ips[0].interface) : r.error().msg;
    };
    CHECK(index_of("2147483648") == "2147483648");
    CHECK(index_of("-9223372036854775808") == "-9223372036854775808");
    CHECK(index_of("9223372036854775808") ==
          "json: cannot unmarshal number 9223372036854775808 into Go struct field Result.ips.interface of type int");
}

TEST_CASE("netconf: valid attachments and common keys", "[cni]") {
    auto c = parse_netconf(R"({"cniVersion":"1.1.0","name":"n","type":"bridge","ipam":{"type":"host-local"},
        "cni.dev/valid-attachments":[{"containerID":"c1","ifname":"eth0"}]})");
    REQUIRE(c);
    CHECK(c->type == "bridge");
    CHECK(c->ipam_type == "host-local");
    REQUIRE(c->valid_attachments);
    CHECK(*c->valid_attachments == std::vector<net::Attachment>{{"c1", "eth0"}});
    CHECK_FALSE(parse_netconf(R"({"name":"n"})")->valid_attachments);
    auto bad = parse_netconf(R"({"name":"n","type":5})");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().msg == "json: cannot unmarshal number into Go struct field NetConf.type of type string");
}

TEST_CASE("errors print as {code, msg, details} without cniVersion", "[cni]") {
    CHECK(encode_error(Error{4, "interface name is too long", "interface name should be less than 16 characters"}) ==
          "{\n    \"code\": 4,\n    \"msg\": \"interface name is too long\",\n    \"details\": \"interface name should be less than 16 characters\"\n}");
    CHECK(encode_error(Error{999, "x <y>", ""}) == "{\n    \"code\": 999,\n    \"msg\": \"x \\u003cy\\u003e\"\n}");
}

TEST_CASE("Failures: every failed step's message, joined, as one untyped error; success when none failed", "[base]") {
    Failures none;
    none.add(Status{});
    none.add(Result<int>{3});
    CHECK(none.status("GC: "));
    Failures some;
    some.add(Status{fail(code::io_failure, "first")});
    some.add(Status{});
    some.add(Result<int>{fail("second")});
    auto st = some.status("GC: ");
    REQUIRE_FALSE(st);
    CHECK(st.error().code == code::internal);
    CHECK(st.error().msg == "GC: first; second");
}
