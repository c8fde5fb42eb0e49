// SPDX-License-Identifier: Apache-2.0
// Go encoding/json compatibility of the JSON layer: errors, lookups, decoding, output format.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include "applets/tuning/backup.hpp"
#include "core/cni/json.hpp"
#include "small_stack.hpp"

namespace json = cni::json;

static std::string parse_error(std::string_view text) {
    auto d = json::parse(text);
    return d ? "" : d.error().msg;
}

TEST_CASE("syntax errors read like Go's", "[cni]") {
    CHECK(parse_error("") == "unexpected end of JSON input");
    CHECK(parse_error("{\"a\":") == "unexpected end of JSON input");
    CHECK(parse_error("{\"name\": x}") == "invalid character 'x' looking for beginning of value");
    CHECK(parse_error("{\"a\" 1}") == "invalid character '1' after object key");
    CHECK(parse_error("{\"a\":1 \"b\":2}") == "invalid character '\"' after object key:value pair");
    CHECK(parse_error("{} x") == "invalid character 'x' after top-level value");
    CHECK(parse_error("{a:1}") == "invalid character 'a' looking for beginning of object key string");
    CHECK(json::parse("  {\"a\":1}\n").has_value());
    CHECK(json::parse("x").error().code == cni::code::decoding_failure);
}

TEST_CASE("every syntax error reads like Go's, the offending byte quoted like strconv.Quote", "[cni]") {
    CHECK(parse_error("[1,]") == "invalid character ']' looking for beginning of value");
    CHECK(parse_error("[1 2]") == "invalid character '2' after array element");
    CHECK(parse_error("{\"a\":1,}") == "invalid character '}' looking for beginning of object key string");
    CHECK(parse_error("[tru]") == "invalid character ']' in literal true (expecting 'e')");
    CHECK(parse_error("nul") == "invalid character ' ' in literal null (expecting 'l')");
    CHECK(parse_error("[fals") == "invalid character ' ' in literal false (expecting 'e')");
    CHECK(parse_error("[-x]") == "invalid character 'x' in numeric literal");
    CHECK(parse_error("[1.]") == "invalid character ']' after decimal point in numeric literal");
    CHECK(parse_error("[1e+]") == "invalid character ']' in exponent of numeric literal");
    CHECK(parse_error("[01]") == "invalid character '1' after array element");
    CHECK(parse_error("[\"\\x\"]") == "invalid character 'x' in string escape code");
    CHECK(parse_error("[\"\\u12g4\"]") == "invalid character 'g' in \\u hexadecimal character escape");
    CHECK(parse_error("[\"\\u12") == "invalid character ' ' in \\u hexadecimal character escape");
    CHECK(parse_error("[\"a\tb\"]") == "invalid character '\\t' in string literal");
    CHECK(parse_error(std::string("[\"a\0\"]", 5)) == "invalid character '\\x00' in string literal");
    CHECK(parse_error("[\\]") == "invalid character '\\\\' looking for beginning of value");
    CHECK(parse_error("\xef\xbb\xbf{}") == "invalid character '\xc3\xaf' looking for beginning of value");
    CHECK(parse_error("[\x80]") == "invalid character '\\u0080' looking for beginning of value");
    CHECK(parse_error("[\x7f]") == "invalid character '\\x7f' looking for beginning of value");
    CHECK(parse_error("[\v]") == "invalid character '\\v' looking for beginning of value");
    CHECK(parse_error("{\"a\"}") == "invalid character '}' after object key");
    CHECK(parse_error("  ") == "unexpected end of JSON input");
    CHECK(json::parse(" 12 ").has_value());
}

