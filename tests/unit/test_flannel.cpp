// SPDX-License-Identifier: Apache-2.0
// flannel without I/O: subnet.env parsing and the delegate config, against literal JSON.
#include <catch2/catch.hpp>

#include "applets/flannel/delegate_config.hpp"

using namespace cni;

namespace {

const char* kDualStack =
    "FLANNEL_NETWORK=10.244.0.0/16\n"
    "FLANNEL_SUBNET=10.244.1.1/24\n"
    "FLANNEL_IPV6_NETWORK=fd00:244::/56\n"
    "FLANNEL_IPV6_SUBNET=fd00:244:0:1::1/64\n"
    "FLANNEL_MTU=1450\n"
    "FLANNEL_IPMASQ=true\n";

std::string delegate(const char* flannel_conf, const char* env_text = kDualStack) {
    auto env = flannel::parse_subnet_env(env_text, "/run/flannel/subnet.env");
    REQUIRE(env);
    auto doc = json::parse(flannel_conf);
    REQUIRE(doc);
    auto out = flannel::delegate_config(*doc, *env);
    if (!out) return "error: " + out.error().msg;
    return *out;
}

}  // namespace

TEST_CASE("subnet.env: networks and subnets become network addresses, unknown keys are ignored", "[flannel]") {
    auto env = flannel::parse_subnet_env(std::string(kDualStack) + "FLANNEL_OTHER=1\n# comment\n", "f");
    REQUIRE(env);
    REQUIRE(env->networks.size() == 1);
    CHECK(env->networks[0].str() == "10.244.0.0/16");
    CHECK(env->subnet->str() == "10.244.1.0/24");
    CHECK(env->ipv6_subnet->str() == "fd00:244:0:1::/64");
    CHECK(*env->mtu == 1450);
    CHECK(*env->ipmasq);
    auto list = flannel::parse_subnet_env("FLANNEL_NETWORK=10.1.0.0/16,10.2.0.0/16,10.1.0.0/16\nFLANNEL_SUBNET=10.1.3.1/24\n"
                                          "FLANNEL_MTU=1400\nFLANNEL_IPMASQ=yes\n", "f");
    REQUIRE(list);
    CHECK(list->networks.size() == 2);  // deduplicated
    CHECK_FALSE(*list->ipmasq);          // only "true" is true
}

TEST_CASE("subnet.env: what is missing is named, and bad values are refused", "[flannel]") {
    CHECK(flannel::parse_subnet_env("FLANNEL_MTU=1450\n", "/run/flannel/subnet.env").error().msg ==
          "/run/flannel/subnet.env is missing FLANNEL_NETWORK, FLANNEL_IPV6_NETWORK, FLANNEL_SUBNET, FLANNEL_IPV6_SUBNET, "
          "FLANNEL_IPMASQ");
    CHECK(flannel::parse_subnet_env("", "f").error().msg ==
          "f is missing FLANNEL_NETWORK, FLANNEL_IPV6_NETWORK, FLANNEL_SUBNET, FLANNEL_IPV6_SUBNET, FLANNEL_MTU, FLANNEL_IPMASQ");
    CHECK(flannel::parse_subnet_env("FLANNEL_SUBNET=10.0.0.1\n", "f").error().msg == "FLANNEL_SUBNET: invalid CIDR address: 10.0.0.1");
    CHECK(flannel::parse_subnet_env("FLANNEL_MTU=big\n", "f").error().msg == "FLANNEL_MTU: invalid value big");
}

TEST_CASE("the delegate: bridge + host-local by default, dual stack, sorted keys", "[flannel]") {
    CHECK(delegate(R"({"cniVersion":"1.0.0","name":"cbr0","type":"flannel","delegate":{"hairpinMode":true,"isDefaultGateway":true}})") ==
          R"({"cniVersion":"1.0.0","hairpinMode":true,"ipMasq":false,"ipam":{"ranges":[[{"subnet":"10.244.1.0/24"}],)"
          R"([{"subnet":"fd00:244:0:1::/64"}]],"routes":[{"dst":"10.244.0.0/16"},{"dst":"fd00:244::/56"}],"type":"host-local"},)"
          R"("isDefaultGateway":true,"isGateway":true,"mtu":1450,"name":"cbr0","type":"bridge"})");
}

TEST_CASE("the delegate keeps what it sets, extends the base IPAM and passes runtimeConfig", "[flannel]") {
    const char* env = "FLANNEL_NETWORK=10.5.0.0/16\nFLANNEL_SUBNET=10.5.7.1/24\nFLANNEL_MTU=8951\nFLANNEL_IPMASQ=false\n";
    CHECK(delegate(R"({"cniVersion":"0.3.1","name":"n","type":"flannel",
                       "delegate":{"type":"ptp","ipMasq":false,"mtu":1400},
                       "ipam":{"type":"static","routes":[{"dst":"192.168.0.0/16"}],"ranges":[["ignored"]]},
                       "runtimeConfig":{"portMappings":[{"hostPort":80,"containerPort":8080}]}})",
                   env) ==
          R"({"cniVersion":"0.3.1","ipMasq":false,"ipam":{"ranges":[[{"subnet":"10.5.7.0/24"}]],)"
          R"("routes":[{"dst":"192.168.0.0/16"},{"dst":"10.5.0.0/16"}],"type":"static"},"mtu":1400,"name":"n",)"
          R"("runtimeConfig":{"portMappings":[{"containerPort":8080,"hostPort":80}]},"type":"ptp"})");
    // FLANNEL_IPMASQ=false: the delegate masquerades (flanneld does not).
    CHECK(delegate(R"({"name":"n","type":"flannel"})", env).find(R"("ipMasq":true)") != std::string::npos);
}

TEST_CASE("the delegate's numbers come through float64, as Go's flannel marshals its interface{} maps", "[flannel]") {
    const char* env = "FLANNEL_NETWORK=10.5.0.0/16\nFLANNEL_SUBNET=10.5.7.1/24\nFLANNEL_MTU=8951\nFLANNEL_IPMASQ=false\n";
    auto out = delegate(R"({"name":"n","delegate":{"mtu":1400.0,"big":9007199254740993},"ipam":{"x":1e2}})", env);
    CHECK(out.find(R"("mtu":1400,)") != std::string::npos);
    CHECK(out.find(R"("big":9007199254740992,)") != std::string::npos);
    CHECK(out.find(R"("type":"host-local","x":100})") != std::string::npos);
}

TEST_CASE("the delegate refuses name and ipam of its own", "[flannel]") {
    CHECK(delegate(R"({"name":"n","delegate":{"name":"x"}})") == "error: \"delegate\" must not have \"name\" field");
    CHECK(delegate(R"({"name":"n","delegate":{"ipam":{}}})") == "error: \"delegate\" must not have \"ipam\" field");
    CHECK(delegate(R"({"name":"n","delegate":{"type":5}})") == "error: \"delegate\" field \"type\" must be a string");
    CHECK(delegate(R"({"name":"n","delegate":[1]})") == "error: \"delegate\" must be an object");
}
