// SPDX-License-Identifier: Apache-2.0
// Unit tests of core/http (docs/design.md, The HTTP client): URLs with names and https://
// where the caller allows them, answers framed by length, chunks (with a trailer) or the close,
// and a kept-alive Connection against a server on 127.0.0.1 that answers several requests on
// one connection, then closes it: the next request opens a new one.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "core/http/connection.hpp"
#include "loopback_listener.hpp"

using namespace cni;
using namespace std::chrono_literals;

TEST_CASE("an etcd endpoint may be https:// and a host name, where the caller allows it", "[http]") {
    const http::UrlRules etcd{.what = "etcd endpoint", .https = true, .names = true};
    auto e = http::parse_url("https://etcd-0.example:2379", etcd);
    REQUIRE(e);
    CHECK((e->tls && !e->literal && e->address == "etcd-0.example" && e->port == 2379 && e->host == "etcd-0.example:2379"));
    auto d = http::parse_url("https://[fd00::1]/", etcd);
    REQUIRE(d);
    CHECK((d->tls && d->literal && d->address == "fd00::1" && d->port == 443 && d->url == "https://[fd00::1]"));
    for (auto [url, why] : {std::pair{"ftp://x", "not an http:// or https:// URL"},
                            {"https://-bad-.example", "not a host name or address"},
                            {"https://a..b", "not a host name or address"},
                            {"http://x:70000", "not within 1..65535"},
                            {"http://x/v3", "a path or more"}}) {
        auto r = http::parse_url(url, etcd);
        REQUIRE_FALSE(r);
        INFO(r.error().msg);
        CHECK(r.error().msg.find(why) != std::string::npos);
        CHECK(r.error().msg.starts_with("etcd endpoint \""));
    }
    auto plain = http::parse_url("https://10.0.0.1", {.what = "metadata URL"});
    REQUIRE_FALSE(plain);
    CHECK(plain.error().msg.find("not an http:// URL") != std::string::npos);
}

TEST_CASE("an answer ends at its length, its last chunk and trailer, or the close", "[http]") {
    using S = http::Framing::State;
    auto f = http::frame_answer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nabNEXT");
    CHECK((f.state == S::whole && f.length == 40 && f.keep_alive));
    CHECK(http::frame_answer("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab").state == S::more);
    const std::string chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n2\r\nab\r\n0\r\nX-T: 1\r\n\r\n";
    f = http::frame_answer(chunked + "NEXT");
    CHECK((f.state == S::whole && f.length == chunked.size() && !f.keep_alive));
    CHECK(http::frame_answer(chunked.substr(0, chunked.size() - 2)).state == S::more);
    CHECK(http::frame_answer("HTTP/1.0 200 OK\r\n\r\nbody").state == S::until_close);
    CHECK(http::frame_answer("HTTP/1.1 204 No Content\r\n\r\n").state == S::whole);
    CHECK(http::frame_answer("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n").state == S::bad);
    auto r = http::parse_answer(chunked, "GET x");
    REQUIRE(r);
    CHECK(r->body == "ab");
    auto big = http::parse_answer("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world", "GET x", 10);
    REQUIRE_FALSE(big);
    CHECK(big.error().code == code::decoding_failure);
}

namespace {

// A server on 127.0.0.1 that answers `answers` requests on its first connection (Content-Length
// framing, each body the request's path), closes it, then answers one request per connection.
struct KeepAliveServer {
    int fd = -1;
    std::uint16_t port = 0;
    std::thread t;
    explicit KeepAliveServer(int answers) {
        fd = listen_loopback(port);
        t = std::thread([this, answers] {
            for (int conn = 0; conn < 2; ++conn) {
                int c = ::accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
                for (int i = 0; i < (conn == 0 ? answers : 1); ++i) {
                    std::string req;
                    char buf[4096];
                    while (req.find("\r\n\r\n") == std::string::npos) {
                        auto n = ::read(c, buf, sizeof buf);
                        if (n <= 0) break;
                        req.append(buf, std::size_t(n));
                    }
                    const std::string path = req.substr(req.find(' ') + 1, req.find(" HTTP/") - req.find(' ') - 1);
                    const std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(path.size()) + "\r\n\r\n" + path;
                    [[maybe_unused]] auto w = ::write(c, answer.data(), answer.size());
                }
                ::close(c);
            }
        });
    }
    ~KeepAliveServer() {
        t.join();
        ::close(fd);
    }
};

}  // namespace

TEST_CASE("a connection is kept for the next request, and opened again once the peer closed it", "[http]") {
    KeepAliveServer s(3);
    auto e = http::parse_url("http://127.0.0.1:" + std::to_string(s.port), {});
    REQUIRE(e);
    http::Connection c(*e);
    for (std::string path : {"/a", "/b", "/c", "/d"}) {
        auto r = c.request(http::Request{"GET", path, nullptr, {}}, 2000ms);
        REQUIRE(r);
        CHECK(r->body == path);
    }
    CHECK(c.connects() == 2);  // /a, /b and /c on the first connection; /d on a new one
}

TEST_CASE("TLS settings are refused with the file and the reason, never what it holds", "[http]") {
    auto r = http::TlsConfig::load({"/etc/cni/ca.pem", "not a secret PEM", "", "", "", ""});
    REQUIRE_FALSE(r);
    CHECK(r.error().msg.starts_with("CA file \"/etc/cni/ca.pem\": "));
    CHECK(r.error().msg.find("secret") == std::string::npos);
    auto half = http::TlsConfig::load({"ca", "x", "cert", "y", "", ""});
    REQUIRE_FALSE(half);
    CHECK(half.error().msg == "a client certificate and its key go together");
}