TEST_CASE("valid JSON RapidJSON refuses is read the way Go reads it", "[cni]") {
    auto d = json::parse(R"({"lone":"\ud800x","low":"\udc00","pair":"\ud83d\ude00","high2":"\ud800\ud83d\ude00"})");
    REQUIRE(d);
    CHECK(std::string((*d)["lone"].GetString()) == "\xef\xbf\xbdx");
    CHECK(std::string((*d)["low"].GetString()) == "\xef\xbf\xbd");
    CHECK(std::string((*d)["pair"].GetString()) == "\xf0\x9f\x98\x80");
    CHECK(std::string((*d)["high2"].GetString()) == "\xef\xbf\xbd\xf0\x9f\x98\x80");
    // Beyond a double: accepted (Go skips it in an unknown key), read as the largest double.
    auto big = json::parse(R"({"x":[1e999,-2E+400,1e-999]})");
    REQUIRE(big);
    CHECK((*big)["x"][0].GetDouble() == std::numeric_limits<double>::max());
    CHECK((*big)["x"][1].GetDouble() == -std::numeric_limits<double>::max());
    CHECK((*big)["x"][2].GetDouble() == 0.0);
    // RapidJSON skips a BOM and stops at a NUL; Go refuses both.
    CHECK(parse_error(std::string("{}\0x", 4)) == "invalid character '\\x00' after top-level value");
}

TEST_CASE("parse_large: the same document and errors as parse, its strings in the buffer", "[cni]") {
    const std::string texts[] = {
        R"({"a": "x\ty\u00e9", "n": [1, -2, 3.5, 1e999, 18446744073709551615], "b": true, "z": null})",
        R"({"lone": "\ud800x", "k": "v"})",  // a surrogate escape: read as parse reads it
        "{\"bad\": \"\xff\"}",               // invalid UTF-8: U+FFFD, as parse reads it
        "tQ", "{\"a\": 1,}", "", "\xef\xbb\xbf{}", std::string("{}\0x", 4),
    };
    for (const auto& text : texts) {
        INFO(text);
        std::string buffer;
        auto large = json::parse_large(text, buffer);
        auto plain = json::parse(text);
        REQUIRE(large.has_value() == plain.has_value());
        if (!plain) {
            CHECK(large.error().msg == plain.error().msg);
            continue;
        }
        CHECK(json::write(*large, json::Style::compact, false) == json::write(*plain, json::Style::compact, false));
    }
    std::string buffer;
    auto d = json::parse_large(R"({"ips": ["10.0.0.1", "10.0.0.2"]})", buffer);
    REQUIRE(d);
    const char* ip = (*d)["ips"][1].GetString();
    CHECK(ip >= buffer.data());  // unescaped in place, not copied into the document
    CHECK(ip < buffer.data() + buffer.size());
    CHECK(std::string(ip) == "10.0.0.2");
}

TEST_CASE("what the fuzzers found: RapidJSON's stray BOM bytes, and its conversion of some numbers", "[cni]") {
    // RapidJSON drops each BOM byte on its own at the start ("\xBF2" read as 2); Go refuses them.
    for (const char* text : {"\xBF" "2", "\xBB" "[]", "\xEF" "{}", "\xEF\xBB" "1"}) {
        INFO(text);
        CHECK_FALSE(json::parse(text));
    }
    // RapidJSON's full-precision conversion read 0e90 as -6.6e268 and 30 zero decimals as
    // 9.6e-240; Go reads zero. Plain 0, 0.0 and -0 stay as they were.
    auto z = json::parse(R"({"a":[0e90,-0.000E+400,0e-5,0.0e1,"0e90",0.000000000000000000000000000000,-0.000000000000000000000000000000000000000],"b":0E22})");
    REQUIRE(z);
    const auto& a = (*z)["a"];
    CHECK(a[0].GetDouble() == 0.0);
    CHECK(!std::signbit(a[0].GetDouble()));
    CHECK(a[1].GetDouble() == 0.0);
    CHECK(std::signbit(a[1].GetDouble()));
    CHECK(a[2].GetDouble() == 0.0);
    CHECK(a[3].GetDouble() == 0.0);
    CHECK(std::string(a[4].GetString()) == "0e90");  // inside a string nothing changes
    CHECK(a[5].GetDouble() == 0.0);  // 30 zero decimals were 9.6e-240
    CHECK(a[6].GetDouble() == 0.0);
    CHECK(std::signbit(a[6].GetDouble()));
    CHECK((*z)["b"].GetDouble() == 0.0);
    CHECK(json::parse("[1.5e300, 10e5]"));
    // A long significand with an exponent indexed past RapidJSON's table of powers.
    auto long_one = json::parse("[" + std::string(240, '1') + "e-100, 0.1, 1e23, 123456789012345678901234567890]");
    REQUIRE(long_one);
    CHECK((*long_one)[0].GetDouble() == 1.1111111111111111e139);
    CHECK((*long_one)[1].GetDouble() == 0.1);
    CHECK((*long_one)[2].GetDouble() == 1e23);
    CHECK((*long_one)[3].GetDouble() == 1.2345678901234568e29);
    auto plain = json::parse("[0, 0.0, -0, -0.0, 0.5]");
    REQUIRE(plain);
    CHECK((*plain)[0].IsInt());
    CHECK((*plain)[1].IsDouble());
    CHECK((*plain)[2].IsInt());
    CHECK((*plain)[4].GetDouble() == 0.5);
    CHECK((*json::parse("[10e5]"))[0].GetDouble() == 1e6);
    // A key with a byte that starts no UTF-8 sequence sorts as Go sorts it: after that byte
    // became U+FFFD (it sorted by the raw byte, and a second write came out in another order).
    auto keys = json::parse("{\"ip\xADm\":1,\"ip\\udc00Masq\":2}");
    REQUIRE(keys);
    CHECK(json::write(*keys, json::Style::compact, true) == "{\"ip\xEF\xBF\xBDMasq\":2,\"ip\xEF\xBF\xBDm\":1}");
    CHECK(json::find(*keys, "ip\xEF\xBF\xBDm") != nullptr);
    // What is not a number stays an error.
    for (const char* bad : {"[0e]", "[00e5]", "[0.e5]", "[-e5]", "[0e5e5]", "[0e+]", "0e70e7", "[0.00-1]"}) {
        INFO(bad);
        CHECK_FALSE(json::parse(bad));
    }
}

