// SPDX-License-Identifier: Apache-2.0
// Unit tests of vpc-eni's pieces that need no namespace: SHA-1 (the veth names) against FIPS 180
// vectors, and the node file: defaults, the ENI lookup, the examples in docs/, and each
// validation's message naming the key and value.
#include <catch2/catch.hpp>

#include <fstream>
#include <iterator>

#include "applets/vpc_eni/node_file.hpp"
#include "applets/vpc_eni/sha1.hpp"
#include "temp_dir.hpp"

using namespace cni;

TEST_CASE("SHA-1 of the FIPS 180 vectors and of a pod's name", "[vpc-eni]") {
    CHECK(vpc::sha1_hex("") == "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    CHECK(vpc::sha1_hex("abc") == "a9993e364706816aba3e25717850c26c9cd0d89d");
    CHECK(vpc::sha1_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
          "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    CHECK(vpc::sha1_hex(std::string(1000000, 'a')) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

namespace {

Result<vpc::NodeFile> load(const TempDir& d, const std::string& text) {
    d.write("node.json", text);
    return vpc::load_node_file(d / "node.json");
}

const char* kEnis = R"("enis": [
  {"interface": "eth0", "deviceNumber": 0, "subnet": "10.0.1.0/24", "primaryIp": "10.0.1.10", "secondaryIps": ["10.0.1.20"]},
  {"interface": "eth1", "deviceNumber": 2, "subnet": "10.0.2.0/24", "primaryIp": "10.0.2.10", "secondaryIps": ["10.0.2.20", "10.0.2.21"]}])";

}  // namespace

TEST_CASE("the node file: defaults, ENIs, and the ENI of an address", "[vpc-eni]") {
    TempDir d;
    auto n = load(d, std::string(R"({"primaryInterface": "eth0", "vpcCidrs": ["10.0.0.0/16"], )") + kEnis + "}");
    INFO((n ? "" : n.error().msg));
    REQUIRE(n);
    CHECK(n->mtu == 9001);
    CHECK(n->node_port_support);
    CHECK_FALSE(n->pod_eni_support);
    CHECK(n->veth_prefix == "eni");
    CHECK(n->state_dir == "/run/cni-all/vpc-eni");
    CHECK(n->primary().interface == "eth0");
    const auto* e = n->eni_of(*IpAddr::parse("10.0.2.21"));
    REQUIRE(e);
    CHECK(e->table() == 3);
    CHECK(e->gateway().str() == "10.0.2.1");
    CHECK_FALSE(n->eni_of(*IpAddr::parse("10.0.2.10")));  // the ENI's own address is no pod's
}

TEST_CASE("the example node file and conflist in docs/ are valid", "[vpc-eni]") {
    auto n = vpc::load_node_file(CNI_SOURCE_DIR "/docs/examples/vpc-eni/node.json");
    INFO((n ? "" : n.error().msg));
    REQUIRE(n);
    CHECK(n->enis.size() == 2);
    CHECK(n->eni_of(*IpAddr::parse("10.80.2.22"))->table() == 2);
    std::ifstream conflist(CNI_SOURCE_DIR "/docs/examples/vpc-eni/10-aws-vpc.conflist");
    std::string text((std::istreambuf_iterator<char>(conflist)), std::istreambuf_iterator<char>());
    auto doc = json::parse(text);
    REQUIRE(doc);
    CHECK(std::string((*doc)["plugins"][0]["type"].GetString()) == "vpc-eni");
}

TEST_CASE("the node file: each mistake is an error naming the key and value", "[vpc-eni]") {
    TempDir d;
    auto err = [&](const std::string& text) {
        auto n = load(d, text);
        REQUIRE_FALSE(n);
        return n.error().msg;
    };
    const std::string head = R"({"primaryInterface": "eth0", "vpcCidrs": ["10.0.0.0/16"], )";
    CHECK(err(head + R"("mtu": "big", )" + kEnis + "}").find("mtu") != std::string::npos);
    CHECK(err(head + R"("mtu": 70000, )" + kEnis + "}").find("mtu 70000 is not within 576..9001") != std::string::npos);
    CHECK(err(R"({"vpcCidrs": ["10.0.0.0/16"], )" + std::string(kEnis) + "}").find("primaryInterface is missing") != std::string::npos);
    CHECK(err(head + R"("enis": [{"interface": "eth0", "deviceNumber": 0, "subnet": "10.0.1.0/24", "primaryIp": "10.0.1.10",
                 "secondaryIps": ["10.0.9.9"]}]})")
              .find("secondaryIps: 10.0.9.9 is not in subnet 10.0.1.0/24") != std::string::npos);
    CHECK(err(head + R"("enis": [{"interface": "eth0", "deviceNumber": 0, "subnet": "10.0.1.0/24", "primaryIp": "10.0.1.10",
                 "secondaryIps": ["10.0.1.1"]}]})")
              .find("10.0.1.1 is listed twice, or is the ENI's own address or its gateway") != std::string::npos);
    CHECK(err(head + R"("enis": [{"interface": "eth9", "deviceNumber": 0, "subnet": "10.0.1.0/24", "primaryIp": "10.0.1.10"}]})")
              .find("primaryInterface eth0 is not the interface of the ENI with deviceNumber 0 (eth9)") != std::string::npos);
    CHECK(err(head + R"("vethPrefix": "toolong", )" + kEnis + "}").find("vethPrefix \"toolong\"") != std::string::npos);
    CHECK(err(head + R"("stateDir": "relative", )" + kEnis + "}").find("stateDir \"relative\" is not an absolute path") !=
          std::string::npos);
    CHECK(err("{").find("unexpected end of JSON input") != std::string::npos);
    CHECK(vpc::load_node_file(d / "missing.json").error().msg.find("does not exist") != std::string::npos);
}
