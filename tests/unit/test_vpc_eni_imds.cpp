// SPDX-License-Identifier: Apache-2.0
// Unit tests of node-setup --imds's pieces that need no namespace: the metadata URL (an address
// literal over http, nothing else), the HTTP client against a one-answer server on 127.0.0.1
// (a length, chunks, the close, a garbled answer, silence past the timeout; which failures may
// pass and are tried again), each path's answer parsed strictly, and the node file
// it writes, which reads back as the same node, keeping the settings of a partial file.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "applets/vpc_eni/imds.hpp"
#include "core/http/connection.hpp"
#include "loopback_listener.hpp"
#include "applets/vpc_eni/node_file.hpp"
#include "temp_dir.hpp"

using namespace cni;
using namespace std::chrono_literals;

TEST_CASE("the metadata URL is an address literal over http", "[vpc-eni]") {
    auto e = vpc_eni::parse_imds_url("http://169.254.169.254/");
    REQUIRE(e);
    CHECK((e->address == "169.254.169.254" && e->port == 80 && e->url == "http://169.254.169.254"));
    auto v6 = vpc_eni::parse_imds_url("http://[fd00:ec2::254]:8080");
    REQUIRE(v6);
    CHECK((v6->address == "fd00:ec2::254" && v6->port == 8080 && v6->host == "[fd00:ec2::254]:8080"));
    for (auto [url, why] : {std::pair{"https://169.254.169.254", "not an http:// URL"},
                            {"http://metadata.internal", "no name is resolved"},
                            {"http://169.254.169.254/latest", "a path or more"},
                            {"http://169.254.169.254:0", "not within 1..65535"},
                            {"http://169.254.169.254:", "an empty port"},
                            {"http://[fd00::1", "no ]"},
                            {"http://user@169.254.169.254", "a path or more"},
                            {"http://[169.254.169.254]", "not an IPv6 address"}}) {
        auto r = vpc_eni::parse_imds_url(url);
        REQUIRE_FALSE(r);
        INFO(r.error().msg);
        CHECK(r.error().msg.find(why) != std::string::npos);
    }
}

namespace {

// A server on 127.0.0.1 that reads one request and answers `answer` (then closes, unless
// `hold`), on a thread the destructor joins.
struct OneAnswer {
    int fd = -1;
    std::uint16_t port = 0;
    std::thread t;
    OneAnswer(std::string answer, bool hold = false) {
        fd = listen_loopback(port);
        t = std::thread([this, answer, hold] {
            int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
            char buf[4096];
            [[maybe_unused]] auto n = ::read(c, buf, sizeof buf);
            [[maybe_unused]] auto w = ::write(c, answer.data(), answer.size());
            if (hold) std::this_thread::sleep_for(400ms);
            ::close(c);
        });
    }
    ~OneAnswer() {
        t.join();
        ::close(fd);
    }
    Result<http::Response> get() const {
        auto e = vpc_eni::parse_imds_url("http://127.0.0.1:" + std::to_string(port));
        return http::request(*e, "GET", "/x", {}, 200ms);
    }
};

}  // namespace

TEST_CASE("the metadata client reads an answer by length, chunks or the close, and refuses the rest", "[vpc-eni]") {
    {
        OneAnswer s("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", true);  // answered before the close
        auto r = s.get();
        REQUIRE(r);
        CHECK((r->status == 200 && r->body == "hello"));
    }
    {
        OneAnswer s("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n");
        auto r = s.get();
        REQUIRE(r);
        CHECK(r->body == "abcde");
    }
    {
        OneAnswer s("HTTP/1.0 404 Not Found\r\n\r\nnone");
        auto r = s.get();
        REQUIRE(r);
        CHECK((r->status == 404 && r->body == "none"));
    }
    for (auto [answer, why] : {std::pair{"SSH-2.0-OpenSSH\r\n\r\n", "not an HTTP/1.x answer"},
                               {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "a garbled chunked answer"},
                               {"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort", "closed before the whole answer"},
                               {"HTTP/1.1 200 OK\r\nContent-Length: 5", "closed before a whole HTTP answer"}}) {
        OneAnswer s(answer);
        auto r = s.get();
        REQUIRE_FALSE(r);
        INFO(r.error().msg);
        CHECK(r.error().msg.find(why) != std::string::npos);
        const bool cut_short = std::string_view(why).starts_with("closed");  // may pass: tried again
        CHECK(r.error().code == (cut_short ? code::try_again_later : code::decoding_failure));
    }
    OneAnswer silent("", true);
    auto r = silent.get();
    REQUIRE_FALSE(r);
    CHECK(r.error().msg == "GET http://127.0.0.1:" + std::to_string(silent.port) + "/x: no answer within 200 ms");
    CHECK(r.error().code == code::try_again_later);
}

