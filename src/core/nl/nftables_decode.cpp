// SPDX-License-Identifier: Apache-2.0
// The decoder of dumped rule expressions (see nftables_decode.hpp). Expressions are read in
// order: a load remembers what it put in the register, a bitwise its mask, and a cmp then says
// what was compared; a cmp on anything not remembered is ignored.
#include "core/nl/nftables_decode.hpp"

#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nf_tables_compat.h>
#include <linux/netfilter/xt_tcpudp.h>

#include <bit>
#include <cstring>
#include <optional>
#include <vector>

#include "core/nl/xt_sctp.hpp"

namespace cni::nl::nft::detail {
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
    enum Kind { nothing, l4proto, saddr, daddr, dport } kind = nothing;
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
    if (be32(tb[NFTA_META_KEY]) == NFT_META_L4PROTO) l.kind = Loaded::l4proto, l.len = 1;
    return l;
}

// An address compared with `value` (the first `len` bytes of the network, masked), as a prefix.
std::optional<IpNet> prefix_of(Family f, const Loaded& l, const Bytes& value) {
    std::size_t width = f == Family::ip ? 4 : 16;
    if (value.size() < l.len || l.len > width) return std::nullopt;
    std::array<std::uint8_t, 16> b{};
    std::memcpy(b.data(), value.data(), l.len);
    int prefix = int(l.len * 8);
    if (l.mask) {
        prefix = 0;
        for (auto byte : *l.mask) prefix += std::popcount(byte);
    }
    if (f == Family::ip) {
        std::uint32_t host = (std::uint32_t(b[0]) << 24) | (std::uint32_t(b[1]) << 16) | (std::uint32_t(b[2]) << 8) | b[3];
        return IpNet{IpAddr::from_v4(host), prefix, 32};
    }
    return IpNet{IpAddr::from_bytes(b), prefix, 128};
}

void compare(nlattr* data, Family f, Loaded& l, ListedRule& r) {
    nlattr* tb[NFTA_CMP_MAX + 1];
    if (nla_parse_nested(tb, NFTA_CMP_MAX, data, nullptr) < 0 || !tb[NFTA_CMP_OP] || !tb[NFTA_CMP_DATA]) return;
    std::uint32_t op = be32(tb[NFTA_CMP_OP]);
    if (op != NFT_CMP_EQ && op != NFT_CMP_NEQ) return;
    Bytes value = data_value(tb[NFTA_CMP_DATA]);
    switch (l.kind) {
        case Loaded::l4proto:
            if (op == NFT_CMP_EQ && value.size() == 1) r.l4proto = value[0];
            break;
        case Loaded::dport:
            if (op == NFT_CMP_EQ && value.size() == 2 && !l.mask) r.dport = std::uint16_t((value[0] << 8) | value[1]);
            break;
        case Loaded::saddr:
        case Loaded::daddr:
            if (auto net = prefix_of(f, l, value))
                r.addresses.push_back(AddressMatch{l.kind == Loaded::saddr, *net, op == NFT_CMP_NEQ});
            break;
        case Loaded::nothing:
            break;
    }
    l = {};
}

void immediate(nlattr* data, ListedRule& r) {
    nlattr* imm[NFTA_IMMEDIATE_MAX + 1];
    nlattr* value[NFTA_DATA_MAX + 1];
    nlattr* verdict[NFTA_VERDICT_MAX + 1];
    if (nla_parse_nested(imm, NFTA_IMMEDIATE_MAX, data, nullptr) < 0 || !imm[NFTA_IMMEDIATE_DATA] ||
        nla_parse_nested(value, NFTA_DATA_MAX, imm[NFTA_IMMEDIATE_DATA], nullptr) < 0 || !value[NFTA_DATA_VERDICT] ||
        nla_parse_nested(verdict, NFTA_VERDICT_MAX, value[NFTA_DATA_VERDICT], nullptr) < 0 || !verdict[NFTA_VERDICT_CODE])
        return;
    auto code = static_cast<std::int32_t>(be32(verdict[NFTA_VERDICT_CODE]));
    if ((code == NFT_JUMP || code == NFT_GOTO) && verdict[NFTA_VERDICT_CHAIN])
        r.jumps_to = r.target = nla_get_string(verdict[NFTA_VERDICT_CHAIN]);
    else if (code == NF_ACCEPT)
        r.target = "ACCEPT";
    else if (code == NF_DROP)
        r.target = "DROP";
    else if (code == NFT_RETURN)
        r.target = "RETURN";
}

// The destination port of an xtables tcp, udp or sctp match (a single port, not negated), or 0.
// iptables-nft uses the sctp one; older versions used all three.
std::uint16_t xt_dport(std::string_view name, const void* info, std::size_t len) {
    auto single = [](const std::uint16_t* dpts) { return dpts[0] == dpts[1] ? dpts[0] : std::uint16_t(0); };
    if (name == "tcp" && len >= sizeof(xt_tcp)) {
        xt_tcp m;
        std::memcpy(&m, info, sizeof m);
        return m.invflags & XT_TCP_INV_DSTPT ? 0 : single(m.dpts);
    }
    if (name == "udp" && len >= sizeof(xt_udp)) {
        xt_udp m;
        std::memcpy(&m, info, sizeof m);
        return m.invflags & XT_UDP_INV_DSTPT ? 0 : single(m.dpts);
    }
    if (name == "sctp" && len >= sizeof(xt_sctp_info)) {
        xt_sctp_info m;
        std::memcpy(&m, info, sizeof m);
        return (m.flags & XT_SCTP_DEST_PORTS) && !(m.invflags & XT_SCTP_DEST_PORTS) ? single(m.dpts) : 0;
    }
    return 0;
}

// An xtables target's name, the text of a `comment` match, or a port match's port.
void xtables(nlattr* data, bool is_target, ListedRule& r) {
    int name_attr = is_target ? int(NFTA_TARGET_NAME) : int(NFTA_MATCH_NAME);
    int info_attr = is_target ? int(NFTA_TARGET_INFO) : int(NFTA_MATCH_INFO);
    nlattr* tb[NFTA_MATCH_MAX + 1];  // NFTA_TARGET_* numbers the same attributes
    if (nla_parse_nested(tb, NFTA_MATCH_MAX, data, nullptr) < 0 || !tb[name_attr]) return;
    std::string name = nla_get_string(tb[name_attr]);
    if (is_target) {
        r.target = name;
    } else if (!tb[info_attr]) {
        return;
    } else if (name == "comment") {
        auto* text = static_cast<const char*>(nla_data(tb[info_attr]));
        r.comment = std::string(text, strnlen(text, std::min<std::size_t>(kXtCommentMax, std::size_t(nla_len(tb[info_attr])))));
    } else if (auto port = xt_dport(name, nla_data(tb[info_attr]), std::size_t(nla_len(tb[info_attr])))) {
        r.dport = port;
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
        std::string_view name = nla_get_string(e[NFTA_EXPR_NAME]);
        nlattr* data = e[NFTA_EXPR_DATA];
        if (name == "payload") {
            loaded = payload_load(data, f);
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
            loaded = {};  // any other load leaves the register holding something we do not follow
        }
    }
}

}  // namespace cni::nl::nft::detail
