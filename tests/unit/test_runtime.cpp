// SPDX-License-Identifier: Apache-2.0
// The runtime side without plugins: conflist parsing, a .conf wrapped as a list, the config
// each plugin receives (name/cniVersion injected, runtimeConfig from declared capabilities,
// prevResult), and base64 as Go marshals []byte.
#include <catch2/catch.hpp>

#include "core/runtime/runtime.hpp"

using namespace cni;
using namespace cni::runtime;

TEST_CASE("conflist: name, version, flags and plugins; the reference's errors", "[runtime]") {
    auto l = parse_conflist(R"({"cniVersion":"1.1.0","name":"n","disableCheck":"true","disableGC":true,
        "plugins":[{"type":"bridge"},{"type":"portmap","capabilities":{"portMappings":true}}]})");
    REQUIRE(l);
    CHECK((l->name == "n" && l->cni_version == "1.1.0" && l->disable_check && l->disable_gc));
    CHECK(l->types == std::vector<std::string>{"bridge", "portmap"});
    CHECK(parse_conflist(R"({"plugins":[{"type":"x"}]})").error().msg == "error parsing configuration list: no name");
    CHECK(parse_conflist(R"({"name":"n"})").error().msg == "error parsing configuration list: no 'plugins' key");
    CHECK(parse_conflist(R"({"name":"n","plugins":[]})").error().msg == "error parsing configuration list: no plugins in list");
    CHECK(parse_conflist(R"({"name":"n","plugins":[{}]})").error().msg == "error parsing configuration: missing 'type'");
    auto single = conflist_from_conf(R"({"cniVersion":"0.4.0","name":"s","type":"ptp"})");
    REQUIRE(single);
    CHECK(single->bytes == R"({"cniVersion":"0.4.0","name":"s","plugins":[{"cniVersion":"0.4.0","name":"s","type":"ptp"}]})");
}

TEST_CASE("plugin config: injected name and version, runtimeConfig only for declared capabilities, prevResult", "[runtime]") {
    auto l = parse_conflist(R"({"cniVersion":"1.0.0","name":"net","plugins":[
        {"type":"portmap","name":"ignored","capabilities":{"portMappings":true,"bandwidth":false},"runtimeConfig":{"old":1}},
        {"type":"tuning"}]})");
    REQUIRE(l);
    RuntimeConf rt;
    rt.capability_args = R"({"portMappings":[{"hostPort":1,"containerPort":2}],"bandwidth":{"ingressRate":1}})";
    auto c = plugin_config(*l, 0, rt, std::nullopt);
    REQUIRE(c);
    CHECK(*c == R"({"capabilities":{"bandwidth":false,"portMappings":true},"cniVersion":"1.0.0","name":"net",)"
                R"("runtimeConfig":{"portMappings":[{"containerPort":2,"hostPort":1}]},"type":"portmap"})");  // Go re-marshals maps: sorted
    CniResult prev;
    prev.cni_version = "1.0.0";
    prev.ips.push_back(IpConfig{std::nullopt, *net::IpNet::parse("10.0.0.2/24"), std::nullopt});
    c = plugin_config(*l, 1, rt, prev);
    REQUIRE(c);
    CHECK(*c == R"({"cniVersion":"1.0.0","name":"net","prevResult":{"cniVersion":"1.0.0","ips":[{"address":"10.0.0.2/24"}]},"type":"tuning"})");
}

TEST_CASE("plugin config: numbers through float64 as libcni's interface{} round trip leaves them", "[runtime]") {
    auto l = parse_conflist(R"({"cniVersion":"1.0.0","name":"net","plugins":[
        {"type":"bridge","mtu":1400.0,"x":1e2,"big":9007199254740993,"f":1.5,"capabilities":{"portMappings":true}}]})");
    REQUIRE(l);
    RuntimeConf rt;
    rt.capability_args = R"({"portMappings":[{"hostPort":8080.0,"containerPort":9007199254740993}]})";
    auto c = plugin_config(*l, 0, rt, std::nullopt);
    REQUIRE(c);
    CHECK(*c == R"({"big":9007199254740992,"capabilities":{"portMappings":true},"cniVersion":"1.0.0","f":1.5,"mtu":1400,)"
                R"("name":"net","runtimeConfig":{"portMappings":[{"containerPort":9007199254740992,"hostPort":8080}]},)"
                R"("type":"bridge","x":100})");
}

TEST_CASE("base64: Go's standard encoding with padding, both ways", "[runtime]") {
    CHECK(base64_encode("") == "");
    CHECK(base64_encode("f") == "Zg==");
    CHECK(base64_encode("fo") == "Zm8=");
    CHECK(base64_encode("foo") == "Zm9v");
    CHECK(base64_encode("{\"a\":1}\n") == "eyJhIjoxfQo=");
    for (std::string s : {"", "f", "fo", "foo", "foob", "\xff\x00\x10 binary"}) CHECK(base64_decode(base64_encode(s)) == s);
    CHECK(!base64_decode("Zg="));
    CHECK(!base64_decode("Z!=="));
}
