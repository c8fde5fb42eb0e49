// SPDX-License-Identifier: Apache-2.0
// dhcp without sockets: the wire format against literal bytes, option readers (RFC 3442 routes,
// lease times), the result of an ACK, the ipam keys, the daemon protocol, lease records, the
// daemon's flags, its bounds on ADDs waiting at once and the client's retry schedule.
#include <catch2/catch.hpp>

#include <time.h>

#include <climits>

#include "applets/dhcp/admission.hpp"
#include "applets/dhcp/config.hpp"
#include "applets/dhcp/daemon.hpp"
#include "applets/dhcp/lease_result.hpp"
#include "applets/dhcp/lease_store.hpp"
#include "applets/dhcp/protocol.hpp"
#include "applets/dhcp/retry.hpp"

using namespace cni;
using namespace cni::dhcp;

namespace {

Message ack_with(std::vector<Option> options) {
    Message m;
    m.op = 2;
    m.xid = 0x01020304;
    m.yiaddr = 0x0ad50035;  // 10.213.0.53
    m.chaddr = {2, 0, 0, 0, 0, 1};
    m.options = std::move(options);
    m.options.insert(m.options.begin(), Option{opt::message_type, {5}});
    return m;
}

std::string routes_of(const CniResult& r) {
    std::string s;
    for (auto& rt : r.routes)
        s += rt.dst.str() + (rt.gw ? " via " + rt.gw->str() : std::string(" link")) + " m" + std::to_string(rt.priority) + ";";
    return s;
}

}  // namespace

TEST_CASE("dhcp message: header fields and options survive a round trip; the wire is at least 300 bytes", "[dhcp]") {
    Message m = ack_with({{opt::subnet_mask, u32_bytes(0xffffff00)}, {opt::host_name, Bytes(300, 'h')}});
    m.flags = kBroadcastFlag;
    Bytes wire = encode(m);
    CHECK(wire.size() >= 300);
    CHECK(wire[0] == 2);
    CHECK(wire[10] == 0x80);
    CHECK((wire[236] == 99 && wire[237] == 130 && wire[238] == 83 && wire[239] == 99));
    auto back = decode(wire);
    REQUIRE(back);
    CHECK(*back == m);  // the 300-byte host name went out as two options and came back as one
    CHECK(back->type() == MessageType::ack);
}

TEST_CASE("dhcp message: truncated or foreign packets are decoding errors", "[dhcp]") {
    Bytes wire = encode(ack_with({}));
    CHECK(!decode(std::span(wire.data(), 200)));
    wire[236] = 0;
    CHECK(decode(wire).error().msg == "DHCP message without the magic cookie");
    Bytes bad = encode(ack_with({}));
    bad[240] = opt::host_name;
    bad[241] = 200;  // runs past the end
    bad.resize(250);
    CHECK(decode(bad).error().code == code::decoding_failure);
}

TEST_CASE("dhcp lease times: options 51/58/59, else the reference's defaults", "[dhcp]") {
    auto t = lease_times(ack_with({}));
    CHECK((t.lease == 3600 && t.t1 == 1800 && t.t2 == 3060));
    t = lease_times(ack_with({{opt::lease_time, u32_bytes(120)}, {opt::renewal_time, u32_bytes(5)}, {opt::rebinding_time, u32_bytes(8)}}));
    CHECK((t.lease == 120 && t.t1 == 5 && t.t2 == 8 && !t.degenerate));
    // A lease time of 0 (so T1 = 0) or a T1 of 0: floors, and marked degenerate.
    t = lease_times(ack_with({{opt::lease_time, u32_bytes(0)}}));
    CHECK((t.lease == kMinLeaseSeconds && t.t1 == 5 && t.t2 == 8 && t.degenerate));
    t = lease_times(ack_with({{opt::lease_time, u32_bytes(120)}, {opt::renewal_time, u32_bytes(0)}, {opt::rebinding_time, u32_bytes(0)}}));
    CHECK((t.lease == 120 && t.t1 == kMinRenewSeconds && t.t2 == 102 && t.degenerate));
}

