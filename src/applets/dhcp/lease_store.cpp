// SPDX-License-Identifier: Apache-2.0
// Lease records as JSON files (see lease_store.hpp).
#include "applets/dhcp/lease_store.hpp"

#include <dirent.h>
#include <unistd.h>

#include "core/cni/json.hpp"
#include "core/fw/sha512.hpp"
#include "core/net/mac.hpp"
#include "core/os/fs.hpp"

namespace cni::dhcp {
namespace {

constexpr std::string_view kSuffix = ".lease";

std::string to_hex(const Bytes& b) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string s;
    for (auto c : b) s += {kHex[c >> 4], kHex[c & 15]};
    return s;
}

std::optional<Bytes> from_hex(std::string_view s) {
    if (s.size() % 2) return std::nullopt;
    Bytes out;
    for (std::size_t i = 0; i < s.size(); i += 2) {
        unsigned v = 0;
        for (char c : s.substr(i, 2)) {
            v <<= 4;
            if (c >= '0' && c <= '9') v |= unsigned(c - '0');
            else if (c >= 'a' && c <= 'f') v |= unsigned(c - 'a' + 10);
            else return std::nullopt;
        }
        out.push_back(std::uint8_t(v));
    }
    return out;
}

// The latest boundAt taken (2100-01-01): a lease's times (boundAt plus at most 2^32 s) and the
// wall-clock time points slept until (nanoseconds since 1970, good to 2262) cannot overflow. A
// record ahead of the clock (set back since it was written) is renewed at once (attachment.hpp).
constexpr std::int64_t kMaxBoundAt = 4102444800;

Status check_bound_at(std::int64_t bound_at) {
    if (bound_at < 0 || bound_at > kMaxBoundAt)
        return fail(code::decoding_failure, "lease record: boundAt " + std::to_string(bound_at) + " out of range");
    return {};
}

// A DHCPv6 message in hex, as the record holds it.
Result<v6::Message> decode_message6(const std::string& text) {
    auto wire = from_hex(text);
    if (!wire) return fail(code::decoding_failure, "lease record with a DHCPv6 message that is not hex");
    return v6::decode(*wire);
}

// The DHCPv6 half of decode_record: the REPLY, the IAID, the pod's address and when it came.
Result<LeaseRecord> decode_v6(const json::Value& d, LeaseRecord r, const json::Where& w) {
    std::string reply, address, info;
    std::uint32_t iaid = 0;
    CNI_TRY(json::field(d, "reply", reply, w));
    CNI_TRY(json::field(d, "information", info, w));
    CNI_TRY(json::field(d, "iaid", iaid, w));
    CNI_TRY(json::field(d, "address", address, w));
    CNI_TRY(json::field(d, "boundAt", r.lease6.bound_at, w));
    CNI_TRY(check_bound_at(r.lease6.bound_at));
    auto leased = net::IpAddr::parse(address);
    if (!leased || leased->is_v4() || r.key.empty())
        return fail(code::decoding_failure, "lease record without a valid reply, address or key");
    CNI_TRY_ASSIGN(r.lease6.reply, decode_message6(reply));
    if (!info.empty()) CNI_TRY_ASSIGN(r.lease6.info, decode_message6(info));
    r.v6 = true;
    r.lease6.iaid = iaid;
    r.lease6.leased = *leased;
    if (!r.lease6.grant().address) return fail(code::decoding_failure, "lease record whose reply does not lease its address");
    return r;
}

}  // namespace

std::string LeaseStore::path_for(const std::string& key, bool v6) const {
    // The key holds '/' and arbitrary container ids: name the file by its hash.
    return dir_ + "/" + fw::sha512_hex(v6 ? key + "\nipv6" : key).substr(0, 32) + std::string(kSuffix);
}

Status LeaseStore::save(const LeaseRecord& r) const {
    CNI_TRY(os::mkdir_all(dir_, 0700));
    return os::write_file_atomic(path_for(r.key, r.v6), encode_record(r), 0600);
}

void LeaseStore::remove(const std::string& key) const {
    ::unlink(path_for(key, false).c_str());
    ::unlink(path_for(key, true).c_str());
}