TEST_CASE("the node file node-setup --imds writes reads back as the same node, with root's settings kept", "[vpc-eni]") {
    TempDir d;
    d.write("node.json", R"({"mtu": 1500, "stateDir": "/run/x", "firewallBackend": "nftables"})");
    auto settings = vpc_eni::load_node_settings(d / "node.json");
    REQUIRE(settings);
    REQUIRE(*settings);
    vpc_eni::NodeFile n = **settings;
    CHECK((n.mtu == 1500 && n.state_dir == "/run/x" && n.ipam_dir == "/var/lib/cni/vpc-eni"));
    CHECK_FALSE(vpc_eni::validate_node_file(n));  // no ENIs yet
    n.primary_interface = "eth0";
    n.vpc_cidrs = {*net::IpNet::parse("10.0.0.0/16")};
    vpc_eni::Eni e0{"eth0", 0, net::IpNet::parse("10.0.1.0/24"), net::IpAddr::parse("10.0.1.10"), {*net::IpAddr::parse("10.0.1.20")}, {}};
    vpc_eni::Eni e1{"eth1", 1, net::IpNet::parse("10.0.2.0/24"), net::IpAddr::parse("10.0.2.10"), {},
                    {*net::IpNet::parse("10.0.2.48/28")}};
    n.enis = {e0, e1};
    REQUIRE(vpc_eni::validate_node_file(n));
    d.write("out.json", vpc_eni::encode_node_file(n));
    auto back = vpc_eni::load_node_file(d / "out.json");
    INFO((back ? "" : back.error().msg));
    REQUIRE(back);
    CHECK(vpc_eni::encode_node_file(*back) == d.read("out.json"));
    CHECK((back->firewall_backend == "nftables" && back->enis[1].secondary_ips.empty() && back->primary().interface == "eth0"));
    CHECK((back->enis[0].ipv4_prefixes.empty() && back->enis[1].ipv4_prefixes == e1.ipv4_prefixes));
    auto none = vpc_eni::load_node_settings(d / "missing.json");
    REQUIRE(none);
    CHECK_FALSE(*none);
    d.write("bad.json", "{\"mtu\": ");
    auto bad = vpc_eni::load_node_settings(d / "bad.json");
    REQUIRE_FALSE(bad);
    CHECK(bad.error().msg.find(d / "bad.json") != std::string::npos);
}

TEST_CASE("the metadata service's answers are parsed strictly", "[vpc-eni]") {
    CHECK(vpc_eni::metadata_mac("0E:49:61:0f:c3:11\n") == "0e:49:61:0f:c3:11");
    CHECK_FALSE(vpc_eni::metadata_mac("0e49.610f.c311"));
    CHECK_FALSE(vpc_eni::metadata_mac("0e:49:61:0f:c3:11:00"));
    auto macs = vpc_eni::metadata_macs("0e:49:61:0f:c3:11/\r\n0e:49:61:0f:c3:12/");
    REQUIRE(macs);
    CHECK(*macs == std::vector<std::string>{"0e:49:61:0f:c3:11", "0e:49:61:0f:c3:12"});
    CHECK_FALSE(vpc_eni::metadata_macs(""));
    CHECK_FALSE(vpc_eni::metadata_macs("0e:49:61:0f:c3:11/\n../../x/"));
    std::string many;
    for (int i = 0; i < 252; ++i) many += "0e:49:61:0f:c3:11/\n";
    CHECK_FALSE(vpc_eni::metadata_macs(many));
    CHECK(vpc_eni::metadata_device_number("2") == 2);
    CHECK_FALSE(vpc_eni::metadata_device_number("-1"));
    CHECK_FALSE(vpc_eni::metadata_device_number("1000"));
    CHECK(vpc_eni::metadata_eni_id("eni-0b1c2d3e4f\n") == "eni-0b1c2d3e4f");
    CHECK_FALSE(vpc_eni::metadata_eni_id("eni-0B1"));
    CHECK_FALSE(vpc_eni::metadata_eni_id("i-0b1"));
    auto ips = vpc_eni::metadata_addresses("10.0.2.10\n10.0.2.20");
    REQUIRE(ips);
    CHECK((ips->size() == 2 && (*ips)[1].str() == "10.0.2.20"));
    CHECK_FALSE(vpc_eni::metadata_addresses("10.0.2.10\nfd00::1"));
    CHECK_FALSE(vpc_eni::metadata_addresses("10.0.2.10\n\n"));
    CHECK(vpc_eni::metadata_cidr("10.0.2.77/24")->str() == "10.0.2.0/24");
    CHECK_FALSE(vpc_eni::metadata_cidr("10.0.2.0/24\n10.0.3.0/24"));
    CHECK(vpc_eni::metadata_cidrs("10.0.0.0/16\n10.1.0.0/16")->size() == 2);
    CHECK_FALSE(vpc_eni::metadata_cidrs("fd00::/8"));
    auto prefixes = vpc_eni::metadata_prefixes("10.0.2.48/28\r\n10.0.2.64/28\n");
    REQUIRE(prefixes);
    CHECK((prefixes->size() == 2 && (*prefixes)[1].str() == "10.0.2.64/28"));
    CHECK(vpc_eni::metadata_prefixes("")->empty());  // none (a missing path reads as none too)
    CHECK_FALSE(vpc_eni::metadata_prefixes("10.0.2.49/28"));  // never masked into another prefix
    CHECK_FALSE(vpc_eni::metadata_prefixes("10.0.2.48/28\nfd00::/80"));
    CHECK_FALSE(vpc_eni::metadata_prefixes("10.0.2.48/28\n\n"));
}
