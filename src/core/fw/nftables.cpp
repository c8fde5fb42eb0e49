// SPDX-License-Identifier: Apache-2.0
// nf_tables messages, transactions and rule and chain dumps with libnl's message helpers (see
// nftables.hpp).
#include "core/fw/nftables.hpp"

#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nf_nat.h>
#include <linux/netfilter/nf_tables_compat.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/netlink.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <span>

#include "core/fw/nftables_decode.hpp"
#include "core/libnl/attr.hpp"
#include "core/libnl/netfilter_close.hpp"
#include "core/os/errno_error.hpp"

namespace cni::fw::nft {

using SockPtr = libnl::NetfilterSockPtr;
namespace {

constexpr std::uint8_t kCommentTag = 0;  // NFTNL_UDATA_{RULE,TABLE,CHAIN}_COMMENT
constexpr std::size_t kCommentMax = 128;  // what nft accepts

bool put_be32(nl_msg* m, int type, std::uint32_t v) { return nla_put_u32(m, type, htonl(v)) == 0; }

bool put_data(nl_msg* m, int type, const void* data, std::size_t len) {
    nlattr* nest = nla_nest_start(m, type | NLA_F_NESTED);
    if (!nest || nla_put(m, NFTA_DATA_VALUE, int(len), data) != 0) return false;
    nla_nest_end(m, nest);
    return true;
}

bool put_comment(nl_msg* m, int type, std::string_view comment) {
    if (comment.empty()) return true;
    std::string_view c = comment.substr(0, kCommentMax);
    std::vector<char> tlv{char(kCommentTag), char(c.size() + 1)};
    tlv.insert(tlv.end(), c.begin(), c.end());
    tlv.push_back('\0');
    return nla_put(m, type, int(tlv.size()), tlv.data()) == 0;
}

std::string comment_of(const nlattr* udata) {
    auto* p = static_cast<const unsigned char*>(nla_data(udata));
    int left = nla_len(udata);
    while (left >= 2 && 2 + p[1] <= left) {
        if (p[0] == kCommentTag && p[1] > 0) return std::string(reinterpret_cast<const char*>(p + 2), strnlen(reinterpret_cast<const char*>(p + 2), p[1]));
        left -= 2 + p[1];
        p += 2 + p[1];
    }
    return {};
}

Expr immediate(std::uint32_t reg, std::vector<std::uint8_t> value) {
    return {"immediate", [reg, value = std::move(value)](nl_msg* m) {
                return put_be32(m, NFTA_IMMEDIATE_DREG, reg) && put_data(m, NFTA_IMMEDIATE_DATA, value.data(), value.size());
            }};
}


std::vector<std::uint8_t> port_bytes(std::uint16_t port) { return {std::uint8_t(port >> 8), std::uint8_t(port & 0xff)}; }

std::string errno_message(int err, std::string_view kernel) {
    std::string s = os::errno_text(err);
    if (!kernel.empty()) s += " (kernel: " + std::string(kernel) + ")";
    return s;
}

// The extended ack's message of an NLMSG_ERROR, if the kernel gave one.
std::string ext_ack_message(const nlmsghdr* h) {
    if (!(h->nlmsg_flags & NLM_F_ACK_TLVS)) return {};
    auto* e = static_cast<const nlmsgerr*>(nlmsg_data(h));
    std::size_t off = sizeof(nlmsgerr);
    if (!(h->nlmsg_flags & NLM_F_CAPPED)) off += e->msg.nlmsg_len - sizeof(nlmsghdr);
    std::size_t total = h->nlmsg_len - NLMSG_HDRLEN;
    if (off >= total) return {};
    nlattr* tb[NLMSGERR_ATTR_MAX + 1];
    auto* attrs = reinterpret_cast<nlattr*>(const_cast<char*>(static_cast<const char*>(nlmsg_data(h)) + off));
    if (nla_parse(tb, NLMSGERR_ATTR_MAX, attrs, int(total - off), nullptr) < 0 || !tb[NLMSGERR_ATTR_MSG]) return {};
    return libnl::attr_string(tb[NLMSGERR_ATTR_MSG]);
}

Result<SockPtr> connect() {
    SockPtr sk(nl_socket_alloc());
    if (!sk) return fail("nftables: out of memory");
    if (int err = nl_connect(sk.get(), NETLINK_NETFILTER); err < 0) return fail(std::string("nftables: ") + nl_geterror(err));
    int one = 1;
    (void)::setsockopt(nl_socket_get_fd(sk.get()), SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof one);
    (void)nl_socket_set_buffer_size(sk.get(), 1 << 20, 1 << 20);  // a transaction goes in one datagram
    // Each read takes a whole 32 KiB dump datagram (the kernel's largest) in one recvmsg, not a
    // peek and then the read; one that is larger anyway is read again into a larger buffer.
    nl_socket_disable_msg_peek(sk.get());
    (void)nl_socket_set_msg_buf_size(sk.get(), 32768);
    timeval limit{30, 0};  // a kernel that never answers fails the call instead of hanging it
    (void)::setsockopt(nl_socket_get_fd(sk.get()), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    return sk;
}

// One nf_tables message: the nfnetlink header for `f`, no attributes yet; null when out of memory.
MsgPtr new_message(int type, int flags, Family f) {
    MsgPtr msg(nlmsg_alloc_simple((NFNL_SUBSYS_NFTABLES << 8) | type, flags));
    nfgenmsg g{};
    g.nfgen_family = static_cast<std::uint8_t>(f);
    g.version = NFNETLINK_V0;
    if (msg && nlmsg_append(msg.get(), &g, sizeof g, NLMSG_ALIGNTO) != 0) msg.reset();
    return msg;
}

// Reads the socket's answers, datagram by datagram, handing each message to `on` until it returns
// true (the last answer came); a failed read is the error, worded "<what>: ...".
template <class OnMessage>
Status read_answers(nl_sock* sk, std::string_view what, OnMessage&& on) {
    for (bool done = false; !done;) {
        sockaddr_nl peer{};
        unsigned char* data = nullptr;
        int n = nl_recv(sk, &peer, &data, nullptr);
        if (n <= 0) {
            std::free(data);
            return fail(std::string(what) + ": " + (n < 0 ? nl_geterror(n) : "no answer from the kernel"));
        }
        for (auto* h = reinterpret_cast<nlmsghdr*>(data); !done && nlmsg_ok(h, n); h = nlmsg_next(h, &n)) done = on(h);
        std::free(data);
    }
    return {};
}

}  // namespace

Expr load_meta(std::uint32_t key) {
    return {"meta", [key](nl_msg* m) { return put_be32(m, NFTA_META_DREG, NFT_REG_1) && put_be32(m, NFTA_META_KEY, key); }};
}

Expr load_payload(std::uint32_t base, std::uint32_t offset, std::uint32_t len) {
    return {"payload", [=](nl_msg* m) {
                return put_be32(m, NFTA_PAYLOAD_DREG, NFT_REG_1) && put_be32(m, NFTA_PAYLOAD_BASE, base) &&
                       put_be32(m, NFTA_PAYLOAD_OFFSET, offset) && put_be32(m, NFTA_PAYLOAD_LEN, len);
            }};
}

Expr compare(bool negated, std::vector<std::uint8_t> value) {
    std::uint32_t op = negated ? NFT_CMP_NEQ : NFT_CMP_EQ;
    return {"cmp", [op, value = std::move(value)](nl_msg* m) {
                return put_be32(m, NFTA_CMP_SREG, NFT_REG_1) && put_be32(m, NFTA_CMP_OP, op) &&
                       put_data(m, NFTA_CMP_DATA, value.data(), value.size());
            }};
}

Expr mask_with(std::vector<std::uint8_t> mask) {
    return {"bitwise", [mask = std::move(mask)](nl_msg* m) {
                std::vector<std::uint8_t> zero(mask.size(), 0);
                return put_be32(m, NFTA_BITWISE_SREG, NFT_REG_1) && put_be32(m, NFTA_BITWISE_DREG, NFT_REG_1) &&
                       put_be32(m, NFTA_BITWISE_LEN, std::uint32_t(mask.size())) &&
                       put_data(m, NFTA_BITWISE_MASK, mask.data(), mask.size()) &&
                       put_data(m, NFTA_BITWISE_XOR, zero.data(), zero.size());
            }};
}

Expr verdict(std::int32_t code, std::string chain) {
    return {"immediate", [code, chain = std::move(chain)](nl_msg* m) {
                if (!put_be32(m, NFTA_IMMEDIATE_DREG, NFT_REG_VERDICT)) return false;
                nlattr* data = nla_nest_start(m, NFTA_IMMEDIATE_DATA | NLA_F_NESTED);
                nlattr* v = data ? nla_nest_start(m, NFTA_DATA_VERDICT | NLA_F_NESTED) : nullptr;
                if (!v || !put_be32(m, NFTA_VERDICT_CODE, std::uint32_t(code))) return false;
                if (!chain.empty() && nla_put_string(m, NFTA_VERDICT_CHAIN, chain.c_str()) != 0) return false;
                nla_nest_end(m, v);
                nla_nest_end(m, data);
                return true;
            }};
}

Expr xt_match(std::string name, std::uint8_t revision, std::vector<std::uint8_t> info) {
    return {"match", [name = std::move(name), revision, info = std::move(info)](nl_msg* m) {
                return nla_put_string(m, NFTA_MATCH_NAME, name.c_str()) == 0 && put_be32(m, NFTA_MATCH_REV, revision) &&
                       nla_put(m, NFTA_MATCH_INFO, int(info.size()), info.data()) == 0;
            }};
}

Expr xt_target(std::string name, std::uint8_t revision, std::vector<std::uint8_t> info) {
    return {"target", [name = std::move(name), revision, info = std::move(info)](nl_msg* m) {
                return nla_put_string(m, NFTA_TARGET_NAME, name.c_str()) == 0 && put_be32(m, NFTA_TARGET_REV, revision) &&
                       nla_put(m, NFTA_TARGET_INFO, int(info.size()), info.data()) == 0;
            }};
}

Expr counter() {
    return {"counter", [](nl_msg* m) {
                return nla_put_u64(m, NFTA_COUNTER_BYTES, 0) == 0 && nla_put_u64(m, NFTA_COUNTER_PACKETS, 0) == 0;
            }};
}

Exprs match_address(Family table, bool source, const net::IpNet& net, bool negated) {
    bool v4 = net.ip.is_v4();
    Exprs e;
    if (table == Family::inet) e.push_back(load_meta(NFT_META_NFPROTO)), e.push_back(compare(false, {std::uint8_t(v4 ? NFPROTO_IPV4 : NFPROTO_IPV6)}));
    std::uint32_t offset = v4 ? (source ? 12 : 16) : (source ? 8 : 24);
    std::uint32_t len = v4 ? 4 : 16;
    e.push_back(load_payload(NFT_PAYLOAD_NETWORK_HEADER, offset, len));
    auto value = net.network().wire_bytes();
    if (net.prefix < int(len * 8)) {
        std::vector<std::uint8_t> mask(len, 0);
        for (int i = 0; i < net.prefix; ++i) mask[std::size_t(i / 8)] |= std::uint8_t(0x80 >> (i % 8));
        e.push_back(mask_with(std::move(mask)));
    }
    e.push_back(compare(negated, std::move(value)));
    return e;
}

Exprs match_dport(std::uint8_t l4proto, std::uint16_t port) {
    return {load_meta(NFT_META_L4PROTO), compare(false, {l4proto}), load_payload(NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2),
            compare(false, port_bytes(port))};
}

// A u32 as the kernel's registers hold marks, states and address types: host order.
std::vector<std::uint8_t> host_u32(std::uint32_t v) {
    std::vector<std::uint8_t> out(4);
    std::memcpy(out.data(), &v, 4);
    return out;
}

Exprs match_local_destination(bool negated, bool on_iif) {
    Expr fib{"fib", [on_iif](nl_msg* m) {
                 return put_be32(m, NFTA_FIB_DREG, NFT_REG_1) && put_be32(m, NFTA_FIB_RESULT, NFT_FIB_RESULT_ADDRTYPE) &&
                        put_be32(m, NFTA_FIB_FLAGS, NFTA_FIB_F_DADDR | (on_iif ? NFTA_FIB_F_IIF : 0));
             }};
    return {fib, compare(negated, host_u32(RTN_LOCAL))};
}

Exprs match_ether_source(const std::array<std::uint8_t, 6>& mac) {
    return {load_payload(NFT_PAYLOAD_LL_HEADER, 6, 6), compare(false, std::vector<std::uint8_t>(mac.begin(), mac.end()))};
}

Exprs match_iface(bool in, std::string_view name, bool negated) {
    std::vector<std::uint8_t> value;
    if (name.ends_with('*')) {
        value.assign(name.begin(), name.end() - 1);
    } else {
        value.assign(16, 0);  // IFNAMSIZ, zero-padded: the whole name
        std::copy(name.begin(), name.begin() + std::min<std::size_t>(name.size(), 15), value.begin());
    }
    return {load_meta(in ? NFT_META_IIFNAME : NFT_META_OIFNAME), compare(negated, std::move(value))};
}

namespace {

Expr load_ct(std::uint32_t key) {
    return {"ct", [key](nl_msg* m) { return put_be32(m, NFTA_CT_DREG, NFT_REG_1) && put_be32(m, NFTA_CT_KEY, key); }};
}

// register 1 = (register 1 & ~bits) ^ bits: the bits set, the others kept.
Expr set_bits(std::uint32_t bits) {
    return {"bitwise", [bits](nl_msg* m) {
                auto mask = host_u32(~bits), x = host_u32(bits);
                return put_be32(m, NFTA_BITWISE_SREG, NFT_REG_1) && put_be32(m, NFTA_BITWISE_DREG, NFT_REG_1) &&
                       put_be32(m, NFTA_BITWISE_LEN, 4) && put_data(m, NFTA_BITWISE_MASK, mask.data(), 4) &&
                       put_data(m, NFTA_BITWISE_XOR, x.data(), 4);
            }};
}

}  // namespace

Exprs match_ct_none_of(std::uint32_t key, std::uint32_t mask) {
    return {load_ct(key), mask_with(host_u32(mask)), compare(false, host_u32(0))};
}

Exprs match_ct_any_of(std::uint32_t key, std::uint32_t mask) {
    return {load_ct(key), mask_with(host_u32(mask)), compare(true, host_u32(0))};
}

Exprs match_ct_mark_has(std::uint32_t bits) {
    return {load_ct(NFT_CT_MARK), mask_with(host_u32(bits)), compare(false, host_u32(bits))};
}

Exprs set_ct_mark_bits(std::uint32_t bits) {
    Expr store{"ct", [](nl_msg* m) { return put_be32(m, NFTA_CT_SREG, NFT_REG_1) && put_be32(m, NFTA_CT_KEY, NFT_CT_MARK); }};
    return {load_ct(NFT_CT_MARK), set_bits(bits), store};
}

Exprs set_meta_mark_bits(std::uint32_t bits) {
    Expr store{"meta", [](nl_msg* m) { return put_be32(m, NFTA_META_SREG, NFT_REG_1) && put_be32(m, NFTA_META_KEY, NFT_META_MARK); }};
    return {load_meta(NFT_META_MARK), set_bits(bits), store};
}

Exprs verdict_accept() { return {verdict(NF_ACCEPT)}; }
Exprs verdict_return() { return {verdict(NFT_RETURN)}; }
Exprs verdict_drop() { return {verdict(NF_DROP)}; }
Exprs verdict_jump(std::string_view chain) { return {verdict(NFT_JUMP, std::string(chain))}; }
Exprs verdict_goto(std::string_view chain) { return {verdict(NFT_GOTO, std::string(chain))}; }
Exprs masquerade() { return {Expr{"masq", [](nl_msg*) { return true; }}}; }

Exprs dnat_to(const net::IpAddr& ip, std::uint16_t port) {
    std::uint32_t family = ip.is_v4() ? NFPROTO_IPV4 : NFPROTO_IPV6;
    Expr nat{"nat", [family](nl_msg* m) {
                 return put_be32(m, NFTA_NAT_TYPE, NFT_NAT_DNAT) && put_be32(m, NFTA_NAT_FAMILY, family) &&
                        put_be32(m, NFTA_NAT_REG_ADDR_MIN, NFT_REG_1) && put_be32(m, NFTA_NAT_REG_PROTO_MIN, NFT_REG_2);
             }};
    return {immediate(NFT_REG_1, ip.wire_bytes()), immediate(NFT_REG_2, port_bytes(port)), nat};
}

Exprs snat_to(const net::IpAddr& ip, bool random_fully) {
    std::uint32_t family = ip.is_v4() ? NFPROTO_IPV4 : NFPROTO_IPV6;
    Expr nat{"nat", [family, random_fully](nl_msg* m) {
                 return put_be32(m, NFTA_NAT_TYPE, NFT_NAT_SNAT) && put_be32(m, NFTA_NAT_FAMILY, family) &&
                        put_be32(m, NFTA_NAT_REG_ADDR_MIN, NFT_REG_1) &&
                        (!random_fully || put_be32(m, NFTA_NAT_FLAGS, NF_NAT_RANGE_PROTO_RANDOM_FULLY));
             }};
    return {immediate(NFT_REG_1, ip.wire_bytes()), nat};
}

nl_msg* Batch::start(int type, int flags, Family f) {
    MsgPtr msg = new_message(type, NLM_F_REQUEST | flags, f);
    if (!msg) {
        oom_ = true;
        return nullptr;
    }
    msgs_.push_back(std::move(msg));
    return msgs_.back().get();
}

void Batch::add_table(Family f, std::string_view table, std::string_view comment) {
    nl_msg* m = start(NFT_MSG_NEWTABLE, NLM_F_CREATE, f);
    if (m && (nla_put_string(m, NFTA_TABLE_NAME, std::string(table).c_str()) != 0 || !put_comment(m, NFTA_TABLE_USERDATA, comment)))
        oom_ = true;
}

void Batch::add_chain(Family f, std::string_view table, std::string_view chain, const std::optional<Hook>& hook,
                      std::string_view comment) {
    nl_msg* m = start(NFT_MSG_NEWCHAIN, NLM_F_CREATE, f);
    if (!m) return;
    bool ok = nla_put_string(m, NFTA_CHAIN_TABLE, std::string(table).c_str()) == 0 &&
              nla_put_string(m, NFTA_CHAIN_NAME, std::string(chain).c_str()) == 0;
    if (ok && hook) {
        nlattr* h = nla_nest_start(m, NFTA_CHAIN_HOOK | NLA_F_NESTED);
        ok = h && put_be32(m, NFTA_HOOK_HOOKNUM, hook->hooknum) && put_be32(m, NFTA_HOOK_PRIORITY, std::uint32_t(hook->priority));
        if (ok) nla_nest_end(m, h);
        ok = ok && nla_put_string(m, NFTA_CHAIN_TYPE, hook->type.c_str()) == 0;
        if (hook->accept_policy) ok = ok && put_be32(m, NFTA_CHAIN_POLICY, NF_ACCEPT);
    }
    if (!ok || !put_comment(m, NFTA_CHAIN_USERDATA, comment)) oom_ = true;
}

void Batch::flush_chain(Family f, std::string_view table, std::string_view chain) {
    deletes_ = true;
    nl_msg* m = start(NFT_MSG_DELRULE, 0, f);
    if (m && (nla_put_string(m, NFTA_RULE_TABLE, std::string(table).c_str()) != 0 ||
              nla_put_string(m, NFTA_RULE_CHAIN, std::string(chain).c_str()) != 0))
        oom_ = true;
}

void Batch::delete_table(Family f, std::string_view table) {
    deletes_ = true;
    nl_msg* m = start(NFT_MSG_DELTABLE, 0, f);
    if (m && nla_put_string(m, NFTA_TABLE_NAME, std::string(table).c_str()) != 0) oom_ = true;
}

void Batch::delete_chain(Family f, std::string_view table, std::string_view chain) {
    deletes_ = true;
    nl_msg* m = start(NFT_MSG_DELCHAIN, 0, f);
    if (m && (nla_put_string(m, NFTA_CHAIN_TABLE, std::string(table).c_str()) != 0 ||
              nla_put_string(m, NFTA_CHAIN_NAME, std::string(chain).c_str()) != 0))
        oom_ = true;
}

void Batch::add_rule(Family f, std::string_view table, std::string_view chain, const Exprs& exprs, std::string_view comment,
                     const RulePlacement& placement) {
    nl_msg* m = start(NFT_MSG_NEWRULE, NLM_F_CREATE | (placement.at_top ? 0 : NLM_F_APPEND) | (echo_ ? NLM_F_ECHO : 0), f);
    if (!m) return;
    bool ok = nla_put_string(m, NFTA_RULE_TABLE, std::string(table).c_str()) == 0 &&
              nla_put_string(m, NFTA_RULE_CHAIN, std::string(chain).c_str()) == 0;
    nlattr* list = ok ? nla_nest_start(m, NFTA_RULE_EXPRESSIONS | NLA_F_NESTED) : nullptr;
    ok = list != nullptr;
    for (auto& e : exprs) {
        nlattr* elem = ok ? nla_nest_start(m, NFTA_LIST_ELEM | NLA_F_NESTED) : nullptr;
        ok = elem && nla_put_string(m, NFTA_EXPR_NAME, e.name.c_str()) == 0;
        nlattr* data = ok ? nla_nest_start(m, NFTA_EXPR_DATA | NLA_F_NESTED) : nullptr;
        ok = data && e.write(m);
        if (!ok) break;
        nla_nest_end(m, data);
        nla_nest_end(m, elem);
    }
    if (ok) nla_nest_end(m, list);
    if (ok && placement.compat_proto) {
        nlattr* compat = nla_nest_start(m, NFTA_RULE_COMPAT | NLA_F_NESTED);
        ok = compat && put_be32(m, NFTA_RULE_COMPAT_PROTO, *placement.compat_proto) && put_be32(m, NFTA_RULE_COMPAT_FLAGS, 0);
        if (ok) nla_nest_end(m, compat);
    }
    if (!ok || !put_comment(m, NFTA_RULE_USERDATA, comment)) oom_ = true;
}

void Batch::delete_rule(Family f, std::string_view table, std::string_view chain, std::uint64_t handle) {
    deletes_ = true;
    nl_msg* m = start(NFT_MSG_DELRULE, 0, f);
    if (m && (nla_put_string(m, NFTA_RULE_TABLE, std::string(table).c_str()) != 0 ||
              nla_put_string(m, NFTA_RULE_CHAIN, std::string(chain).c_str()) != 0 ||
              nla_put_u64(m, NFTA_RULE_HANDLE, htobe64(handle)) != 0))
        oom_ = true;
}

namespace {
std::optional<ListedRule> decode_rule(nlmsghdr* h);  // below, with the readers of rules
}  // namespace

Status Batch::commit(std::string_view what) {
    if (oom_) return fail(std::string(what) + ": out of memory");
    if (msgs_.empty()) return {};
    CNI_TRY_ASSIGN(auto sk, connect());
    // BEGIN, the messages, END, in one datagram; the messages are numbered 1..n.
    // BATCH_BEGIN carries the generation the transaction was built at, when it has one: the
    // kernel then refuses the whole batch with ERESTART if another transaction came in between.
    auto marker = [](int type, std::uint32_t seq, std::optional<std::uint32_t> genid) {
        struct {
            nlmsghdr h;
            nfgenmsg g;
            nlattr a;
            std::uint32_t genid;
        } msg{};
        msg.h.nlmsg_len = NLMSG_LENGTH(sizeof(nfgenmsg)) + (genid ? NLA_HDRLEN + sizeof(std::uint32_t) : 0);
        msg.h.nlmsg_type = std::uint16_t(type);
        msg.h.nlmsg_flags = NLM_F_REQUEST;
        msg.h.nlmsg_seq = seq;
        msg.g.nfgen_family = AF_UNSPEC;
        msg.g.version = NFNETLINK_V0;
        msg.g.res_id = htons(NFNL_SUBSYS_NFTABLES);
        msg.a.nla_len = NLA_HDRLEN + sizeof(std::uint32_t);
        msg.a.nla_type = NFNL_BATCH_GENID;
        msg.genid = htonl(genid.value_or(0));
        return std::string(reinterpret_cast<const char*>(&msg), NLMSG_ALIGN(msg.h.nlmsg_len));
    };
    std::string buf = marker(NFNL_MSG_BATCH_BEGIN, 0, generation_);
    std::uint32_t seq = 0;
    for (auto& m : msgs_) {
        nlmsghdr* h = nlmsg_hdr(m.get());
        h->nlmsg_seq = ++seq;
        h->nlmsg_pid = 0;
        if (seq == msgs_.size()) h->nlmsg_flags |= NLM_F_ACK;
        buf.append(reinterpret_cast<const char*>(h), NLMSG_ALIGN(h->nlmsg_len));
    }
    buf += marker(NFNL_MSG_BATCH_END, seq + 1, std::nullopt);
    if (int err = nl_sendto(sk.get(), buf.data(), buf.size()); err < 0)
        return fail(std::string(what) + ": " + nl_geterror(err));
    // The kernel answers every failed message, in order, and the last one (acked) even when
    // the transaction was aborted; a refused BEGIN (no nf_tables) is the only answer then.
    // Waiting for the last message's answer therefore sees all errors, whatever the size of
    // the transaction (no ack per message to fill the receive buffer).
    std::string first_error;
    bool changed_meanwhile = false;
    added_.clear();
    CNI_TRY(read_answers(sk.get(), what, [&](nlmsghdr* h) {
        if (h->nlmsg_type == ((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWRULE)) {  // an echo (echo_added_rules)
            if (auto r = decode_rule(h)) added_.push_back({std::move(r->chain), r->handle});
            return false;
        }
        if (h->nlmsg_type != NLMSG_ERROR) return false;
        auto* e = static_cast<nlmsgerr*>(nlmsg_data(h));
        if (e->error != 0 && first_error.empty()) first_error = errno_message(-e->error, ext_ack_message(h));
        if (e->error == -ERESTART && h->nlmsg_seq == 0) changed_meanwhile = true;
        return h->nlmsg_seq == seq || h->nlmsg_seq == 0 || h->nlmsg_seq == seq + 1;
    }));
    if (changed_meanwhile)
        return fail(code::try_again_later, std::string(what) + ": the ruleset changed while the transaction was built");
    if (!first_error.empty()) {
        added_.clear();  // nothing was added
        return fail(std::string(what) + ": " + first_error);
    }
    if (deletes_) libnl::note_netfilter_deletion();
    return {};
}

namespace {

// A rule as the kernel sends it (NFT_MSG_NEWRULE, in a dump or an answer), decoded; nullopt
// without its chain or handle.
std::optional<ListedRule> decode_rule(nlmsghdr* h) {
    nlattr* tb[NFTA_RULE_MAX + 1];
    if (nlmsg_parse(h, sizeof(nfgenmsg), tb, NFTA_RULE_MAX, nullptr) < 0 || !tb[NFTA_RULE_CHAIN] || !tb[NFTA_RULE_HANDLE])
        return std::nullopt;
    ListedRule r;
    r.chain = libnl::attr_string(tb[NFTA_RULE_CHAIN]);
    r.handle = be64toh(nla_get_u64(tb[NFTA_RULE_HANDLE]));
    if (tb[NFTA_RULE_USERDATA]) r.comment = comment_of(tb[NFTA_RULE_USERDATA]);
    auto family = Family(static_cast<nfgenmsg*>(nlmsg_data(h))->nfgen_family);
    if (tb[NFTA_RULE_EXPRESSIONS]) detail::decode_expressions(tb[NFTA_RULE_EXPRESSIONS], family, r);
    return r;
}

template <class Sink>
int on_rule(nl_msg* msg, void* arg) {
    if (auto r = decode_rule(nlmsg_hdr(msg))) static_cast<Sink*>(arg)->push_back(std::move(*r));
    return NL_OK;
}

// Chain dumps ignore a table filter: each chain names its table, "table/chain" here.
int on_chain(nl_msg* msg, void* arg) {
    nlattr* tb[NFTA_CHAIN_MAX + 1];
    if (nlmsg_parse(nlmsg_hdr(msg), sizeof(nfgenmsg), tb, NFTA_CHAIN_MAX, nullptr) < 0 || !tb[NFTA_CHAIN_NAME] ||
        !tb[NFTA_CHAIN_TABLE])
        return NL_OK;
    static_cast<std::vector<std::string>*>(arg)->push_back(std::string(libnl::attr_string(tb[NFTA_CHAIN_TABLE])) + "/" +
                                                           libnl::attr_string(tb[NFTA_CHAIN_NAME]));
    return NL_OK;
}

// How often a dump is taken again when other transactions keep committing during it.
constexpr int kDumpAttempts = 16;

// A dump of one table's objects (`type` GETRULE or GETCHAIN, filtered by `table_attr`, and by
// `chain_attr` = `chain` when both are given), each decoded by `on_object` into `out` (which has
// push_back and clear); nothing when the table (or chain) does not exist. When another
// transaction commits during the dump, the kernel marks it interrupted (NLM_F_DUMP_INTR: what
// came may mix two generations): `out` is cleared and the dump taken again; a Batch bound to the
// generation read before it is then refused at commit, and transact() reads and builds again.
template <class Out>
Status dump_table(Out& out, Family f, std::string_view table, int type, int table_attr, nl_recvmsg_msg_cb_t on_object,
                  std::string_view what, int chain_attr = 0, std::string_view chain = {}) {
    std::string msg = "nftables: listing the " + std::string(what) + " of table " + std::string(table);
    if (chain_attr) msg += ", chain " + std::string(chain);
    for (int attempt = 1;; ++attempt) {
        CNI_TRY_ASSIGN(auto sk, connect());
        out.clear();
        nl_socket_modify_cb(sk.get(), NL_CB_VALID, NL_CB_CUSTOM, on_object, &out);
        auto req = new_message(type, NLM_F_DUMP, f);
        if (!req || nla_put_string(req.get(), table_attr, std::string(table).c_str()) != 0 ||
            (chain_attr && nla_put_string(req.get(), chain_attr, std::string(chain).c_str()) != 0))
            return fail("nftables: out of memory");
        if (int err = nl_send_auto(sk.get(), req.get()); err < 0) return fail(msg + ": " + nl_geterror(err));
        int err = nl_recvmsgs_default(sk.get());
        if (err == -NLE_OBJ_NOTFOUND) {  // no such table or chain
            out.clear();
            return {};
        }
        if (err == -NLE_DUMP_INTR && attempt < kDumpAttempts) continue;
        if (err == -NLE_DUMP_INTR)
            return fail(code::try_again_later, msg + ": the ruleset changed during each of " + std::to_string(kDumpAttempts) + " dumps");
        if (err < 0) return fail(msg + ": " + nl_geterror(err));
        return {};
    }
}

// Hands each decoded rule on instead of keeping it.
struct RuleVisitor {
    const std::function<void(ListedRule&&)>& each;
    const std::function<void()>& restart;
    void push_back(ListedRule&& r) const { each(std::move(r)); }
    void clear() const { restart(); }
};

// Whether the GET request `type` for the object named by `attrs` (attribute, value) answers:
// false when it, its table or this family's tables do not exist. `on_answer` reads the answer.
Result<bool> exists(Family f, int type, std::initializer_list<std::pair<int, std::string_view>> attrs, const std::string& what,
                    nl_recvmsg_msg_cb_t on_answer = nullptr, void* answer = nullptr) {
    CNI_TRY_ASSIGN(auto sk, connect());
    if (on_answer) nl_socket_modify_cb(sk.get(), NL_CB_VALID, NL_CB_CUSTOM, on_answer, answer);
    auto req = new_message(type, 0, f);
    if (!req) return fail("nftables: out of memory");
    for (auto& [attr, value] : attrs)
        if (nla_put_string(req.get(), attr, std::string(value).c_str()) != 0) return fail("nftables: out of memory");
    if (int err = nl_send_auto(sk.get(), req.get()); err < 0) return fail(what + ": " + nl_geterror(err));
    int err = nl_recvmsgs_default(sk.get());
    if (err == -NLE_OBJ_NOTFOUND || err == -NLE_AF_NOSUPPORT || err == -NLE_OPNOTSUPP) return false;
    if (err < 0) return fail(what + ": " + nl_geterror(err));
    return true;
}

}  // namespace

Result<std::vector<ListedRule>> list_rules(Family f, std::string_view table) {
    std::vector<ListedRule> out;
    CNI_TRY(dump_table(out, f, table, NFT_MSG_GETRULE, NFTA_RULE_TABLE, on_rule<std::vector<ListedRule>>, "rules"));
    return out;
}

namespace {
std::uint64_t chain_dumps = 0;    // this process's, for chain_dumps_taken()
std::uint64_t handle_probes = 0;  // and for handle_probes_taken()
}  // namespace

std::uint64_t chain_dumps_taken() { return chain_dumps; }
std::uint64_t handle_probes_taken() { return handle_probes; }

Status for_each_rule(Family f, std::string_view table, std::string_view chain, const std::function<void(ListedRule&&)>& each,
                     const std::function<void()>& restart) {
    ++chain_dumps;
    RuleVisitor visitor{each, restart};
    return dump_table(visitor, f, table, NFT_MSG_GETRULE, NFTA_RULE_TABLE, on_rule<RuleVisitor>, "rules", NFTA_RULE_CHAIN, chain);
}

Result<std::vector<std::string>> list_chains(Family f, std::string_view table) {
    std::vector<std::string> all;
    CNI_TRY(dump_table(all, f, table, NFT_MSG_GETCHAIN, NFTA_CHAIN_TABLE, on_chain, "chains"));
    std::vector<std::string> names;
    std::string prefix = std::string(table) + "/";
    for (auto& c : all)
        if (c.starts_with(prefix)) names.push_back(c.substr(prefix.size()));
    return names;
}

Result<std::optional<ChainInfo>> chain_info(Family f, std::string_view table, std::string_view chain) {
    const std::string what = "nftables: looking up chain " + std::string(chain) + " in table " + std::string(table);
    std::optional<ChainInfo> info;
    auto on_info = [](nl_msg* msg, void* arg) -> int {
        nlattr* tb[NFTA_CHAIN_MAX + 1];
        if (nlmsg_parse(nlmsg_hdr(msg), sizeof(nfgenmsg), tb, NFTA_CHAIN_MAX, nullptr) == 0 && tb[NFTA_CHAIN_HANDLE]) {
            ChainInfo i{be64toh(nla_get_u64(tb[NFTA_CHAIN_HANDLE])), 0};
            if (tb[NFTA_CHAIN_USE]) i.use = ntohl(nla_get_u32(tb[NFTA_CHAIN_USE]));
            if (tb[NFTA_CHAIN_POLICY]) i.accepts = ntohl(nla_get_u32(tb[NFTA_CHAIN_POLICY])) == NF_ACCEPT;
            *static_cast<std::optional<ChainInfo>*>(arg) = i;
        }
        return NL_OK;
    };
    CNI_TRY_ASSIGN(bool found, exists(f, NFT_MSG_GETCHAIN, {{NFTA_CHAIN_TABLE, table}, {NFTA_CHAIN_NAME, chain}}, what, on_info, &info));
    if (!found) return std::optional<ChainInfo>{};
    if (!info) return fail(what + ": the kernel's answer has no handle");
    return info;
}

Result<std::vector<ListedRule>> rules_by_handle(Family f, std::string_view table, std::string_view chain,
                                                std::span<const std::uint64_t> handles) {
    std::vector<ListedRule> out;
    if (handles.empty()) return out;
    ++handle_probes;
    const std::string what = "nftables: reading rules of chain " + std::string(chain) + " in table " + std::string(table);
    CNI_TRY_ASSIGN(auto sk, connect());
    // One GETRULE per handle, numbered 1..n, in one datagram: the kernel answers each in turn with
    // the rule or an error, and acks the last one as well.
    std::string buf;
    std::uint32_t seq = 0;
    for (std::uint64_t handle : handles) {
        auto req = new_message(NFT_MSG_GETRULE, NLM_F_REQUEST | (++seq == handles.size() ? NLM_F_ACK : 0), f);
        if (!req || nla_put_string(req.get(), NFTA_RULE_TABLE, std::string(table).c_str()) != 0 ||
            nla_put_string(req.get(), NFTA_RULE_CHAIN, std::string(chain).c_str()) != 0 ||
            nla_put_u64(req.get(), NFTA_RULE_HANDLE, htobe64(handle)) != 0)
            return fail("nftables: out of memory");
        nlmsghdr* h = nlmsg_hdr(req.get());
        h->nlmsg_seq = seq;
        h->nlmsg_pid = 0;
        buf.append(reinterpret_cast<const char*>(h), NLMSG_ALIGN(h->nlmsg_len));
    }
    if (int err = nl_sendto(sk.get(), buf.data(), buf.size()); err < 0) return fail(what + ": " + nl_geterror(err));
    std::string error;
    CNI_TRY(read_answers(sk.get(), what, [&](nlmsghdr* h) {
        if (h->nlmsg_type != NLMSG_ERROR) {
            if (auto r = decode_rule(h)) out.push_back(std::move(*r));
            return false;
        }
        int e = static_cast<nlmsgerr*>(nlmsg_data(h))->error;
        if (e != 0 && e != -ENOENT && error.empty()) error = errno_message(-e, ext_ack_message(h));
        return h->nlmsg_seq == seq;
    }));
    if (!error.empty()) return fail(what + ": " + error);
    return out;
}

Result<bool> has_table(Family f, std::string_view table) {
    return exists(f, NFT_MSG_GETTABLE, {{NFTA_TABLE_NAME, table}}, "nftables: looking up table " + std::string(table));
}

Result<std::optional<std::uint32_t>> table_use(Family f, std::string_view table) {
    const std::string what = "nftables: looking up table " + std::string(table);
    std::optional<std::uint32_t> use;
    auto on_table = [](nl_msg* msg, void* arg) -> int {
        nlattr* tb[NFTA_TABLE_MAX + 1];
        if (nlmsg_parse(nlmsg_hdr(msg), sizeof(nfgenmsg), tb, NFTA_TABLE_MAX, nullptr) == 0 && tb[NFTA_TABLE_USE])
            *static_cast<std::optional<std::uint32_t>*>(arg) = ntohl(nla_get_u32(tb[NFTA_TABLE_USE]));
        return NL_OK;
    };
    CNI_TRY_ASSIGN(bool found, exists(f, NFT_MSG_GETTABLE, {{NFTA_TABLE_NAME, table}}, what, on_table, &use));
    if (!found) return std::optional<std::uint32_t>{};
    if (!use) return fail(what + ": the kernel's answer has no use count");
    return use;
}

bool has_xt_revision(Family f, bool target, std::string_view name, std::uint8_t revision) {
    auto sk = connect();
    if (!sk) return false;
    MsgPtr req(nlmsg_alloc_simple((NFNL_SUBSYS_NFT_COMPAT << 8) | NFNL_MSG_COMPAT_GET, NLM_F_REQUEST));
    nfgenmsg g{};
    g.nfgen_family = static_cast<std::uint8_t>(f);
    g.version = NFNETLINK_V0;
    if (!req || nlmsg_append(req.get(), &g, sizeof g, NLMSG_ALIGNTO) != 0 ||
        nla_put_string(req.get(), NFTA_COMPAT_NAME, std::string(name).c_str()) != 0 ||
        !put_be32(req.get(), NFTA_COMPAT_REV, revision) || !put_be32(req.get(), NFTA_COMPAT_TYPE, target ? 1 : 0))
        return false;
    if (nl_send_auto(sk->get(), req.get()) < 0) return false;
    // The answer (flagged NLM_F_MULTI, without a DONE) and then the ack, or only an error: no
    // such revision. libnl's receive loop would wait for the DONE, so the ack is looked for here.
    const std::uint32_t seq = nlmsg_hdr(req.get())->nlmsg_seq;
    std::optional<bool> answer;
    auto read = read_answers(sk->get(), "nftables: probing a revision", [&](nlmsghdr* h) {
        if (h->nlmsg_type == NLMSG_ERROR && h->nlmsg_seq == seq) answer = static_cast<nlmsgerr*>(nlmsg_data(h))->error == 0;
        return answer.has_value();
    });
    return read && answer.value_or(false);
}

Result<std::uint32_t> generation() {
    CNI_TRY_ASSIGN(auto sk, connect());
    auto req = new_message(NFT_MSG_GETGEN, 0, Family{});
    if (!req) return fail("nftables: out of memory");
    std::optional<std::uint32_t> gen;
    auto on_gen = [](nl_msg* msg, void* arg) -> int {
        nlattr* tb[NFTA_GEN_MAX + 1];
        if (nlmsg_parse(nlmsg_hdr(msg), sizeof(nfgenmsg), tb, NFTA_GEN_MAX, nullptr) == 0 && tb[NFTA_GEN_ID])
            *static_cast<std::optional<std::uint32_t>*>(arg) = ntohl(nla_get_u32(tb[NFTA_GEN_ID]));
        return NL_OK;
    };
    nl_socket_modify_cb(sk.get(), NL_CB_VALID, NL_CB_CUSTOM, on_gen, &gen);
    const char* what = "nftables: reading the ruleset's generation: ";
    if (int err = nl_send_auto(sk.get(), req.get()); err < 0) return fail(what + std::string(nl_geterror(err)));
    if (int err = nl_recvmsgs_default(sk.get()); err < 0) return fail(what + std::string(nl_geterror(err)));
    if (!gen) return fail(what + std::string("the kernel gave none"));
    return *gen;
}

bool available() { return generation().has_value(); }  // an error without nf_tables

}  // namespace cni::fw::nft