TEST_CASE("dhcp result: mask, gateway and default route; classless routes are exclusive; priority is the metric", "[dhcp]") {
    auto plain = lease_result(ack_with({{opt::subnet_mask, u32_bytes(0xffffff00)}, {opt::routers, u32_bytes(0x0ad50001)}}), 0);
    REQUIRE(plain);
    CHECK(plain->ips[0].address.str() == "10.213.0.53/24");
    CHECK(plain->ips[0].gateway->str() == "10.213.0.1");
    CHECK(routes_of(*plain) == "0.0.0.0/0 via 10.213.0.1 m0;");

    // 121: 192.168.213.0/24 via 10.213.0.254, 10.214.0.0/16 on-link
    Bytes classless{24, 192, 168, 213, 10, 213, 0, 254, 16, 10, 214, 0, 0, 0, 0};
    auto cl = lease_result(ack_with({{opt::subnet_mask, u32_bytes(0xffffff00)}, {opt::routers, u32_bytes(0x0ad50001)},
                                     {opt::classless_routes, classless}}), 7);
    REQUIRE(cl);
    CHECK(routes_of(*cl) == "192.168.213.0/24 via 10.213.0.254 m7;10.214.0.0/16 link m7;");
    CHECK(cl->routes[1].scope == 253);

    // 33: classful destinations, plus the default route via the router
    Bytes fixed{172, 16, 0, 0, 10, 213, 0, 9};
    auto st = lease_result(ack_with({{opt::subnet_mask, u32_bytes(0xffffff00)}, {opt::routers, u32_bytes(0x0ad50001)},
                                     {opt::static_routes, fixed}}), 0);
    REQUIRE(st);
    CHECK(routes_of(*st) == "172.16.0.0/16 via 10.213.0.9 m0;0.0.0.0/0 via 10.213.0.1 m0;");

    CHECK(lease_result(ack_with({}), 0).error().msg == "DHCP option Subnet Mask not found in DHCPACK");
    CHECK(!lease_result(ack_with({{opt::subnet_mask, u32_bytes(0xff00ff00)}}), 0));
    CHECK(!parse_classless_routes(Bytes{33, 1, 2, 3, 4}));
    CHECK(!parse_classless_routes(Bytes{24, 10, 0}));
}

TEST_CASE("dhcp config: defaults, request/skipDefault, provide with fromArg, errors naming the option", "[dhcp]") {
    auto c = parse_dhcp_conf(R"({"cniVersion":"1.0.0","name":"n","ipam":{"type":"dhcp"}})", "");
    REQUIRE(c);
    CHECK(c->socket_path == "/run/cni/dhcp.sock");
    CHECK(c->request_list == Bytes{1, 3, 121, 33});
    c = parse_dhcp_conf(R"({"name":"n","ipam":{"type":"dhcp","daemonSocketPath":"/x.sock","priority":5,
        "request":[{"option":"host-name","skipDefault":true},{"option":"42"}],
        "provide":[{"option":"host-name","fromArg":"K8S_POD_NAME"},{"option":"user-class","value":"u"},
                   {"option":"vendor-class-identifier","fromArg":"MISSING"}]}})",
                        "IgnoreUnknown=1;K8S_POD_NAME=web=0");
    REQUIRE(c);
    CHECK(c->socket_path == "/x.sock");
    CHECK(c->priority == 5);
    CHECK(c->request_list == Bytes{12, 42});
    REQUIRE(c->provide.size() == 2);
    CHECK(c->provide[0] == Option{12, Bytes{'w', 'e', 'b', '=', '0'}});
    CHECK(c->provide[1] == Option{77, Bytes{'u'}});
    auto bad = parse_dhcp_conf(R"({"name":"n","ipam":{"type":"dhcp","request":[{"option":"256"}]}})", "");
    CHECK(bad.error().code == code::invalid_config);
    CHECK(bad.error().msg.find("\"256\"") != std::string::npos);
    CHECK(!parse_dhcp_conf(R"({"name":"n"})", ""));
    CHECK(client_id_for("c/n/eth0") == Bytes{0, 'c', '/', 'n', '/', 'e', 't', 'h', '0'});
    // Long identities stay whole as keys, and apart at the server: two sharing 254 bytes differ.
    std::string a = lease_key(std::string(300, 'x'), "n", "eth0"), b = lease_key(std::string(300, 'x'), "n", "eth1");
    CHECK(a.size() == 307);
    CHECK(a != b);
    CHECK(client_id_for(a).size() == 255);
    CHECK(client_id_for(a) != client_id_for(b));
    CHECK(client_id_for(std::string(254, 'y')) == [] {
        Bytes id(255, 'y');
        id[0] = 0;
        return id;
    }());
}

