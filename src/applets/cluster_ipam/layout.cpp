// SPDX-License-Identifier: Apache-2.0
// The store's keys and values (layout.hpp; docs/cluster-ipam.md, Data layout): JSON codecs that
// refuse what they do not understand, and the block arithmetic of a pool.
#include "applets/cluster_ipam/layout.hpp"

#include <algorithm>
#include <charconv>

#include "core/cni/json.hpp"
#include "core/cni/netconf.hpp"
#include "core/fw/sha512.hpp"

namespace cni::cluster_ipam {
namespace {

net::IpAddr from_value(net::U128 v) {
    std::array<std::uint8_t, 16> b{};
    for (int i = 15; i >= 0; --i, v >>= 8) b[std::size_t(i)] = std::uint8_t(v);
    return net::IpAddr::from_bytes(b);
}

std::string as_string(const json::Value* v) {
    return v && v->IsString() ? std::string(v->GetString(), v->GetStringLength()) : std::string();
}

cni::Unexpected<Error> corrupt(std::string_view what) { return fail("cluster-ipam: unreadable " + std::string(what) + " in the store"); }

}  // namespace

std::string encode(const Block& b) {
    json::Document d(rapidjson::kObjectType);
    auto& a = d.GetAllocator();
    json::set(d, "node", json::str(b.node, a), a);
    json::Value allocs(rapidjson::kObjectType);
    for (const auto& [ord, h] : b.allocations) json::set(allocs, std::to_string(ord), json::str(h, a), a);
    json::set(d, "allocations", std::move(allocs), a);
    json::set(d, "last", json::Value(std::int64_t(b.last)), a);
    json::set(d, "lastWrite", json::Value(std::int64_t(b.last_write)), a);
    return json::write(d, json::Style::compact, false);
}

Result<Block> decode_block(const std::string& text) {
    auto d = json::parse(text);
    if (!d || !d->IsObject()) return corrupt("block");
    Block b;
    b.node = as_string(json::find_exact(*d, "node"));
    if (const auto* l = json::find_exact(*d, "last"); l && l->IsInt64()) b.last = l->GetInt64();
    if (const auto* w = json::find_exact(*d, "lastWrite"); w && w->IsInt64()) b.last_write = w->GetInt64();
    const auto* allocs = json::find_exact(*d, "allocations");
    if (b.node.empty() || !allocs || !allocs->IsObject()) return corrupt("block");
    for (const auto& m : allocs->GetObject()) {
        std::uint32_t ord = 0;
        std::string_view k(m.name.GetString(), m.name.GetStringLength());
        auto [p, ec] = std::from_chars(k.data(), k.data() + k.size(), ord);
        if (ec != std::errc() || p != k.data() + k.size() || !m.value.IsString()) return corrupt("block");
        b.allocations[ord] = as_string(&m.value);
    }
    return b;
}

std::string encode(const Handle& h) {
    json::Document d(rapidjson::kObjectType);
    auto& a = d.GetAllocator();
    json::set(d, "node", json::str(h.node, a), a);
    json::Value list(rapidjson::kArrayType);
    for (const auto& held : h.addresses) {
        json::Value e(rapidjson::kObjectType);
        json::set(e, "block", json::str(held.block, a), a);
        json::set(e, "ordinal", json::Value(std::uint64_t(held.ordinal)), a);
        json::set(e, "address", json::str(held.ip.address.str(), a), a);
        if (held.ip.gateway) json::set(e, "gateway", json::str(held.ip.gateway->str(), a), a);
        list.PushBack(e, a);
    }
    json::set(d, "addresses", std::move(list), a);
    if (!h.config.empty()) json::set(d, "config", json::str(h.config, a), a);
    return json::write(d, json::Style::compact, false);
}

Result<Handle> decode_handle(const std::string& text) {
    auto d = json::parse(text);
    if (!d || !d->IsObject()) return corrupt("handle");
    Handle h;
    h.node = as_string(json::find_exact(*d, "node"));
    h.config = as_string(json::find_exact(*d, "config"));
    const auto* list = json::find_exact(*d, "addresses");
    if (!list || !list->IsArray()) return corrupt("handle");
    for (const auto& e : list->GetArray()) {
        if (!e.IsObject()) return corrupt("handle");
        Held held;
        held.block = as_string(json::find_exact(e, "block"));
        const auto* ord = json::find_exact(e, "ordinal");
        auto addr = net::IpNet::parse(as_string(json::find_exact(e, "address")));
        if (held.block.empty() || !ord || !ord->IsUint() || !addr) return corrupt("handle");
        held.ordinal = ord->GetUint();
        held.ip.address = *addr;
        if (auto gw = as_string(json::find_exact(e, "gateway")); !gw.empty()) {
            held.ip.gateway = net::IpAddr::parse(gw);
            if (!held.ip.gateway) return corrupt("handle");
        }
        h.addresses.push_back(std::move(held));
    }
    return h;
}

std::string escape(std::string_view component) {
    std::string out;
    for (char c : component) {
        if (c == '%') out += "%25";
        else if (c == '/') out += "%2F";
        else out += c;
    }
    return out;
}

std::string handles_of(std::string_view node, std::string_view network) { return escape(node) + "/" + escape(network) + "/"; }

std::string handle_id(std::string_view node, std::string_view network, std::string_view container_id, std::string_view ifname) {
    return handles_of(node, network) + escape(container_id) + "/" + escape(ifname);
}

std::string network_digest(const std::string& config_text) {
    auto d = json::parse(config_text);
    return fw::sha512_hex(d ? network_identity(*d) : std::string()).substr(0, 32);
}

net::IpAddr PoolGeometry::address(net::U128 block, std::uint32_t ordinal) const {
    return from_value(subnet.ip.value() + block * block_size() + ordinal);
}

std::string PoolGeometry::block_id(net::U128 block) const {
    return address(block, 0).str() + "-" + std::to_string(block_prefix);
}

std::optional<net::U128> PoolGeometry::parse_block_id(std::string_view id) const {
    auto dash = id.rfind('-');
    if (dash == std::string_view::npos || id.substr(dash + 1) != std::to_string(block_prefix)) return std::nullopt;
    auto ip = net::IpAddr::parse(id.substr(0, dash));
    if (!ip || !subnet.contains(*ip)) return std::nullopt;
    const net::U128 off = ip->value() - subnet.ip.value();
    if (off % block_size() != 0) return std::nullopt;
    return off / block_size();
}

bool PoolGeometry::usable(net::U128 block, std::uint32_t ordinal) const {
    const auto a = address(block, ordinal);
    bool in_range = false;
    for (const auto& r : ranges) {
        if (r.gateway && *r.gateway == a) return false;
        in_range = in_range || r.contains(a);
    }
    return in_range && std::ranges::none_of(exclude, [&](const net::IpNet& n) { return n.contains(a); });
}

std::string PoolGeometry::meta() const { return "{\"blockSize\":" + std::to_string(block_prefix) + "}"; }

Result<std::vector<PoolGeometry>> geometry(const ipam::RangeSet& set, int block_v4, int block_v6,
                                           const std::vector<net::IpNet>& exclude) {
    std::vector<PoolGeometry> pools;
    for (const auto& r : set) {
        const auto subnet = r.subnet->masked();
        auto it = std::ranges::find_if(pools, [&](const PoolGeometry& p) { return p.subnet == subnet; });
        if (it == pools.end()) {
            PoolGeometry p;
            p.subnet = subnet;
            p.id = subnet.ip.str() + "-" + std::to_string(subnet.prefix);
            const bool v4 = subnet.mask_bits == 32;
            p.block_prefix = v4 ? block_v4 : block_v6;
            const std::string key = v4 ? "blockSize" : "blockSizeV6";
            if (p.block_prefix < subnet.prefix || p.block_prefix > subnet.mask_bits)
                return fail(code::invalid_config, "cluster-ipam: ipam." + key + " " + std::to_string(p.block_prefix) +
                                                      " does not fit range " + r.str() + " of subnet " + subnet.str() +
                                                      ": a block's prefix must lie between the subnet's and " +
                                                      std::to_string(subnet.mask_bits));
            if (subnet.mask_bits - p.block_prefix > kMaxBlockBits)
                return fail(code::invalid_config, "cluster-ipam: ipam." + key + " " + std::to_string(p.block_prefix) +
                                                      " makes blocks of more than " + std::to_string(1 << kMaxBlockBits) +
                                                      " addresses; use a prefix of at least " +
                                                      std::to_string(subnet.mask_bits - kMaxBlockBits));
            for (const auto& e : exclude)
                if (e.mask_bits == subnet.mask_bits) p.exclude.push_back(e.masked());
            pools.push_back(std::move(p));
            it = pools.end() - 1;
        }
        it->ranges.push_back(r);
    }
    for (auto& p : pools) {
        net::U128 lo = ~net::U128(0), hi = 0;
        for (const auto& r : p.ranges) {
            lo = std::min(lo, (r.range_start->value() - p.subnet.ip.value()) / p.block_size());
            hi = std::max(hi, (r.range_end->value() - p.subnet.ip.value()) / p.block_size());
        }
        p.first_block = lo;
        p.last_block = hi;
    }
    return pools;
}

}  // namespace cni::cluster_ipam
