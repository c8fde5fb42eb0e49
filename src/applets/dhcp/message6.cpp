// SPDX-License-Identifier: Apache-2.0
// DHCPv6 wire format, the client's messages and the option readers (see message6.hpp).
#include "applets/dhcp/message6.hpp"

#include <algorithm>
#include <string>

#include "core/fw/sha512.hpp"

namespace cni::dhcp::v6 {
namespace {

constexpr std::size_t kMaxMessageBytes = 65535;
constexpr std::size_t kMaxDuidBytes = 130;  // RFC 8415 section 11.1: 2 + 128
constexpr std::size_t kMaxNameBytes = 255, kMaxLabelBytes = 63;
// What one message may carry, so a message of tiny options costs a bounded amount of memory.
constexpr std::size_t kMaxIas = 16, kMaxAddressesPerIa = 16, kMaxDnsServers = 16, kMaxSearch = 16,
                      kMaxRequested = 32;

cni::Unexpected<Error> bad(std::string what) { return fail(code::decoding_failure, "DHCPv6 message: " + what); }

void put_option(Bytes& b, std::uint16_t code, const Bytes& data) {
    std::uint8_t h[4];
    put16(h, code);
    put16(h + 2, std::uint16_t(data.size()));
    for (auto c : h) b.push_back(c);
    for (auto c : data) b.push_back(c);
}

void put_u16(Bytes& b, std::uint16_t v) {
    b.push_back(std::uint8_t(v >> 8));
    b.push_back(std::uint8_t(v));
}
void put_u32(Bytes& b, std::uint32_t v) {
    put_u16(b, std::uint16_t(v >> 16));
    put_u16(b, std::uint16_t(v));
}

Bytes status_bytes(const StatusCode& s) {
    Bytes b;
    put_u16(b, s.code);
    for (char c : s.message) b.push_back(std::uint8_t(c));
    return b;
}

// Options one after the other, each {code, length, data}, in `where`; `f` takes each and may
// refuse it, which ends the walk.
template <typename F>
cni::Status each_option(std::span<const std::uint8_t> w, std::string_view where, F&& f) {
    for (std::size_t i = 0; i < w.size();) {
        if (w.size() - i < 4) return fail(code::decoding_failure, "DHCPv6 message: " + std::string(where) + ": truncated option header");
        std::uint16_t code = get16(&w[i]), len = get16(&w[i + 2]);
        i += 4;
        if (len > w.size() - i)
            return fail(code::decoding_failure,
                        "DHCPv6 message: " + std::string(where) + ": option " + std::to_string(code) + " runs past its container");
        CNI_TRY(f(code, w.subspan(i, len)));
        i += len;
    }
    return {};
}

Result<StatusCode> read_status(std::span<const std::uint8_t> d) {
    if (d.size() < 2) return fail(code::decoding_failure, "DHCPv6 message: status code option shorter than 2 bytes");
    StatusCode s;
    s.code = get16(d.data());
    s.message.assign(reinterpret_cast<const char*>(d.data() + 2), d.size() - 2);
    return s;
}

Result<IaAddress> read_iaaddr(std::span<const std::uint8_t> d) {
    if (d.size() < 24) return fail(code::decoding_failure, "DHCPv6 message: IAADDR option shorter than 24 bytes");
    std::array<std::uint8_t, 16> a;
    std::copy(d.begin(), d.begin() + 16, a.begin());
    IaAddress r{net::IpAddr::from_bytes(a), get32(&d[16]), get32(&d[20]), std::nullopt};
    if (r.address.is_v4()) return fail(code::decoding_failure, "DHCPv6 message: IAADDR holds an IPv4-mapped address");
    CNI_TRY(each_option(d.subspan(24), "IAADDR", [&](std::uint16_t code, std::span<const std::uint8_t> o) -> cni::Status {
        if (code == opt::status_code && !r.status) CNI_TRY_ASSIGN(r.status, read_status(o));
        return {};
    }));
    return r;
}

Result<IaNa> read_ia_na(std::span<const std::uint8_t> d) {
    if (d.size() < 12) return fail(code::decoding_failure, "DHCPv6 message: IA_NA option shorter than 12 bytes");
    IaNa ia{get32(&d[0]), get32(&d[4]), get32(&d[8]), {}, std::nullopt};
    CNI_TRY(each_option(d.subspan(12), "IA_NA", [&](std::uint16_t code, std::span<const std::uint8_t> o) -> cni::Status {
        if (code == opt::iaaddr) {
            CNI_TRY_ASSIGN(auto a, read_iaaddr(o));
            if (ia.addresses.size() < kMaxAddressesPerIa) ia.addresses.push_back(a);
        } else if (code == opt::status_code && !ia.status) {
            CNI_TRY_ASSIGN(ia.status, read_status(o));
        }
        return {};
    }));
    return ia;
}

// An address a server may lease or name as a DNS server: not unspecified, loopback, link-local
// or multicast.
bool leasable(const net::IpAddr& a) {
    const auto& b = a.bytes();
    bool zero_prefix = std::all_of(b.begin(), b.end() - 1, [](std::uint8_t c) { return c == 0; });
    if (zero_prefix && b[15] <= 1) return false;
    return b[0] != 0xff && !(b[0] == 0xfe && (b[1] & 0xc0) == 0x80);
}

bool label_byte(std::uint8_t c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

}  // namespace

std::string_view type_name(Type t) {
    constexpr std::string_view names[] = {"SOLICIT", "ADVERTISE", "REQUEST", "CONFIRM", "RENEW", "REBIND",
                                          "REPLY", "RELEASE", "DECLINE", "RECONFIGURE", "INFORMATION-REQUEST"};
    auto i = std::size_t(t);
    return i >= 1 && i <= std::size(names) ? names[i - 1] : "unknown";
}

const IaNa* Message::find_ia(std::uint32_t iaid) const {
    for (const auto& ia : ia_na)
        if (ia.iaid == iaid) return &ia;
    return nullptr;
}

Result<std::vector<std::string>> decode_names(std::span<const std::uint8_t> d) {
    std::vector<std::string> names;
    std::string name;
    std::size_t wire = 0;  // the name's bytes on the wire so far
    for (std::size_t i = 0; i < d.size();) {
        std::size_t n = d[i++];
        ++wire;
        if (n == 0) {
            if (name.empty()) return fail(code::decoding_failure, "DHCPv6 domain list: an empty (root) name");
            if (names.size() < kMaxSearch) names.push_back(std::move(name));
            name.clear();
            wire = 0;
            continue;
        }
        if (n > kMaxLabelBytes)  // also the 0xC0 of a compression pointer, which RFC 8415 forbids
            return fail(code::decoding_failure, "DHCPv6 domain list: label length " + std::to_string(n) + " (compressed or over 63)");
        if (n > d.size() - i) return fail(code::decoding_failure, "DHCPv6 domain list: a label runs past the option");
        wire += n;
        if (wire + 1 > kMaxNameBytes) return fail(code::decoding_failure, "DHCPv6 domain list: a name over 255 bytes");
        for (std::size_t k = 0; k < n; ++k)
            if (!label_byte(d[i + k]))
                return fail(code::decoding_failure, "DHCPv6 domain list: byte " + std::to_string(d[i + k]) +
                                                        " in a label (letters, digits, '-' and '_' only)");
        if (!name.empty()) name += '.';
        name.append(reinterpret_cast<const char*>(&d[i]), n);
        i += n;
    }
    if (!name.empty()) return fail(code::decoding_failure, "DHCPv6 domain list: a name without its final empty label");
    return names;
}

Result<Bytes> encode_name(std::string_view name) {
    Bytes b;
    if (name.empty() || name.size() + 2 > kMaxNameBytes) return fail(code::decoding_failure, "DHCPv6 domain name of bad length");
    std::size_t start = 0;
    while (start <= name.size()) {
        std::size_t dot = name.find('.', start);
        if (dot == std::string_view::npos) dot = name.size();
        std::size_t n = dot - start;
        if (n == 0 || n > kMaxLabelBytes) return fail(code::decoding_failure, "DHCPv6 domain name with a label of bad length");
        b.push_back(std::uint8_t(n));
        for (std::size_t k = start; k < dot; ++k) {
            if (!label_byte(std::uint8_t(name[k]))) return fail(code::decoding_failure, "DHCPv6 domain name with a bad byte");
            b.push_back(std::uint8_t(name[k]));
        }
        start = dot + 1;
    }
    b.push_back(0);
    return b;
}

Bytes encode(const Message& m) {
    Bytes b;
    put_u32(b, std::uint32_t(m.type) << 24 | (m.xid & 0xffffff));
    if (!m.client_id.empty()) put_option(b, opt::client_id, m.client_id);
    if (!m.server_id.empty()) put_option(b, opt::server_id, m.server_id);
    for (const auto& ia : m.ia_na) {
        Bytes d;
        put_u32(d, ia.iaid);
        put_u32(d, ia.t1);
        put_u32(d, ia.t2);
        for (const auto& a : ia.addresses) {
            Bytes ad(a.address.bytes().begin(), a.address.bytes().end());
            put_u32(ad, a.preferred);
            put_u32(ad, a.valid);
            if (a.status) put_option(ad, opt::status_code, status_bytes(*a.status));
            put_option(d, opt::iaaddr, ad);
        }
        if (ia.status) put_option(d, opt::status_code, status_bytes(*ia.status));
        put_option(b, opt::ia_na, d);
    }
    if (m.rapid_commit) put_option(b, opt::rapid_commit, {});
    if (m.preference) put_option(b, opt::preference, {*m.preference});
    if (m.elapsed) {
        Bytes d;
        put_u16(d, *m.elapsed);
        put_option(b, opt::elapsed_time, d);
    }
    if (!m.requested.empty()) {
        Bytes d;
        for (auto c : m.requested) put_u16(d, c);
        put_option(b, opt::oro, d);
    }
    if (m.status) put_option(b, opt::status_code, status_bytes(*m.status));
    if (!m.dns_servers.empty()) {
        Bytes d;
        for (const auto& a : m.dns_servers) d.insert(d.end(), a.bytes().begin(), a.bytes().end());
        put_option(b, opt::dns_servers, d);
    }
    if (!m.search.empty()) {
        Bytes d;
        for (const auto& n : m.search)
            if (auto w = encode_name(n)) d.insert(d.end(), w->begin(), w->end());
        put_option(b, opt::domain_list, d);
    }
    return b;
}

Result<Message> decode(std::span<const std::uint8_t> w) {
    if (w.size() < 4) return bad("shorter than its 4-byte header");
    if (w.size() > kMaxMessageBytes) return bad("longer than 65535 bytes");
    if (w[0] < 1 || w[0] > 11) return bad("type " + std::to_string(w[0]) + " (relay messages and unknown types are not a client's)");
    Message m;
    m.type = Type(w[0]);
    m.xid = get32(w.data()) & 0xffffff;
    CNI_TRY(each_option(w.subspan(4), "top level", [&](std::uint16_t code, std::span<const std::uint8_t> d) -> cni::Status {
        switch (code) {
        case opt::client_id:
        case opt::server_id: {
            Bytes& id = code == opt::client_id ? m.client_id : m.server_id;
            if (d.size() < 2 || d.size() > kMaxDuidBytes) return bad("a DUID of " + std::to_string(d.size()) + " bytes");
            if (id.empty()) id.assign(d.begin(), d.end());
            return {};
        }
        case opt::ia_na: {
            CNI_TRY_ASSIGN(auto ia, read_ia_na(d));
            if (m.ia_na.size() < kMaxIas && !m.find_ia(ia.iaid)) m.ia_na.push_back(std::move(ia));
            return {};
        }
        case opt::rapid_commit:
            if (!d.empty()) return bad("a rapid commit option with data");
            m.rapid_commit = true;
            return {};
        case opt::preference:
            if (d.size() != 1) return bad("a preference option of " + std::to_string(d.size()) + " bytes");
            if (!m.preference) m.preference = d[0];
            return {};
        case opt::elapsed_time:
            if (d.size() != 2) return bad("an elapsed time option of " + std::to_string(d.size()) + " bytes");
            if (!m.elapsed) m.elapsed = get16(d.data());
            return {};
        case opt::oro:
            if (d.size() % 2) return bad("an option request option of odd length");
            for (std::size_t i = 0; i < d.size() && m.requested.size() < kMaxRequested; i += 2) m.requested.push_back(get16(&d[i]));
            return {};
        case opt::status_code:
            if (!m.status) CNI_TRY_ASSIGN(m.status, read_status(d));
            return {};
        case opt::dns_servers:
            if (d.size() % 16) return bad("a DNS servers option whose length is not a multiple of 16");
            for (std::size_t i = 0; i < d.size() && m.dns_servers.size() < kMaxDnsServers; i += 16) {
                std::array<std::uint8_t, 16> a;
                std::copy(d.begin() + long(i), d.begin() + long(i + 16), a.begin());
                auto ip = net::IpAddr::from_bytes(a);
                if (ip.is_v4()) return bad("an IPv4-mapped DNS server");
                // Unspecified, loopback, multicast or link-local (no zone in a resolv.conf line)
                // name no server the pod can reach: left out.
                if (leasable(ip)) m.dns_servers.push_back(ip);
            }
            return {};
        case opt::domain_list: {
            CNI_TRY_ASSIGN(auto names, decode_names(d));
            for (auto& n : names)
                if (m.search.size() < kMaxSearch) m.search.push_back(std::move(n));
            return {};
        }
        default:
            return {};  // options the client does not use
        }
    }));
    return m;
}

Message client_message(Type type, const Exchange& x) {
    Message m;
    m.type = type;
    m.xid = x.xid & 0xffffff;
    m.client_id = x.duid;
    m.elapsed = x.elapsed;
    if (type == Type::request || type == Type::renew || type == Type::release) m.server_id = x.server_id;
    if (type != Type::information_request) {
        IaNa ia{x.iaid, 0, 0, {}, std::nullopt};
        for (const auto& a : x.addresses) ia.addresses.push_back(IaAddress{a, 0, 0, std::nullopt});
        m.ia_na.push_back(std::move(ia));
    }
    if (type == Type::solicit) m.rapid_commit = x.rapid_commit;
    if (type != Type::release) m.requested = {opt::dns_servers, opt::domain_list};
    return m;
}

Bytes duid_ll(const Mac& mac) {
    Bytes b(4 + mac.size());  // sized first: GCC 12 reports bogus -Warray-bounds for a range insert here
    b[1] = 3;
    b[3] = 1;
    std::copy(mac.begin(), mac.end(), b.begin() + 4);
    return b;
}

std::uint32_t iaid_of(std::string_view lease_key) {
    std::string h = fw::sha512_hex(lease_key);
    return std::uint32_t(std::stoul(h.substr(0, 8), nullptr, 16));
}

StatusCode answers(const Message& reply, std::uint32_t xid, const Bytes& duid) {
    if (reply.xid != (xid & 0xffffff)) return {status::unspec_fail, "another transaction"};
    if (reply.client_id != duid) return {status::unspec_fail, "another client's DUID"};
    if (reply.server_id.empty()) return {status::unspec_fail, "no server identifier"};
    return {};
}

Granted granted(const Message& m, std::uint32_t iaid, std::optional<net::IpAddr> only) {
    Granted g;
    if (m.status && m.status->code != status::success) {
        g.status = *m.status;
        return g;
    }
    const IaNa* ia = m.find_ia(iaid);
    if (!ia) {
        g.status = {status::no_addrs_avail, "no IA_NA for our IAID"};
        return g;
    }
    if (ia->status && ia->status->code != status::success) {
        g.status = *ia->status;
        return g;
    }
    for (const auto& a : ia->addresses) {
        if (only && a.address != *only) continue;
        if (a.status && a.status->code != status::success) {
            g.status = *a.status;
            continue;
        }
        if (a.valid == 0 || a.preferred > a.valid) continue;  // RFC 8415 section 21.6: discard
        if (!leasable(a.address)) continue;
        g.address = a;
        g.t1 = ia->t1;
        g.t2 = ia->t2;
        g.status = {};
        return g;
    }
    if (g.status.code == status::success) g.status = {status::no_addrs_avail, "no usable address in the IA_NA"};
    return g;
}

LeaseTimes lease_times(const Granted& g) {
    LeaseTimes t;
    std::uint32_t valid = g.address ? g.address->valid : 0, preferred = g.address ? g.address->preferred : 0;
    t.lease = std::max(valid, kMinLeaseSeconds);
    std::uint32_t base = std::max(preferred, kMinLeaseSeconds);
    t.t1 = g.t1 && g.t1 != 0xffffffff ? g.t1 : std::uint32_t(base * 0.5);
    t.t2 = g.t2 && g.t2 != 0xffffffff ? g.t2 : std::uint32_t(base * 0.8);
    t.degenerate = valid < kMinLeaseSeconds || t.t1 < kMinRenewSeconds;
    if (t.t1 > t.lease) t.t1 = t.lease / 2;
    t.t1 = std::max(t.t1, kMinRenewSeconds);
    if (t.t2 > t.lease || t.t2 < t.t1) t.t2 = std::max(t.t1, std::uint32_t(t.lease * 0.8));
    t.t1 = std::min(t.t1, kMaxRenewSeconds);  // still at most T2 and the lease: both are at least T1 here
    t.t2 = std::min(t.t2, kMaxRebindSeconds);
    return t;
}

}  // namespace cni::dhcp::v6