TEST_CASE("dhcp protocol: requests and replies round trip; garbage is a decoding error", "[dhcp]") {
    DaemonRequest q{Op::gc, "c1", "/run/netns/x", "eth0", "K=V", "/opt/cni/bin", "{\"name\":\"n\"}"};
    auto back = decode_request(encode_request(q));
    REQUIRE(back);
    CHECK((back->op == Op::gc && back->container_id == "c1" && back->config == q.config && back->args == "K=V"));
    CHECK(decode_request("{\"op\":\"nope\"}").error().msg == "dhcp daemon: unknown op \"nope\"");
    CHECK(decode_request("\x01").error().code == code::decoding_failure);

    auto result = lease_result(ack_with({{opt::subnet_mask, u32_bytes(0xffffff00)}}), 0);
    auto reply = decode_reply(encode_reply(std::optional<CniResult>(*result)));
    REQUIRE(reply);
    CHECK((*reply)->ips == result->ips);
    CHECK(!*decode_reply(encode_reply(std::optional<CniResult>{})));
    auto err = decode_reply(encode_reply(fail(code::invalid_netns, "bad ns")));
    CHECK((err.error().code == 8 && err.error().msg == "bad ns"));
}

TEST_CASE("dhcp lease record: JSON round trip, with the given address; a boundAt before 1970 or after 2099 is refused, one days ahead of the clock taken", "[dhcp]") {
    LeaseRecord r{"c1/n/eth0", "c1", "n", "eth0", "/run/netns/x", "{}", "K=V",
                  Lease{ack_with({{opt::subnet_mask, u32_bytes(0xffffff00)}}), {2, 0, 0, 0, 0, 9}, 1700000000}, false, {}};
    auto back = decode_record(encode_record(r));
    REQUIRE(back);
    CHECK((back->key == r.key && back->netns == r.netns && back->lease.ack == r.lease.ack));
    CHECK((back->lease.server_mac == r.lease.server_mac && back->lease.bound_at == 1700000000));
    CHECK(!decode_record("{\"key\":\"k\",\"ack\":\"zz\"}"));
    r.given = net::IpAddr::parse("10.0.0.9");  // the pod's address, the lease having moved from it
    CHECK(decode_record(encode_record(r))->given == r.given);
    r.given = net::IpAddr::parse("fd00::9");
    CHECK(!decode_record(encode_record(r)));
    r.given.reset();
    r.lease.bound_at = std::int64_t(::time(nullptr)) + 2 * 86400;  // a clock set back two days: renewed at once
    CHECK(decode_record(encode_record(r)));
    for (std::int64_t bad : {std::int64_t(-1), std::int64_t(4102444801), INT64_MAX}) {
        r.lease.bound_at = bad;  // out of range: the lease's times would overflow
        auto refused = decode_record(encode_record(r));
        REQUIRE(!refused);
        CHECK(refused.error().msg == "lease record: boundAt " + std::to_string(bad) + " out of range");
    }
}

TEST_CASE("dhcp network digest: the config but the keys a runtime sets per call; key order and spacing do not count", "[dhcp]") {
    auto digest = [](std::string_view text) {
        auto conf = parse_dhcp_conf(text, "");
        REQUIRE(conf);
        return conf->network_digest;
    };
    const std::string a = digest(R"({"cniVersion":"1.0.0","name":"n","type":"macvlan","master":"eth1","ipam":{"type":"dhcp"}})");
    CHECK(a.size() == 32);
    CHECK(digest(R"({ "ipam": {"type": "dhcp"}, "master": "eth1", "type": "macvlan", "name": "n", "cniVersion": "1.1.0",
                      "runtimeConfig": {"mac": "0a:00:00:00:00:01"}, "args": {"cni": {"x": 1}}, "prevResult": {"ips": []},
                      "cni.dev/valid-attachments": [{"containerID": "c", "ifname": "eth0"}]})") == a);
    CHECK(digest(R"({"cniVersion":"1.0.0","name":"n","type":"macvlan","master":"eth2","ipam":{"type":"dhcp"}})") != a);
    CHECK(digest(R"({"cniVersion":"1.0.0","name":"n","type":"macvlan","master":"eth1","ipam":{"type":"dhcp","priority":5}})") != a);
    CHECK(digest(R"({"cniVersion":"1.0.0","name":"m","type":"macvlan","master":"eth1","ipam":{"type":"dhcp"}})") != a);
}

