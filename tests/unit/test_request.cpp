// SPDX-License-Identifier: Apache-2.0
// Reading a CNI invocation: required variables per command, validation order and texts.
#include <catch2/catch.hpp>

#include "core/cni/request.hpp"

namespace {
using Env = std::vector<std::string>;
cni::Expected<cni::Request, cni::RequestError> read(Env env, std::string stdin_text = R"({"name":"net1"})") {
    return cni::read_request(env, [&](std::size_t limit) -> cni::Result<std::string> {
        if (stdin_text.size() > limit) return cni::fail(cni::code::io_failure, "too big");
        return stdin_text;
    });
}
std::string msg(Env env, std::string stdin_text = R"({"name":"net1"})") {
    auto r = read(std::move(env), std::move(stdin_text));
    return r ? "" : std::to_string(r.error().error.code) + " " + r.error().error.msg + (r.error().error.details.empty() ? "" : " | " + r.error().error.details);
}
const Env kAdd = {"CNI_COMMAND=ADD", "CNI_CONTAINERID=c1", "CNI_NETNS=/run/netns/x", "CNI_IFNAME=eth0", "CNI_PATH=/opt/cni/bin"};
}  // namespace

TEST_CASE("missing variables are listed in skel's order", "[cni]") {
    CHECK(msg({"CNI_COMMAND=ADD"}) == "4 required env variables [CNI_CONTAINERID,CNI_NETNS,CNI_IFNAME,CNI_PATH] missing");
    CHECK(msg({"CNI_COMMAND=DEL"}) == "4 required env variables [CNI_CONTAINERID,CNI_IFNAME,CNI_PATH] missing");
    CHECK(msg({"CNI_COMMAND=CHECK", "CNI_CONTAINERID=a"}) == "4 required env variables [CNI_NETNS,CNI_IFNAME,CNI_PATH] missing");
    CHECK(msg({"CNI_COMMAND=GC"}) == "4 required env variables [CNI_PATH] missing");
    CHECK(msg({"CNI_COMMAND=STATUS"}) == "4 required env variables [CNI_PATH] missing");
    CHECK(msg({"CNI_COMMAND=VERSION"}) == "");
    CHECK(msg({"CNI_COMMAND=DEL", "CNI_CONTAINERID=a", "CNI_IFNAME=eth0", "CNI_PATH=/x"}) == "");  // netns optional
}

TEST_CASE("an unset CNI_COMMAND asks for the about text", "[cni]") {
    auto r = read({});
    REQUIRE_FALSE(r);
    CHECK(r.error().about);
    CHECK(r.error().error.msg == "required env variables [CNI_COMMAND] missing");
    auto r2 = read({"CNI_COMMAND=ADD"});
    CHECK_FALSE(r2.error().about);
}

TEST_CASE("the network name is validated before the container ID and ifname", "[cni]") {
    Env bad_id = kAdd;
    bad_id[1] = "CNI_CONTAINERID=a b";
    CHECK(msg(bad_id) == "4 invalid characters in containerID | a b");
    CHECK(msg(bad_id, R"({"name":"a b"})") == "7 invalid characters found in network name | a b");
    CHECK(msg(kAdd, R"({})") == "7 missing network name");
    CHECK(msg(kAdd, R"({"name":""})") == "7 missing network name");
    CHECK(msg(kAdd, "") == "6 error unmarshall network config: unexpected end of JSON input");
    CHECK(msg(kAdd, "[]") == "6 error unmarshall network config: json: cannot unmarshal array into Go value of type struct { Name string \"json:\\\"name\\\"\" }");
    CHECK(msg(kAdd, R"({"name":5})") == "6 error unmarshall network config: json: cannot unmarshal number into Go struct field .name of type string");
}

TEST_CASE("interface names follow the reference's rules", "[cni]") {
    auto with_if = [](std::string ifname) {
        Env e = kAdd;
        e[3] = "CNI_IFNAME=" + ifname;
        return msg(e);
    };
    CHECK(with_if("eth0") == "");
    CHECK(with_if("aaaaaaaaaaaaaaa") == "");  // 15 bytes
    CHECK(with_if("aaaaaaaaaaaaaaaa") == "4 interface name is too long | interface name should be less than 16 characters");
    CHECK(with_if("..") == "4 interface name is . or ..");
    CHECK(with_if("a:b") == "4 interface name contains / or : or whitespace characters");
    CHECK(with_if("a/b") == "4 interface name contains / or : or whitespace characters");
    CHECK(with_if("a\tb") == "4 interface name contains / or : or whitespace characters");
    CHECK(with_if("a\xc2\xa0") == "4 interface name contains / or : or whitespace characters");
    CHECK(with_if("\xc3\xa9th0") == "");
}

TEST_CASE("GC and STATUS need no container ID; VERSION reads no stdin", "[cni]") {
    CHECK(msg({"CNI_COMMAND=GC", "CNI_PATH=/x"}) == "");
    CHECK(msg({"CNI_COMMAND=STATUS", "CNI_PATH=/x"}, "garbage") == "6 error unmarshall network config: invalid character 'g' looking for beginning of value");
    auto v = read({"CNI_COMMAND=VERSION"}, "garbage");
    REQUIRE(v);
    CHECK(v->config.empty());
    CHECK(v->command == cni::Command::version);
}

TEST_CASE("unknown commands still need a valid config", "[cni]") {
    auto r = read({"CNI_COMMAND=FOO"});
    REQUIRE(r);
    CHECK(r->command == cni::Command::unknown);
    CHECK(msg({"CNI_COMMAND=FOO"}, "") == "6 error unmarshall network config: unexpected end of JSON input");
}

TEST_CASE("with_command replaces CNI_COMMAND in the inherited environment", "[cni]") {
    auto r = read(kAdd);
    REQUIRE(r);
    auto d = r->with_command(cni::Command::del);
    CHECK(d.getenv("CNI_COMMAND") == "DEL");
    CHECK(d.getenv("CNI_IFNAME") == "eth0");
    CHECK(std::count_if(d.environ.begin(), d.environ.end(), [](auto& s) { return s.starts_with("CNI_COMMAND="); }) == 1);
}