TEST_CASE("output is valid UTF-8: invalid bytes and lone surrogates become U+FFFD, as Go decodes them", "[cni]") {
    auto d = json::parse("[\"a\x80" "b\", \"\\udc00\", \"\xed\xa0\x80\", \"\xf0\x9f\x98\x80\xc3\xa9\", \"\xe2\x82\"]");
    REQUIRE(d);
    CHECK(json::write(*d, json::Style::compact, false) ==
          "[\"a\xef\xbf\xbd" "b\",\"\xef\xbf\xbd\",\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\",\"\xf0\x9f\x98\x80\xc3\xa9\",\"\xef\xbf\xbd\xef\xbf\xbd\"]");
}

TEST_CASE("nesting deeper than Go's 10,000 levels is a syntax error, not a stack overflow", "[cni]") {
    auto nested = [](std::size_t levels, std::string_view inside = "") {
        return std::string(levels, '[') + std::string(inside) + std::string(levels, ']');
    };
    CHECK(json::parse(nested(10000)).has_value());
    CHECK(parse_error(nested(10001)) == "invalid character '[' exceeded max depth");
    CHECK(parse_error("{\"a\":" + std::string(5'000'000, '[')) == "invalid character '[' exceeded max depth");
    CHECK(json::parse(nested(10001)).error().code == cni::code::decoding_failure);
    // Brackets inside strings do not count; an earlier syntax error wins.
    CHECK(json::parse(nested(9999, "\"[[[\\\"[[[\"")).has_value());
    CHECK(parse_error("[x" + nested(20000)) == "invalid character 'x' looking for beginning of value");
}

TEST_CASE("a document nested 10,000 deep is parsed, written, copied and round-tripped without recursion", "[cni]") {
    std::string text, inner = "1e2", written_inner = "100";
    for (int i = 0; i < 5000; ++i) text += R"({"k":[)";
    std::string close;
    for (int i = 0; i < 5000; ++i) close += "]}";
    std::string expected = text + written_inner + close;
    text += inner + close;
    std::string compact, indented, copied, round_trip;
    on_small_stack([&] {
        auto d = json::parse(text);
        if (!d) return;
        compact = json::write(*d, json::Style::compact, true);
        indented = json::write(*d, json::Style::indented, false);
        json::Document other;
        copied = json::write(json::copy(*d, other.GetAllocator()), json::Style::compact, false);
        round_trip = json::write(json::go_interface_round_trip(*d, other.GetAllocator()), json::Style::compact, false);
    });
    CHECK(compact == expected);
    CHECK(copied == expected);
    CHECK(round_trip == expected);
    CHECK(std::count(indented.begin(), indented.end(), '\n') == 2 * 10000);
    CHECK(indented.ends_with("\n    ]\n}"));
    CHECK(indented.find("\n" + std::string(4 * 9999, ' ') + "]\n") != std::string::npos);
}