TEST_CASE("dhcp lease record: the fields earlier versions write and read, nothing more; the digest comes from its config", "[dhcp]") {
    const std::string config = R"({"cniVersion":"1.0.0","name":"n","type":"macvlan","ipam":{"type":"dhcp"}})";
    LeaseRecord r{"c1/n/eth0", "c1", "n", "eth0", "/run/netns/x", config, "",
                  Lease{ack_with({{opt::subnet_mask, u32_bytes(0xffffff00)}}), {2, 0, 0, 0, 0, 9}, 1700000000}, false, {}};
    auto doc = json::parse(encode_record(r));
    REQUIRE(doc);
    std::vector<std::string> keys;
    for (const auto& m : doc->GetObject()) keys.emplace_back(m.name.GetString());
    CHECK(keys == std::vector<std::string>{"key", "containerID", "netName", "ifName", "netns", "config", "args", "ack",
                                           "serverMac", "boundAt"});
    auto back = decode_record(encode_record(r));
    REQUIRE(back);
    CHECK(parse_dhcp_conf(back->config, back->args)->network_digest == parse_dhcp_conf(config, "")->network_digest);
}

TEST_CASE("dhcp daemon flags: Go flag syntax and durations", "[dhcp]") {
    std::vector<std::string> args{"-socketpath", "/tmp/s", "--timeout=2s", "-broadcast", "-resendmax", "1m2.5s", "-hostprefix=/host"};
    auto o = parse_daemon_options(args);
    REQUIRE(o);
    CHECK((o->socket_path == "/tmp/s" && o->hostprefix == "/host" && o->timing.broadcast));
    CHECK(o->timing.timeout.count() == 2000);
    CHECK(o->timing.resend_max.count() == 62500);
    CHECK(o->timing.resend_timeout.count() == 208000);
    std::vector<std::string> bad{"-nope"};
    CHECK(parse_daemon_options(bad).error().msg == "flag provided but not defined: -nope");
    std::vector<std::string> rel{"-pidfile", "x.pid"};
    CHECK(!parse_daemon_options(rel));
    CHECK(parse_go_duration("500ms")->count() == 500);
    CHECK(parse_go_duration("1h")->count() == 3600000);
    CHECK(!parse_go_duration("10"));
    CHECK(!parse_go_duration("s"));
    CHECK(parse_go_duration("1.5s")->count() == 1500);
    CHECK(parse_go_duration(".25s")->count() == 250);
    CHECK(parse_go_duration("1h2m3.5s")->count() == 3723500);
    CHECK(parse_go_duration("2us")->count() == 0);
    CHECK(parse_go_duration("1500µs")->count() == 2);  // 1.5 ms rounds up
    CHECK(parse_go_duration("2562047h")->count() == 2562047LL * 3600000);
    CHECK(parse_go_duration("2562048h").error().msg == "invalid duration \"2562048h\"");  // over Go's int64
    CHECK(parse_go_duration(".s").error().msg == "invalid duration \".s\"");
    CHECK(parse_go_duration("5x").error().msg == "missing or unknown unit in duration \"5x\"");
}

