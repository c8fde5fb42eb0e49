// SPDX-License-Identifier: Apache-2.0
// The D-Bus wire format and bus addresses: a method call as dbus-daemon expects it (checked
// byte by byte against the specification's layout), replies and errors in both byte orders,
// truncated or oversized input refused, and the unix socket of an address.
#include <catch2/catch.hpp>

#include "applets/firewall/dbus/bus.hpp"
#include "applets/firewall/dbus/message.hpp"

using namespace cni::firewall::dbus;

namespace {

// A reply built by hand: fixed header, the given header fields (already laid out), the body.
std::string message(char order, Type type, std::string fields, std::string body) {
    auto u32 = [order](std::uint32_t v) {
        std::string s(4, '\0');
        for (int i = 0; i < 4; ++i) s[std::size_t(order == 'l' ? i : 3 - i)] = char((v >> (8 * i)) & 0xff);
        return s;
    };
    std::string m{order, char(type), '\0', '\1'};
    m += u32(std::uint32_t(body.size())) + u32(7) + u32(std::uint32_t(fields.size())) + fields;
    while (m.size() % 8) m.push_back('\0');
    return m + body;
}

std::string le32(std::uint32_t v) { return std::string{char(v & 0xff), char((v >> 8) & 0xff), char((v >> 16) & 0xff), char(v >> 24)}; }
std::string be32(std::uint32_t v) { return std::string{char(v >> 24), char((v >> 16) & 0xff), char((v >> 8) & 0xff), char(v & 0xff)}; }

}  // namespace

TEST_CASE("a method call is laid out as the D-Bus specification says", "[firewall]") {
    auto m = encode({"org.example.Svc", "/o", "org.example.I", "Do", {"ab"}}, 5);
    // fixed header: little-endian, METHOD_CALL, no flags, version 1, body 7 bytes, serial 5
    CHECK(m.substr(0, 12) == std::string("l\1\0\1", 4) + le32(7) + le32(5));
    // field PATH (1) 'o' "/o"
    CHECK(m.substr(16, 12) == std::string("\1\1o\0", 4) + le32(2) + std::string("/o\0\0", 4));
    CHECK(m.size() % 8 == 7);  // the header is padded to 8, then the 7-byte body
    CHECK(m.substr(m.size() - 7) == le32(2) + std::string("ab\0", 3));
    auto back = decode(m);
    REQUIRE(back);
    CHECK(back->type == Type::method_call);
    CHECK(back->serial == 5);
    CHECK(back->signature == "s");
    REQUIRE(back->body.size() == 1);
    CHECK(std::get<std::string>(back->body[0]) == "ab");
    CHECK(*message_size(m.substr(0, 16)) == m.size());
}

TEST_CASE("replies and errors are read in either byte order", "[firewall]") {
    for (char order : {'l', 'B'}) {
        auto n = [order](std::uint32_t v) { return order == 'l' ? le32(v) : be32(v); };
        // REPLY_SERIAL (5) 'u' 3, then SIGNATURE (8) 'g' "bs" (8-aligned)
        std::string fields = std::string("\5\1u\0", 4) + n(3) + std::string("\x08\1g\0", 4) + std::string("\2bs\0", 4);
        std::string body = n(1) + n(3) + std::string("yes\0", 4);
        auto m = decode(message(order, Type::method_return, fields, body));
        REQUIRE(m);
        CHECK(m->reply_serial == 3u);
        REQUIRE(m->body.size() == 2);
        CHECK(std::get<bool>(m->body[0]));
        CHECK(std::get<std::string>(m->body[1]) == "yes");
    }
    std::string name = "org.x.Err";
    std::string fields = std::string("\4\1s\0", 4) + le32(std::uint32_t(name.size())) + name + std::string(7, '\0')  /* NUL, then padding to 8 */ +
                         std::string("\5\1u\0", 4) + le32(9) + std::string("\x08\1g\0", 4) + std::string("\1s\0", 3);
    auto e = decode(message('l', Type::error, fields, le32(4) + std::string("oops\0", 5)));
    REQUIRE(e);
    CHECK(e->type == Type::error);
    CHECK(e->error_name == "org.x.Err");
    CHECK(std::get<std::string>(e->body[0]) == "oops");
}

TEST_CASE("malformed, truncated and oversized messages are refused", "[firewall]") {
    auto m = encode({"d", "/", "i", "m", {"x"}}, 1);
    CHECK(!decode(m.substr(0, m.size() - 1)));
    CHECK(!decode("hello, this is not D-Bus"));
    CHECK(!message_size(std::string("l\1\0\1", 4) + le32(1u << 30) + le32(1) + le32(0)));
    std::string bad_string = m;
    bad_string[bad_string.size() - 1] = 'z';  // the body string loses its NUL
    CHECK(!decode(bad_string));
}

TEST_CASE("a bus address names its unix socket", "[firewall]") {
    CHECK(*socket_of("unix:path=/run/dbus/system_bus_socket") == "/run/dbus/system_bus_socket");
    CHECK(*socket_of("unix:abstract=/tmp/dbus-x,guid=1234") == "@/tmp/dbus-x");
    CHECK(*socket_of("tcp:host=h,port=1;unix:path=/tmp/a%20b") == "/tmp/a b");
    auto none = socket_of("tcp:host=localhost,port=4");
    REQUIRE(!none);
    CHECK(none.error().msg == "D-Bus address \"tcp:host=localhost,port=4\" names no unix socket (path= or abstract=)");
}
