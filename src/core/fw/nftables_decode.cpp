// SPDX-License-Identifier: Apache-2.0
// The decoder of dumped rule expressions (see nftables_decode.hpp). Expressions are read in
// order: a load remembers what it put in the register, a bitwise its mask, and a cmp then says
// what was compared; a cmp on anything not remembered, or an expression of another kind, marks
// the rule `unknown`.
#include "core/fw/nftables_decode.hpp"

#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nf_tables_compat.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "core/libnl/attr.hpp"

namespace cni::fw::nft::detail {
namespace {

using Bytes = std::vector<std::uint8_t>;

constexpr std::size_t kXtCommentMax = 256;  // struct xt_comment_info

std::uint32_t be32(const nlattr* a) { return ntohl(nla_get_u32(const_cast<nlattr*>(a))); }

// The bytes of an NFTA_DATA_VALUE nested in `a`.
Bytes data_value(nlattr* a) {
    nlattr* data[NFTA_DATA_MAX + 1];
    if (nla_parse_nested(data, NFTA_DATA_MAX, a, nullptr) < 0 || !data[NFTA_DATA_VALUE]) return {};
    auto* p = static_cast<const std::uint8_t*>(nla_data(data[NFTA_DATA_VALUE]));
    return Bytes(p, p + nla_len(data[NFTA_DATA_VALUE]));
}

// What the register holds since the last load.
struct Loaded {
    enum Kind { nothing, l4proto, saddr, daddr, dport, iifname, oifname, mark } kind = nothing;
    std::size_t len = 0;
    std::optional<Bytes> mask;
};

Loaded payload_load(nlattr* data, Family f) {
    nlattr* tb[NFTA_PAYLOAD_MAX + 1];
    if (nla_parse_nested(tb, NFTA_PAYLOAD_MAX, data, nullptr) < 0 || !tb[NFTA_PAYLOAD_BASE] || !tb[NFTA_PAYLOAD_OFFSET] ||
        !tb[NFTA_PAYLOAD_LEN] || tb[NFTA_PAYLOAD_SREG])
        return {};
    std::uint32_t base = be32(tb[NFTA_PAYLOAD_BASE]), offset = be32(tb[NFTA_PAYLOAD_OFFSET]), len = be32(tb[NFTA_PAYLOAD_LEN]);
    Loaded l;
    l.len = len;
    if (base == NFT_PAYLOAD_TRANSPORT_HEADER && offset == 2 && len == 2) l.kind = Loaded::dport;
    if (base != NFT_PAYLOAD_NETWORK_HEADER) return l;
    if (f == Family::ip && len <= 4) l.kind = offset == 12 ? Loaded::saddr : offset == 16 ? Loaded::daddr : Loaded::nothing;
    if (f == Family::ip6 && len <= 16) l.kind = offset == 8 ? Loaded::saddr : offset == 24 ? Loaded::daddr : Loaded::nothing;
    return l;
}

Loaded meta_load(nlattr* data) {
    nlattr* tb[NFTA_META_MAX + 1];
    if (nla_parse_nested(tb, NFTA_META_MAX, data, nullptr) < 0 || !tb[NFTA_META_KEY] || !tb[NFTA_META_DREG]) return {};
    Loaded l;
    switch (be32(tb[NFTA_META_KEY])) {
        case NFT_META_L4PROTO: l.kind = Loaded::l4proto; break;
        case NFT_META_IIFNAME: l.kind = Loaded::iifname; break;
        case NFT_META_OIFNAME: l.kind = Loaded::oifname; break;
        case NFT_META_MARK: l.kind = Loaded::mark; break;
        default: break;
    }
    return l;
}

// An address compared with `value` (the first `len` bytes of the network, masked), as a prefix.
std::optional<net::IpNet> prefix_of(Family f, const Loaded& l, const Bytes& value) {
    std::size_t width = f == Family::ip ? 4 : 16;
    if (value.size() < l.len || l.len > width) return std::nullopt;
    std::array<std::uint8_t, 16> b{};
    std::copy_n(value.begin(), l.len, b.begin());  // no memcpy: an empty value has no data pointer
    int prefix = int(l.len * 8);
    if (l.mask) {
        prefix = 0;
        for (auto byte : *l.mask) prefix += std::popcount(byte);
    }
    if (f == Family::ip) {
        std::uint32_t host = (std::uint32_t(b[0]) << 24) | (std::uint32_t(b[1]) << 16) | (std::uint32_t(b[2]) << 8) | b[3];
        return net::IpNet{net::IpAddr::from_v4(host), prefix, 32};
    }
    return net::IpNet{net::IpAddr::from_bytes(b), prefix, 128};
}

// An interface name compared as iptables-nft compares it: the name and its NUL, or a prefix
// (iptables' "name+"); a name padded to IFNAMSIZ, as nft writes it, reads the same.
std::string iface_of(const Bytes& value) {
    auto nul = std::find(value.begin(), value.end(), 0);
    std::string name(value.begin(), nul);
    return nul == value.end() ? name + "+" : name;
}

std::uint32_t host_u32(const Bytes& b) {
    std::uint32_t v = 0;
    if (!b.empty()) std::memcpy(&v, b.data(), std::min<std::size_t>(b.size(), 4));
    return v;
}

void compare(nlattr* data, Family f, Loaded& l, ListedRule& r) {
    nlattr* tb[NFTA_CMP_MAX + 1];
    Loaded loaded = std::exchange(l, Loaded{});
    if (nla_parse_nested(tb, NFTA_CMP_MAX, data, nullptr) < 0 || !tb[NFTA_CMP_OP] || !tb[NFTA_CMP_DATA]) {
        r.unknown = true;
        return;
    }
    std::uint32_t op = be32(tb[NFTA_CMP_OP]);
    Bytes value = data_value(tb[NFTA_CMP_DATA]);
    bool eq = op == NFT_CMP_EQ, negated = op == NFT_CMP_NEQ, plain = eq && !loaded.mask;
    switch (loaded.kind) {
        case Loaded::l4proto:
            if (plain && value.size() == 1 && r.l4proto == 0) return void(r.l4proto = value[0]);
            break;
        case Loaded::dport:
            if (plain && value.size() == 2) {
                r.matches.emplace_back(PortEquals{std::uint16_t((value[0] << 8) | value[1])});
                return;
            }
            break;
        case Loaded::saddr:
        case Loaded::daddr:
            if (eq || negated)
                if (auto net = prefix_of(f, loaded, value))
                    return r.addresses.push_back(AddressMatch{loaded.kind == Loaded::saddr, *net, negated});
            break;
        case Loaded::iifname:
        case Loaded::oifname: {
            bool in = loaded.kind == Loaded::iifname;
            std::string& name = in ? r.in_iface : r.out_iface;
            if ((eq || negated) && !loaded.mask && name.empty() && !value.empty()) {
                name = iface_of(value);
                (in ? r.in_negated : r.out_negated) = negated;
                return;
            }
            break;
        }
        case Loaded::mark:
            if ((eq || negated) && value.size() == 4 && (!loaded.mask || loaded.mask->size() == 4)) {
                std::uint32_t mask = loaded.mask ? host_u32(*loaded.mask) : 0xffffffffu;
                r.matches.emplace_back(MarkCompare{host_u32(value), mask, negated});
                return;
            }
            break;
        case Loaded::nothing:
            break;
    }
    r.unknown = true;
}

void immediate(nlattr* data, ListedRule& r) {
    nlattr* imm[NFTA_IMMEDIATE_MAX + 1];
    nlattr* value[NFTA_DATA_MAX + 1];
    nlattr* verdict[NFTA_VERDICT_MAX + 1];
    if (nla_parse_nested(imm, NFTA_IMMEDIATE_MAX, data, nullptr) < 0 || !imm[NFTA_IMMEDIATE_DATA] ||
        nla_parse_nested(value, NFTA_DATA_MAX, imm[NFTA_IMMEDIATE_DATA], nullptr) < 0 || !value[NFTA_DATA_VERDICT] ||
        nla_parse_nested(verdict, NFTA_VERDICT_MAX, value[NFTA_DATA_VERDICT], nullptr) < 0 || !verdict[NFTA_VERDICT_CODE])
        return void(r.unknown = true);
    auto code = static_cast<std::int32_t>(be32(verdict[NFTA_VERDICT_CODE]));
    if ((code == NFT_JUMP || code == NFT_GOTO) && verdict[NFTA_VERDICT_CHAIN]) {
        r.jumps_to = r.target = libnl::attr_string(verdict[NFTA_VERDICT_CHAIN]);
        r.go_to = code == NFT_GOTO;
    } else if (code == NF_ACCEPT)
        r.target = "ACCEPT";
    else if (code == NF_DROP)
        r.target = "DROP";
    else if (code == NFT_RETURN)
        r.target = "RETURN";
    else
        r.unknown = true;
}

// An xtables target, or a match: the text of a leading `comment` match goes to `comment`, as
// iptables-nft shows it, and every other match to `matches` in order.
void xtables(nlattr* data, bool is_target, ListedRule& r) {
    int name_attr = is_target ? int(NFTA_TARGET_NAME) : int(NFTA_MATCH_NAME);
    int rev_attr = is_target ? int(NFTA_TARGET_REV) : int(NFTA_MATCH_REV);
    int info_attr = is_target ? int(NFTA_TARGET_INFO) : int(NFTA_MATCH_INFO);
    nlattr* tb[NFTA_MATCH_MAX + 1];  // NFTA_TARGET_* numbers the same attributes
    if (nla_parse_nested(tb, NFTA_MATCH_MAX, data, nullptr) < 0 || !tb[name_attr] || !tb[info_attr]) {
        r.unknown = true;
        return;
    }
    XtPayload x;
    x.name = libnl::attr_string(tb[name_attr]);
    if (tb[rev_attr]) x.revision = std::uint8_t(be32(tb[rev_attr]));
    auto* info = static_cast<const std::uint8_t*>(nla_data(tb[info_attr]));
    x.info.assign(info, info + nla_len(tb[info_attr]));
    if (is_target) {
        r.target = x.name;
        r.xt_target = std::move(x);
    } else if (x.name == "comment" && r.comment.empty() && r.matches.empty()) {
        std::string_view text(reinterpret_cast<const char*>(x.info.data()), std::min(kXtCommentMax, x.info.size()));
        r.comment = std::string(text.substr(0, text.find('\0')));
    } else {
        r.matches.emplace_back(std::in_place_type<XtPayload>, std::move(x));
    }
}

}  // namespace

void decode_expressions(nlattr* expressions, Family f, ListedRule& r) {
    Loaded loaded;
    nlattr* elem;
    int rem;
    nla_for_each_nested(elem, expressions, rem) {
        nlattr* e[NFTA_EXPR_MAX + 1];
        if (nla_parse_nested(e, NFTA_EXPR_MAX, elem, nullptr) < 0 || !e[NFTA_EXPR_NAME] || !e[NFTA_EXPR_DATA]) continue;
        const std::string name = libnl::attr_string(e[NFTA_EXPR_NAME]);
        nlattr* data = e[NFTA_EXPR_DATA];
        if (name == "payload") {
            loaded = payload_load(data, f);
            if (loaded.kind == Loaded::nothing) r.unknown = true;  // a load we do not follow, or a write
        } else if (name == "meta") {
            loaded = meta_load(data);
        } else if (name == "bitwise") {
            nlattr* tb[NFTA_BITWISE_MAX + 1];
            if (nla_parse_nested(tb, NFTA_BITWISE_MAX, data, nullptr) < 0 || !tb[NFTA_BITWISE_MASK])
                loaded = {};
            else
                loaded.mask = data_value(tb[NFTA_BITWISE_MASK]);
        } else if (name == "cmp") {
            compare(data, f, loaded, r);
        } else if (name == "immediate") {
            immediate(data, r);
        } else if (name == "match" || name == "target") {
            xtables(data, name == "target", r);
        } else if (name != "counter") {
            loaded = {};  // any other expression: something we do not follow
            r.unknown = true;
        }
    }
}

}  // namespace cni::fw::nft::detail