TEST_CASE("dhcp retry schedule: four slots of 2 s, then 4 s doubling up to -resendmax, +-1 s, never under 500 ms", "[dhcp]") {
    using std::chrono::milliseconds;
    const milliseconds max{62'000}, none{0};
    for (int a = 0; a < kFastRetries; ++a) CHECK(retry_delay(a, max, none).count() == 2000);
    CHECK(retry_delay(4, max, none).count() == 4000);
    CHECK(retry_delay(5, max, none).count() == 8000);
    CHECK(retry_delay(7, max, none).count() == 32000);
    CHECK(retry_delay(8, max, none).count() == 62000);  // 64 s, cut to -resendmax
    CHECK(retry_delay(1'000'000, max, none).count() == 62000);
    CHECK(retry_delay(0, max, milliseconds(-1000)).count() == 1000);
    CHECK(retry_delay(0, max, milliseconds(5000)).count() == 3000);  // jitter is at most 1 s
    CHECK(retry_delay(8, max, milliseconds(-7000)).count() == 61000);
    CHECK(retry_delay(6, milliseconds(0), milliseconds(-1000)).count() == 500);  // -resendmax 0
    // With the defaults and no jitter, the attempts that start within -resendtimeout (208 s):
    // at 0, 2, 4, 6, 8, 12, 20, 36, 68, 130 and 192 s (docs/dhcp.md says 11).
    int attempts = 0;
    for (milliseconds at{0}; at < milliseconds(208'000); at += retry_delay(attempts++, max, none)) {}
    CHECK(attempts == 11);
}

TEST_CASE("dhcp clock set back: the wall clock's step against the steady clock, small ones (rounding) ignored", "[dhcp]") {
    using std::chrono::seconds;
    CHECK(clock_set_back(1000, 1060, seconds(60)) == 0);   // in step
    CHECK(clock_set_back(1000, 1100, seconds(60)) == 0);   // set forward: the lease's times come early, no harm
    CHECK(clock_set_back(1000, 1058, seconds(60)) == 0);   // within kClockSlack
    CHECK(clock_set_back(1000, 1000 - 3600, seconds(60)) == 3660);
    CHECK(clock_set_back(1000, 1054, seconds(60)) == 6);
}

TEST_CASE("dhcp retry tally: what the servers did, in the log line and in the error", "[dhcp]") {
    RetryTally t;
    t.record(Miss::no_offer);
    CHECK(t.last() == "no DHCP server answered the DISCOVER");
    CHECK(t.summary() == "no DHCP server answered 1 DISCOVER");
    t.record(Miss::no_answer_to_request, 0x0ad5003c);
    CHECK(t.last() == "the DHCP server offered 10.213.0.60 but did not answer the REQUEST");
    t.record(Miss::nak, 0x0ad5003c, "in use");
    CHECK(t.last() == "the DHCP server NAKed the offered address 10.213.0.60 (\"in use\")");
    t.record(Miss::nak, 0x0ad5003c, std::string("bad\n\"x\"\0", 8) + std::string(100, 'y'));
    t.record(Miss::odd_reply);
    CHECK((t.attempts() == 5 && t.refusals() == 3));
    CHECK(t.summary() == "the DHCP server NAKed the offered address 10.213.0.60 2 times (last: \"bad??x??" + std::string(56, 'y') +
                             "...\"); 1 DHCP reply of the wrong type (not an OFFER to a DISCOVER, nor an ACK or NAK to a REQUEST); "
                             "the DHCP server offered 10.213.0.60 but did not answer the REQUEST; no DHCP server answered 1 DISCOVER");
    RetryTally naks;
    for (int i = 0; i < kMaxRefusals; ++i) naks.record(Miss::nak, 0x0ad5003c);
    CHECK(naks.summary() == "the DHCP server NAKed the offered address 10.213.0.60 4 times");
}

TEST_CASE("dhcp daemon admission: 8 waiting ADDs per network, past 40 only a tenant with none, 48 in all, places given back", "[dhcp]") {
    Acquisitions acq;
    auto net = [](std::string name) { return tenant_of(name, ""); };
    std::vector<Acquisitions::Ticket> a;
    for (int i = 0; i < kMaxAcquisitionsPerTenant; ++i) a.push_back(*acq.admit(net("a")));
    auto refused = acq.admit(net("a"));
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code == code::try_again_later);
    CHECK(refused.error().msg == "8 ADDs of network \"a\" are waiting for a lease, the most one network may have "
                                 "at once (docs/dhcp.md); try again later");
    a.pop_back();
    a.push_back(*acq.admit(net("a")));  // a place given back is a place again
    // Four more tenants at their bound: 40 wait. Past that, a tenant holding a place is refused,
    // and 8 tenants holding none get the last places (6 tenants of 8 no longer fill 48).
    std::vector<Acquisitions::Ticket> others;
    for (int n = 0; n < 4; ++n)
        for (int i = 0; i < kMaxAcquisitionsPerTenant; ++i) others.push_back(*acq.admit(net("net" + std::to_string(n))));
    CHECK(kFairShareFrom == 40);
    others.pop_back();
    others.push_back(*acq.admit(net("net3")));  // 39 waiting: net3 gets its eighth back
    auto greedy = acq.admit(net("net4"));
    REQUIRE(greedy);
    others.push_back(std::move(*greedy));  // 41: net4 held none
    auto second = acq.admit(net("net4"));
    REQUIRE_FALSE(second);
    CHECK(second.error().code == code::try_again_later);
    CHECK(second.error().msg == "41 ADDs are waiting for a lease; past 40 the daemon admits only a network with none waiting, "
                                "and network \"net4\" has 1 (docs/dhcp.md); try again later");
    auto ns_second = acq.admit(tenant_of("x", "K8S_POD_NAMESPACE=team-a"));
    REQUIRE(ns_second);
    CHECK(acq.admit(tenant_of("y", "K8S_POD_NAMESPACE=team-a")).error().msg ==
          "42 ADDs are waiting for a lease; past 40 the daemon admits only a namespace with none waiting, and pod namespace "
          "\"team-a\" has 1 (docs/dhcp.md); try again later");
    others.push_back(std::move(*ns_second));
    for (int n = 5; int(a.size() + others.size()) < kMaxAcquisitions; ++n) others.push_back(*acq.admit(net("net" + std::to_string(n))));
    auto full = acq.admit(net("fresh"));
    REQUIRE_FALSE(full);
    CHECK(full.error().code == code::try_again_later);
    CHECK(full.error().msg == "48 ADDs are waiting for a lease, the most the daemon serves at once (docs/dhcp.md); try again later");
    CHECK(kMaxConnections - kMaxAcquisitions == kReservedConnections);
    a.clear();
    CHECK(acq.admit(net("fresh")));
}

TEST_CASE("dhcp daemon admission: keyed on the pod namespace, not the names a tenant picks; long names cut", "[dhcp]") {
    CHECK(tenant_of("mynet", "IgnoreUnknown=1;K8S_POD_NAMESPACE=team-a;K8S_POD_NAME=web-0") == Tenant{true, "team-a"});
    CHECK(tenant_of("mynet", "IgnoreUnknown=1;K8S_POD_NAME=web-0") == Tenant{false, "mynet"});
    CHECK(tenant_of("mynet", "K8S_POD_NAMESPACE=") == Tenant{false, "mynet"});
    CHECK(tenant_of("team-a", "") != Tenant{true, "team-a"});  // a network named as a namespace is not that namespace
    Acquisitions acq;
    std::vector<Acquisitions::Ticket> held;
    for (int i = 0; i < kMaxAcquisitionsPerTenant; ++i)  // one namespace, a new network name each time
        held.push_back(*acq.admit(tenant_of("net" + std::to_string(i), "K8S_POD_NAMESPACE=team-a")));
    auto refused = acq.admit(tenant_of("yet-another", "K8S_POD_NAMESPACE=team-a"));
    REQUIRE_FALSE(refused);
    CHECK(refused.error().msg == "8 ADDs of pod namespace \"team-a\" are waiting for a lease, the most one namespace may "
                                 "have at once (docs/dhcp.md); try again later");
    CHECK(acq.admit(tenant_of("net0", "K8S_POD_NAMESPACE=team-b")));  // the same network name, another namespace
    CHECK(acq.admit(tenant_of("team-a", "")));

    std::string huge(100000, 'n');
    for (int i = 0; i < kMaxAcquisitionsPerTenant; ++i) held.push_back(*acq.admit(tenant_of(huge, "")));
    auto cut = acq.admit(tenant_of(huge, ""));
    REQUIRE_FALSE(cut);
    CHECK(cut.error().msg == "8 ADDs of network \"" + std::string(kShownBytes, 'n') + "...[truncated " +
                                 std::to_string(huge.size() - kShownBytes) +
                                 " bytes]\" are waiting for a lease, the most one network may have at once (docs/dhcp.md); "
                                 "try again later");
    CHECK(shown("c1/" + huge + "/eth0").size() < kShownBytes + 32);
    CHECK(shown("c1/mynet/eth0") == "c1/mynet/eth0");
}
