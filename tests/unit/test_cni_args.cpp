// SPDX-License-Identifier: Apache-2.0
// CNI_ARGS parsing with the reference's pair rules, field matching and messages; configured MACs.
#include <catch2/catch.hpp>

#include "core/cni/cni_args.hpp"
#include "core/cni/netconf.hpp"
#include "core/net/mac.hpp"

namespace {
struct Parsed {
    std::string ip, mac;
};
cni::Status load(std::string_view args, Parsed& p) {
    cni::CniArgField fields[] = {
        {"IP", [&](std::string_view v) -> cni::Status { CNI_TRY(cni::parse_arg_ip(v)); p.ip = v; return {}; }},
        {"MAC", [&](std::string_view v) -> cni::Status { p.mac = v; return {}; }},
    };
    return cni::load_cni_args(args, fields);
}
std::string error_of(std::string_view args) {
    Parsed p;
    auto st = load(args, p);
    return st ? "" : st.error().msg;
}
}  // namespace

TEST_CASE("known keys are set; empty CNI_ARGS is nothing", "[cni]") {
    Parsed p;
    REQUIRE(load("IP=10.0.0.5;MAC=aa:bb:cc:dd:ee:ff", p));
    CHECK(p.ip == "10.0.0.5");
    CHECK(p.mac == "aa:bb:cc:dd:ee:ff");
    REQUIRE(load("", p));
}

TEST_CASE("pairs must split into exactly two parts", "[cni]") {
    CHECK(error_of("FOO") == "ARGS: invalid pair \"FOO\"");
    CHECK(error_of("IP=1=2") == "ARGS: invalid pair \"IP=1=2\"");
    CHECK(error_of("IP=10.0.0.1;") == "ARGS: invalid pair \"\"");
}

TEST_CASE("unknown keys fail unless IgnoreUnknown is true", "[cni]") {
    CHECK(error_of("K8S_POD_NAME=a;X=b") == "ARGS: unknown args [\"K8S_POD_NAME=a\" \"X=b\"]");
    CHECK(error_of("IgnoreUnknown=1;K8S_POD_NAME=a") == "");
    CHECK(error_of("IgnoreUnknown=TRUE;K8S_POD_NAME=a") == "");
    CHECK(error_of("K8S_POD_NAME=a;IgnoreUnknown=true") == "");
    CHECK(error_of("IgnoreUnknown=0;K8S_POD_NAME=a") == "ARGS: unknown args [\"K8S_POD_NAME=a\"]");
    CHECK(error_of("ip=10.0.0.1") == "ARGS: unknown args [\"ip=10.0.0.1\"]");  // case-sensitive
    CHECK(error_of("IgnoreUnknown=maybe") ==
          "ARGS: error parsing value of pair \"IgnoreUnknown=maybe\": boolean unmarshal error: invalid input maybe");
}

TEST_CASE("values are parsed by the field's type", "[cni]") {
    CHECK(error_of("IP=zz") == "ARGS: error parsing value of pair \"IP=zz\": invalid IP address zz");
    Parsed p;
    REQUIRE(load("IP=10.0.0.5/24", p));  // pkg/ip.IP accepts a prefix and ignores it
    CHECK(cni::parse_arg_ip("10.0.0.5/24")->str() == "10.0.0.5");
    CHECK(cni::go_quote("a\"b\\c\n") == "\"a\\\"b\\\\c\\n\"");
}

