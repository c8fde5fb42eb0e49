// SPDX-License-Identifier: Apache-2.0
// Spec version parsing, comparison and the VERSION output.
#include <catch2/catch.hpp>

#include "core/cni/version.hpp"

TEST_CASE("version strings parse like Go version.ParseVersion", "[cni]") {
    auto v = cni::parse_version("0.4.0");
    REQUIRE(v);
    CHECK(*v == cni::SpecVersion{0, 4, 0});
    CHECK(*cni::parse_version("1") == cni::SpecVersion{1, 0, 0});
    CHECK(*cni::parse_version("1.1") == cni::SpecVersion{1, 1, 0});
    CHECK(cni::parse_version("0.4.0.1").error().msg == "invalid version \"0.4.0.1\": too many parts");
    CHECK(cni::parse_version("").error().msg == "invalid version \"\": the version is empty");
    CHECK(cni::parse_version("x.4.0").error().msg ==
          "failed to convert major version part \"x\": strconv.Atoi: parsing \"x\": invalid syntax");
    CHECK(cni::parse_version("1.y").error().msg ==
          "failed to convert minor version part \"y\": strconv.Atoi: parsing \"y\": invalid syntax");
    CHECK(cni::parse_version("1.0.").error().code == cni::code::decoding_failure);
}

TEST_CASE("version comparison", "[cni]") {
    CHECK(*cni::version_at_least("1.1.0", "1.1.0"));
    CHECK(*cni::version_at_least("1.0.0", "0.4.0"));
    CHECK_FALSE(*cni::version_at_least("0.3.1", "0.4.0"));
    CHECK(*cni::version_at_least("0.10.0", "0.4.0"));
    CHECK_FALSE(cni::version_at_least("bad", "0.4.0"));
    CHECK(cni::version_supported(cni::kAllVersions, "0.3.1"));
    CHECK_FALSE(cni::version_supported(cni::kAllVersions, "0.3"));
}

TEST_CASE("VERSION output is compact, says 1.1.0 and ends with a newline", "[cni]") {
    CHECK(cni::version_info_json(cni::kAllVersions) ==
          "{\"cniVersion\":\"1.1.0\",\"supportedVersions\":[\"0.1.0\",\"0.2.0\",\"0.3.0\",\"0.3.1\",\"0.4.0\",\"1.0.0\",\"1.1.0\"]}\n");
}

#include "core/os/sysctl.hpp"

TEST_CASE("sysctl names: dots become slashes only before the first slash", "[os]") {
    CHECK(cni::os::sysctl_path("net.ipv4.ip_forward") == "/proc/sys/net/ipv4/ip_forward");
    CHECK(cni::os::sysctl_path("net/ipv4/conf/eth0.100/forwarding") == "/proc/sys/net/ipv4/conf/eth0.100/forwarding");
    CHECK(cni::os::sysctl_path("net.ipv6.conf.all.forwarding") == "/proc/sys/net/ipv6/conf/all/forwarding");
}
