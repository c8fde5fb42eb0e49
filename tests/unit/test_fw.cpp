// SPDX-License-Identifier: Apache-2.0
// SHA-512 and the reference's chain names and comments, against values computed independently
// (Python hashlib, Go fmt %q).
#include <catch2/catch.hpp>

#include "core/fw/ipmasq.hpp"
#include "core/fw/names.hpp"
#include "core/fw/sha512.hpp"

using namespace cni::fw;

TEST_CASE("SHA-512 test vectors") {
    CHECK(sha512_hex("").substr(0, 32) == "cf83e1357eefb8bdf1542850d66d8007");
    CHECK(sha512_hex("abc") ==
          "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f");
    CHECK(sha512_hex(std::string(200, 'a')).substr(0, 32) == "4b11459c33f52a22ee8236782714c150");  // several blocks
    CHECK(sha512_hex(std::string(111, 'x')).size() == 128);  // padding edge: 111 + 1 + 16 = 128
}

TEST_CASE("chain names and comments are bit-exact with the reference") {
    CHECK(chain_name("CNI-", "mynet", "1234567890abcdef") == "CNI-e2e8cd5c6ebacde4cecc8b58");
    CHECK(chain_name("CNI-", "mynet", "1234567890abcdef").size() == 28);
    CHECK(chain_name("CNI-DN-", "mynet", "1234567890abcdef").starts_with("CNI-DN-"));
    CHECK(masq_comment("mynet", "cid-1") == "name: \"mynet\" id: \"cid-1\"");
}

TEST_CASE("ipMasq backends: iptables served, nftables refused with code 2, others unknown") {
    CHECK(validate_ipmasq_backend(""));
    CHECK(validate_ipmasq_backend("iptables"));
    CHECK(validate_ipmasq_backend("nftables").error().code == cni::code::unsupported_field);
    CHECK(validate_ipmasq_backend("pf").error().msg == "unknown ipmasq backend \"pf\"");
}
