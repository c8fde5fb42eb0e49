// SPDX-License-Identifier: Apache-2.0
// DHCPv4 wire format and option readers (see message.hpp).
#include "applets/dhcp/message.hpp"

#include <algorithm>
#include <string>

namespace cni::dhcp {
namespace {

constexpr std::size_t kHeaderBytes = 236;  // op .. file
constexpr std::array<std::uint8_t, 4> kMagicCookie{99, 130, 83, 99};
constexpr std::size_t kMinMessageBytes = 300;  // BOOTP minimum; some relays drop shorter ones
constexpr std::uint8_t kPad = 0, kEnd = 255;

// The mask of a classful destination (option 33 carries no prefix length).
int classful_prefix(std::uint32_t dst) {
    if ((dst >> 31) == 0) return 8;
    if ((dst >> 30) == 2) return 16;
    return 24;
}

}  // namespace

const Bytes* Message::find(std::uint8_t code) const {
    for (const auto& o : options)
        if (o.code == code) return &o.data;
    return nullptr;
}

void Message::set(std::uint8_t code, Bytes data) {
    for (auto& o : options)
        if (o.code == code) {
            o.data = std::move(data);
            return;
        }
    options.push_back(Option{code, std::move(data)});
}

std::optional<MessageType> Message::type() const {
    const Bytes* t = find(opt::message_type);
    if (!t || t->size() != 1 || (*t)[0] < 1 || (*t)[0] > 8) return std::nullopt;
    return MessageType((*t)[0]);
}

std::optional<std::uint32_t> Message::address_option(std::uint8_t code) const {
    const Bytes* o = find(code);
    if (!o || o->size() < 4 || o->size() % 4 != 0) return std::nullopt;
    return get32(o->data());
}

std::optional<std::uint32_t> Message::u32_option(std::uint8_t code) const {
    const Bytes* o = find(code);
    if (!o || o->size() != 4) return std::nullopt;
    return get32(o->data());
}

Bytes encode(const Message& m) {
    Bytes b(kHeaderBytes, 0);
    b[0] = m.op;
    b[1] = 1;  // htype ethernet
    b[2] = 6;  // hlen
    put32(&b[4], m.xid);
    put16(&b[8], m.secs);
    put16(&b[10], m.flags);
    put32(&b[12], m.ciaddr);
    put32(&b[16], m.yiaddr);
    put32(&b[20], m.siaddr);
    put32(&b[24], m.giaddr);
    std::copy(m.chaddr.begin(), m.chaddr.end(), b.begin() + 28);
    // Byte by byte: GCC 12 reports bogus -Warray-bounds for range inserts into this vector.
    for (auto c : kMagicCookie) b.push_back(c);
    for (const auto& o : m.options) {
        std::size_t done = 0;
        do {  // longer than 255 bytes: split into several options of the same code (RFC 3396)
            std::size_t n = std::min<std::size_t>(255, o.data.size() - done);
            b.push_back(o.code);
            b.push_back(std::uint8_t(n));
            for (std::size_t k = 0; k < n; ++k) b.push_back(o.data[done + k]);
            done += n;
        } while (done < o.data.size());
    }
    b.push_back(kEnd);
    if (b.size() < kMinMessageBytes) b.resize(kMinMessageBytes, kPad);
    return b;
}

Result<Message> decode(std::span<const std::uint8_t> w) {
    if (w.size() < kHeaderBytes + kMagicCookie.size()) return fail(code::decoding_failure, "DHCP message too short");
    if (!std::equal(kMagicCookie.begin(), kMagicCookie.end(), w.begin() + kHeaderBytes))
        return fail(code::decoding_failure, "DHCP message without the magic cookie");
    if (w[1] != 1 || w[2] != 6) return fail(code::decoding_failure, "DHCP message for a non-Ethernet hardware type");
    Message m;
    m.op = w[0];
    m.xid = get32(&w[4]);
    m.secs = get16(&w[8]);
    m.flags = get16(&w[10]);
    m.ciaddr = get32(&w[12]);
    m.yiaddr = get32(&w[16]);
    m.siaddr = get32(&w[20]);
    m.giaddr = get32(&w[24]);
    std::copy(w.begin() + 28, w.begin() + 34, m.chaddr.begin());
    for (std::size_t i = kHeaderBytes + kMagicCookie.size(); i < w.size();) {
        std::uint8_t code = w[i++];
        if (code == kPad) continue;
        if (code == kEnd) return m;
        if (i >= w.size() || i + 1 + w[i] > w.size())
            return fail(code::decoding_failure, "DHCP option " + std::to_string(code) + " runs past the message");
        std::size_t n = w[i++];
        Bytes data(w.begin() + long(i), w.begin() + long(i + n));
        i += n;
        bool merged = false;
        for (auto& o : m.options)  // a repeated code continues the same option (RFC 3396)
            if (o.code == code) {
                o.data.insert(o.data.end(), data.begin(), data.end());
                merged = true;
            }
        if (!merged) m.options.push_back(Option{code, std::move(data)});
    }
    return fail(code::decoding_failure, "DHCP message without an end option");
}

Bytes u32_bytes(std::uint32_t v) {
    Bytes b(4);
    put32(b.data(), v);
    return b;
}

net::IpAddr v4(std::uint32_t host_order) { return net::IpAddr::from_v4(host_order); }

Result<std::vector<StaticRoute>> parse_classless_routes(const Bytes& d) {
    std::vector<StaticRoute> out;
    for (std::size_t i = 0; i < d.size();) {
        int width = d[i++];
        if (width > 32) return fail(code::decoding_failure, "classless static route with prefix length " + std::to_string(width));
        std::size_t significant = std::size_t(width + 7) / 8;
        if (i + significant + 4 > d.size()) return fail(code::decoding_failure, "truncated classless static route option");
        std::uint32_t dst = 0;
        for (std::size_t k = 0; k < significant; ++k) dst |= std::uint32_t(d[i + k]) << (24 - 8 * k);
        i += significant;
        std::uint32_t gw = get32(&d[i]);
        i += 4;
        out.push_back(StaticRoute{net::IpNet{v4(dst), width, 32}.masked(), gw});
    }
    return out;
}

Result<std::vector<StaticRoute>> parse_static_routes(const Bytes& d) {
    if (d.size() % 8 != 0) return fail(code::decoding_failure, "static route option length is not a multiple of 8");
    std::vector<StaticRoute> out;
    for (std::size_t i = 0; i < d.size(); i += 8) {
        std::uint32_t dst = get32(&d[i]);
        out.push_back(StaticRoute{net::IpNet{v4(dst), classful_prefix(dst), 32}.masked(), get32(&d[i + 4])});
    }
    return out;
}

LeaseTimes lease_times(const Message& ack) {
    LeaseTimes t;
    std::uint32_t lease = ack.u32_option(opt::lease_time).value_or(60 * 60);
    t.lease = std::max(lease, kMinLeaseSeconds);
    t.t1 = ack.u32_option(opt::renewal_time).value_or(t.lease / 2);
    t.t2 = ack.u32_option(opt::rebinding_time).value_or(std::uint32_t(t.lease * 0.85));
    t.degenerate = lease < kMinLeaseSeconds || t.t1 < kMinRenewSeconds;
    if (t.t1 > t.lease) t.t1 = t.lease / 2;  // nonsense from the server: keep the order T1 <= T2 <= T
    t.t1 = std::max(t.t1, kMinRenewSeconds);
    if (t.t2 > t.lease || t.t2 < t.t1) t.t2 = std::max(t.t1, std::uint32_t(t.lease * 0.85));
    return t;
}

}  // namespace cni::dhcp