std::vector<LeaseRecord> LeaseStore::load_all(const std::function<void(const std::string&)>& bad) const {
    std::vector<LeaseRecord> out;
    auto dir = os::Dir::open(dir_);
    if (!dir) return out;
    for (auto& name : dir->names()) {
        if (name.size() <= kSuffix.size() || !name.ends_with(kSuffix)) continue;
        auto text = dir->read_if_exists(name);
        if (text && !*text) continue;  // gone since the listing
        auto rec = text ? decode_record(**text) : Result<LeaseRecord>(cni::Unexpected(text.error()));
        if (!rec) {
            bad(dir->path_of(name) + ": " + rec.error().msg);
            dir->remove(name);
            continue;
        }
        out.push_back(std::move(*rec));
    }
    return out;
}

std::string encode_record(const LeaseRecord& r) {
    json::Document d(rapidjson::kObjectType);
    auto& a = d.GetAllocator();
    auto put = [&](std::string_view k, std::string_view v) { json::set(d, k, json::str(v, a), a); };
    put("key", r.key);
    put("containerID", r.container_id);
    put("netName", r.net_name);
    put("ifName", r.ifname);
    put("netns", r.netns);
    put("config", r.config);
    put("args", r.args);
    if (r.v6) {
        put("family", "ipv6");
        put("reply", to_hex(v6::encode(r.lease6.reply)));
        json::set(d, "iaid", json::Value(std::uint64_t(r.lease6.iaid)), a);
        put("address", r.lease6.leased.str());
        json::set(d, "boundAt", json::Value(std::int64_t(r.lease6.bound_at)), a);
        if (r.lease6.info) put("information", to_hex(v6::encode(*r.lease6.info)));
    } else {
        put("ack", to_hex(encode(r.lease.ack)));
        put("serverMac", net::mac_text(r.lease.server_mac));
        json::set(d, "boundAt", json::Value(std::int64_t(r.lease.bound_at)), a);
    }
    if (r.given) put("given", r.given->str());
    return json::write(d, json::Style::indented, false);
}

Result<LeaseRecord> decode_record(std::string_view text) {
    CNI_TRY_ASSIGN(auto d, json::parse(text));
    if (!d.IsObject()) return fail(code::decoding_failure, "lease record is not a JSON object");
    LeaseRecord r;
    json::Where w{"LeaseRecord", ""};
    std::string ack, server_mac;
    CNI_TRY(json::field(d, "key", r.key, w));
    CNI_TRY(json::field(d, "containerID", r.container_id, w));
    CNI_TRY(json::field(d, "netName", r.net_name, w));
    CNI_TRY(json::field(d, "ifName", r.ifname, w));
    CNI_TRY(json::field(d, "netns", r.netns, w));
    CNI_TRY(json::field(d, "config", r.config, w));
    CNI_TRY(json::field(d, "args", r.args, w));
    std::string family, given;
    CNI_TRY(json::field(d, "family", family, w));
    CNI_TRY(json::field(d, "given", given, w));
    if (!given.empty()) {
        r.given = net::IpAddr::parse(given);
        if (!r.given || r.given->is_v4() != (family != "ipv6"))
            return fail(code::decoding_failure, "lease record whose given address is not one of its family");
    }
    if (family == "ipv6") return decode_v6(d, std::move(r), w);
    if (!family.empty()) return fail(code::decoding_failure, "lease record of an unknown family");
    CNI_TRY(json::field(d, "ack", ack, w));
    CNI_TRY(json::field(d, "serverMac", server_mac, w));
    CNI_TRY(json::field(d, "boundAt", r.lease.bound_at, w));
    CNI_TRY(check_bound_at(r.lease.bound_at));
    auto wire = from_hex(ack);
    auto mac = net::mac_bytes(server_mac);
    if (!wire || !mac || r.key.empty()) return fail(code::decoding_failure, "lease record without a valid ack, serverMac or key");
    CNI_TRY_ASSIGN(r.lease.ack, decode(*wire));
    r.lease.server_mac = *mac;
    return r;
}

}  // namespace cni::dhcp