TEST_CASE("keys match case-insensitively and the last duplicate wins", "[cni]") {
    auto d = json::parse(R"({"Bridge":"a","MTU":1,"bridge":"b"})");
    REQUIRE(d);
    std::string bridge;
    std::int64_t mtu = 0;
    json::Where w{"NetConf", ""};
    REQUIRE(json::field(*d, "bridge", bridge, w));
    REQUIRE(json::field(*d, "mtu", mtu, w));
    CHECK(bridge == "b");
    CHECK(mtu == 1);
    CHECK(json::find(*d, "absent") == nullptr);
    CHECK(json::find_exact(*d, "mtu") == nullptr);
}

TEST_CASE("type mismatches name the Go struct field and type", "[cni]") {
    auto d = json::parse(R"({"mtu":"1500","ipam":{"dataDir":5},"n":1.5,"u":-1,"ok":null})");
    REQUIRE(d);
    json::Where w{"NetConf", ""};
    std::int64_t mtu = 7;
    auto st = json::field(*d, "mtu", mtu, w);
    REQUIRE_FALSE(st);
    CHECK(st.error().msg == "json: cannot unmarshal string into Go struct field NetConf.mtu of type int");
    std::string dir;
    st = json::field(*json::find(*d, "ipam"), "dataDir", dir, w.at("ipam").in("IPAMConfig"));
    REQUIRE_FALSE(st);
    CHECK(st.error().msg == "json: cannot unmarshal number into Go struct field IPAMConfig.ipam.dataDir of type string");
    std::int64_t n = 0;
    st = json::field(*d, "n", n, w);
    REQUIRE_FALSE(st);
    CHECK(st.error().msg == "json: cannot unmarshal number 1.5 into Go struct field NetConf.n of type int");
    std::uint32_t u = 0;
    st = json::field(*d, "u", u, w);
    REQUIRE_FALSE(st);
    CHECK(st.error().msg == "json: cannot unmarshal number -1 into Go struct field NetConf.u of type uint32");
    std::int64_t keep = 42;
    REQUIRE(json::field(*d, "ok", keep, w));
    CHECK(keep == 42);  // null leaves the default
}

TEST_CASE("a Go int is 64 bits wide: read to int64's ends, refused past them", "[cni]") {
    auto d = json::parse(R"({"a":2147483648,"b":-9223372036854775808,"c":9223372036854775807,"d":9223372036854775808})");
    REQUIRE(d);
    json::Where w{"NetConf", ""};
    std::int64_t v = 0;
    REQUIRE(json::field(*d, "a", v, w));
    CHECK(v == 2147483648);
    REQUIRE(json::field(*d, "b", v, w));
    CHECK(v == std::numeric_limits<std::int64_t>::min());
    REQUIRE(json::field(*d, "c", v, w));
    CHECK(v == std::numeric_limits<std::int64_t>::max());
    auto st = json::field(*d, "d", v, w);
    REQUIRE_FALSE(st);
    CHECK(st.error().msg == "json: cannot unmarshal number 9223372036854775808 into Go struct field NetConf.d of type int");
}

TEST_CASE("an anonymous struct field: an object or nothing, and its fields name no struct", "[cni]") {
    auto d = json::parse(R"({"a":{"ips":5},"b":[1],"c":null})");
    REQUIRE(d);
    json::Where w{"Net", ""};
    constexpr std::string_view go_type = R"(struct { IPs []string "json:\"ips,omitempty\"" })";
    auto a = json::anonymous_struct(*d, "a", w, go_type);
    REQUIRE(a);
    REQUIRE(a->object != nullptr);
    std::vector<std::string> ips;
    auto st = json::field(*a->object, "ips", ips, a->inner);
    REQUIRE_FALSE(st);
    CHECK(st.error().msg == "json: cannot unmarshal number into Go struct field .a.ips of type []string");
    auto b = json::anonymous_struct(*d, "b", w, go_type);
    REQUIRE_FALSE(b);
    CHECK(b.error().msg == "json: cannot unmarshal array into Go struct field Net.b of type " + std::string(go_type));
    CHECK(json::anonymous_struct(*d, "c", w, go_type)->object == nullptr);
    CHECK(json::anonymous_struct(*d, "absent", w, go_type)->object == nullptr);
}