TEST_CASE("the container MAC from CNI_ARGS and runtimeConfig: an empty value says nothing", "[cni]") {
    CHECK(*cni::cni_args_mac("IgnoreUnknown=1;K8S_POD_NAME=p;MAC=0a:00:00:00:00:01") == "0a:00:00:00:00:01");
    CHECK_FALSE(*cni::cni_args_mac("MAC="));
    CHECK_FALSE(*cni::cni_args_mac(""));
    CHECK(cni::cni_args_mac("POD=x").error().msg.find("POD") != std::string::npos);  // unknown keys, as LoadArgs
    cni::json::Where w{"NetConf", ""};
    auto conf = [](const char* text) { return *cni::parse_netconf(text); };
    CHECK(*cni::runtime_config_mac(conf(R"({"cniVersion":"1.0.0","name":"n","runtimeConfig":{"mac":"0a:00:00:00:00:02"}})"), w) ==
          "0a:00:00:00:00:02");
    CHECK_FALSE(*cni::runtime_config_mac(conf(R"({"cniVersion":"1.0.0","name":"n","runtimeConfig":{"mac":""}})"), w));
    CHECK_FALSE(*cni::runtime_config_mac(conf(R"({"cniVersion":"1.0.0","name":"n"})"), w));
    // Go names no struct for a field of an anonymous struct, and the anonymous struct by its type.
    CHECK(cni::runtime_config_mac(conf(R"({"cniVersion":"1.0.0","name":"n","runtimeConfig":{"mac":5}})"), w).error().msg ==
          "json: cannot unmarshal number into Go struct field .runtimeConfig.mac of type string");
    CHECK(cni::runtime_config_mac(conf(R"({"cniVersion":"1.0.0","name":"n","runtimeConfig":"x"})"), w).error().msg ==
          R"(json: cannot unmarshal string into Go struct field NetConf.runtimeConfig of type struct { Mac string "json:\"mac,omitempty\"" })");
    CHECK_FALSE(*cni::runtime_config_mac(conf(R"({"cniVersion":"1.0.0","name":"n","runtimeConfig":null})"), w));

    // Layered over the plugin's own key: runtimeConfig beats CNI_ARGS beats the config; silence keeps it.
    auto with_rc = conf(R"({"cniVersion":"1.0.0","name":"n","runtimeConfig":{"mac":"0a:00:00:00:00:02"}})");
    auto without = conf(R"({"cniVersion":"1.0.0","name":"n"})");
    CHECK(*cni::layered_mac("MAC=0a:00:00:00:00:01", with_rc, w, "0a:00:00:00:00:03") == "0a:00:00:00:00:02");
    CHECK(*cni::layered_mac("MAC=0a:00:00:00:00:01", without, w, "0a:00:00:00:00:03") == "0a:00:00:00:00:01");
    CHECK(*cni::layered_mac("", without, w, "0a:00:00:00:00:03") == "0a:00:00:00:00:03");
    CHECK(cni::layered_mac("POD=x", with_rc, w, "").error().msg.find("POD") != std::string::npos);
}

TEST_CASE("a configured MAC: normalised, none stays none, the reference's two error wordings", "[cni]") {
    CHECK(*cni::net::configured_mac("0A-58-0A-56-00-09", cni::net::MacWording::plain) == "0a:58:0a:56:00:09");
    CHECK(*cni::net::configured_mac("0a58.0a56.0009", cni::net::MacWording::args) == "0a:58:0a:56:00:09");
    CHECK(cni::net::configured_mac("", cni::net::MacWording::plain)->empty());
    CHECK(cni::net::configured_mac("zz", cni::net::MacWording::plain).error().msg == "invalid MAC address \"zz\"");
    CHECK(cni::net::configured_mac("zz", cni::net::MacWording::args).error().msg == "invalid args zz for MAC addr: address zz: invalid MAC address");
}

TEST_CASE("cni_arg reads one key leniently: the first pair of it, split at the first '='", "[cni]") {
    const std::string args = "IgnoreUnknown=1;K8S_POD_NAMESPACE=team-a;K8S_POD_NAME=web=0;K8S_POD_NAMESPACE=other;odd";
    CHECK(cni::cni_arg(args, "K8S_POD_NAMESPACE") == "team-a");
    CHECK(cni::cni_arg(args, "K8S_POD_NAME") == "web=0");
    CHECK(cni::cni_arg(args, "K8S_POD_UID") == std::nullopt);
    CHECK(cni::cni_arg(args, "odd") == std::nullopt);
    CHECK(cni::cni_arg("K8S_POD_NAMESPACE=", "K8S_POD_NAMESPACE") == "");
    CHECK(cni::cni_arg("", "K8S_POD_NAMESPACE") == std::nullopt);
}