TEST_CASE("a struct member is its object, nothing when absent or null, and Go's error otherwise", "[cni]") {
    auto d = json::parse(R"({"args":{"cni":{"mac":"x"},"nul":null,"num":1}})");
    REQUIRE(d);
    json::Where w{"", "args"};  // what anonymous_struct gives for .args
    const json::Value* args = json::find(*d, "args");
    auto cni = json::struct_member(args, "cni", w, "main.BridgeArgs");
    REQUIRE(cni);
    REQUIRE(*cni != nullptr);
    CHECK((*cni)->HasMember("mac"));
    CHECK(*json::struct_member(args, "nul", w, "main.BridgeArgs") == nullptr);
    CHECK(*json::struct_member(args, "absent", w, "main.BridgeArgs") == nullptr);
    CHECK(*json::struct_member(nullptr, "cni", w, "main.BridgeArgs") == nullptr);
    auto num = json::struct_member(args, "num", w, "main.BridgeArgs");
    REQUIRE_FALSE(num);
    CHECK(num.error().msg == "json: cannot unmarshal number into Go struct field .args.num of type main.BridgeArgs");
}

struct Named {};
template <>
struct json::GoName<Named> {
    static constexpr std::string_view value = "pkg.Named";
};
template <>
struct json::GoName<std::vector<Named>> {
    static constexpr std::string_view value = "pkg.NamedSet";
};

TEST_CASE("a type of another layer names its Go type, and a named slice of it its own", "[cni]") {
    CHECK(json::go_type_name<Named>() == "pkg.Named");
    CHECK(json::go_type_name<std::vector<Named>>() == "pkg.NamedSet");
    CHECK(json::go_type_name<std::string>() == "string");
    auto d = json::parse(R"({"strs":5})");
    REQUIRE(d);
    json::Where w{"IPAMConfig", ""};
    std::vector<std::string> strs;
    CHECK(json::field(*d, "strs", strs, w).error().msg ==
          "json: cannot unmarshal number into Go struct field IPAMConfig.strs of type []string");
}

TEST_CASE("IP and CIDR fields use net.ParseIP and ParseCIDR errors", "[cni]") {
    auto d = json::parse(R"({"gw":"10.0.0.300","subnet":"10.0.0.0","empty":""})");
    REQUIRE(d);
    json::Where w{"Range", ""};
    cni::net::IpAddr ip;
    auto st = json::field(*d, "gw", ip, w);
    REQUIRE_FALSE(st);
    CHECK(st.error().msg == "invalid IP address: 10.0.0.300");
    cni::net::IpNet net;
    st = json::field(*d, "subnet", net, w);
    REQUIRE_FALSE(st);
    CHECK(st.error().msg == "invalid CIDR address: 10.0.0.0");
    std::optional<cni::net::IpAddr> opt;
    REQUIRE(json::field(*d, "empty", opt, w));
    CHECK_FALSE(opt);
}

TEST_CASE("null leaves a field alone, but is a bad CIDR for a types.IPNet", "[cni]") {
    auto d = json::parse(R"({"gw":null,"dst":null,"subnet":null,"name":null})");
    REQUIRE(d);
    json::Where w{"Route", ""};
    std::optional<cni::net::IpAddr> gw;
    std::string name = "kept";
    REQUIRE(json::field(*d, "gw", gw, w));
    REQUIRE(json::field(*d, "name", name, w));
    CHECK((!gw && name == "kept"));
    cni::net::IpNet dst;
    std::optional<cni::net::IpNet> subnet;
    CHECK(json::field(*d, "dst", dst, w).error().msg == "invalid CIDR address: ");
    CHECK(json::field(*d, "subnet", subnet, w).error().msg == "invalid CIDR address: ");
}

TEST_CASE("output is Go MarshalIndent: 4 spaces, Go escaping, optional sorted keys", "[cni]") {
    auto d = json::parse(R"({"z":1,"a":["<x>&",{}],"m":{"b":[],"a":"\u2028"}})");
    REQUIRE(d);
    CHECK(json::write(*d, json::Style::indented, false) ==
          "{\n    \"z\": 1,\n    \"a\": [\n        \"\\u003cx\\u003e\\u0026\",\n        {}\n    ],\n"
          "    \"m\": {\n        \"b\": [],\n        \"a\": \"\\u2028\"\n    }\n}");
    CHECK(json::write(*d, json::Style::compact, true) == R"({"a":["\u003cx\u003e\u0026",{}],"m":{"a":"\u2028","b":[]},"z":1})");
    auto ctl = json::parse("{\"s\":\"a\\u0001\\t\\\"\\\\\"}");
    REQUIRE(ctl);
    CHECK(json::write(*ctl, json::Style::compact, false) == R"({"s":"a\u0001\t\"\\"})");
}

TEST_CASE("a float64 prints as encoding/json prints it: shortest digits, fixed-point between 1e-6 and 1e21", "[cni]") {
    CHECK(json::go_float(0) == "0");
    CHECK(json::go_float(-0.0) == "-0");
    CHECK(json::go_float(100) == "100");
    CHECK(json::go_float(0.1) == "0.1");
    CHECK(json::go_float(123456.7) == "123456.7");           // not %g's 123457
    CHECK(json::go_float(9223372036854775807.0) == "9223372036854776000");  // not the exact ...808
    CHECK(json::go_float(1e20) == "100000000000000000000");
    CHECK(json::go_float(1e21) == "1e+21");
    CHECK(json::go_float(1e-6) == "0.000001");
    CHECK(json::go_float(1.5e-7) == "1.5e-7");               // Go trims "e-07"
    CHECK(json::go_float(-2.5e-10) == "-2.5e-10");
    CHECK(json::go_float(5e-324) == "5e-324");
    CHECK(json::go_float(1e300) == "1e+300");
    CHECK(json::go_float(std::numeric_limits<double>::infinity()) == "inf");  // no exception
}

TEST_CASE("the interface{} round trip: numbers through float64, keys sorted, a repeated key's last value", "[cni]") {
    auto d = json::parse(R"({"z":[1e2,-0.0,1.5,9223372036854775807,18446744073709551615],"B":{"k":1,"k":2},"a":"s"})");
    REQUIRE(d);
    json::Document out;
    auto v = json::go_interface_round_trip(*d, out.GetAllocator());
    CHECK(json::write(v, json::Style::compact, false) ==
          R"({"B":{"k":2},"a":"s","z":[100,0,1.5,9223372036854776000,18446744073709552000]})");
    CHECK(v["z"][0].IsInt64());
    std::int64_t n = 0;
    auto big = json::parse(R"({"n":9223372036854775807})");
    auto rt = json::go_interface_round_trip(*big, out.GetAllocator());
    auto st = json::field(rt, "n", n, json::Where{"Result", ""});
    REQUIRE_FALSE(st);
    CHECK(st.error().msg == "json: cannot unmarshal number 9223372036854776000 into Go struct field Result.n of type int");
}

TEST_CASE("json::quote writes strings as Go's encoding/json does, and a tuning backup holding any reads back", "[cni][tuning]") {
    CHECK(cni::json::quote("a\x7f<b>&\x01\"\\") == "\"a\x7f\\u003cb\\u003e\\u0026\\u0001\\\"\\\\\"");
    CHECK(cni::json::quote("\xff") == "\"\xEF\xBF\xBD\"");
    cni::tuning::Backup b;
    b.sysctl["/proc/sys/net/\x7f\a\x1b"] = "v\x7f";
    b.network = "n<\x01>";
    b.mtu = 1500;
    auto back = cni::tuning::decode_backup(cni::tuning::encode_backup(b));
    REQUIRE(back);
    CHECK(*back == b);
}
