// SPDX-License-Identifier: Apache-2.0
// The family-independent half of IptTable, written once over a trait (IPv4: libip4tc and
// ipt_entry; IPv6: libip6tc and ip6t_entry). Each family's .cpp includes only its own libiptc
// header, as iptables itself does, and instantiates this template.
#pragma once

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/netfilter/nf_nat.h>
#include <linux/netfilter/x_tables.h>
#include <linux/netfilter/xt_addrtype.h>
#include <linux/netfilter/xt_comment.h>
#include <linux/netfilter/xt_connmark.h>
#include <linux/netfilter/xt_conntrack.h>
#include <linux/netfilter/xt_iprange.h>
#include <linux/netfilter/xt_mark.h>
#include <linux/netfilter/xt_multiport.h>
#include <linux/netfilter/xt_tcpudp.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "core/fw/iptables.hpp"
#include "core/fw/nftables.hpp"
#include "core/fw/xt_sctp.hpp"
#include "core/os/unique_fd.hpp"

namespace cni::fw::detail {

inline int prefix_of(const unsigned char* mask, int bytes) {
    int n = 0;
    for (int i = 0; i < bytes; ++i) n += __builtin_popcount(mask[i]);
    return n;
}

// Trait T provides: Handle, Entry, kBytes (4/16), init/free/commit/is_chain/create_chain/
// flush/delete_chain/first/next/get_target/append/insert/delete_num/strerror, address,
// protocol and interface accessors, the inverse flags, the goto flag (go_to), the header's
// bytes (header, kHeaderSize), the MASQUERADE payload, and the socket family/level/options that
// ask the kernel which match and target revisions it has.
// Asks the kernel whether it has revision `rev` of the xtables target (or match) `name`.
using RevisionProbe = std::function<bool(bool target, const char* name, std::uint8_t rev)>;

// The targets whose parameters IptRule::target_args holds.
inline bool has_target_args(const std::string& target) {
    return target == "MARK" || target == "DNAT" || target == "SNAT" || target == "CONNMARK";
}

template <class T>
struct Table {
    typename T::Handle* h = nullptr;
    std::string name;
    std::map<std::string, std::uint8_t> revisions;
    RevisionProbe probe;  // empty: the legacy getsockopt, as iptables-legacy asks

    ~Table() {
        if (h) T::free(h);
    }

    Error err(std::string_view what) const {
        return Error{code::internal, std::string(what) + ": " + T::strerror(errno), {}};
    }

    static net::IpNet to_net(const unsigned char* addr, const unsigned char* mask) {
        std::array<std::uint8_t, 16> b{};
        if (T::kBytes == 4) {
            b[10] = b[11] = 0xff;
            std::memcpy(&b[12], addr, 4);
        } else {
            std::memcpy(b.data(), addr, 16);
        }
        int bits = T::kBytes * 8;
        return net::IpNet{net::IpAddr::from_bytes(b), prefix_of(mask, T::kBytes), bits};
    }

    static void from_net(const net::IpNet& n, unsigned char* addr, unsigned char* mask) {
        net::IpNet net = n.masked();
        const auto& b = net.ip.bytes();
        std::memcpy(addr, T::kBytes == 4 ? &b[12] : b.data(), T::kBytes);
        int ones = net.prefix;
        for (int i = 0; i < T::kBytes; ++i, ones -= 8)
            mask[i] = ones >= 8 ? 0xff : ones <= 0 ? 0 : static_cast<unsigned char>(0xff << (8 - ones));
    }

    // The entry's address, protocol and interface part, as the iptables binary fills it.
    static void write_header(const IptRule& r, typename T::Entry* e) {
        if (r.src) from_net(*r.src, T::src(e), T::smsk(e));
        if (r.dst) from_net(*r.dst, T::dst(e), T::dmsk(e));
        if (r.src_inverted) T::invflags(e) |= T::kInvSrc;
        if (r.dst_inverted) T::invflags(e) |= T::kInvDst;
        if (r.proto) T::set_proto(e, r.proto);
        set_iface(r.in_iface, T::iniface(e), T::iniface_mask(e));
        set_iface(r.out_iface, T::outiface(e), T::outiface_mask(e));
        if (r.in_inverted) T::invflags(e) |= T::kInvIn;
        if (r.out_inverted) T::invflags(e) |= T::kInvOut;
    }

    // The kernel form of a rule, laid out as the iptables binary lays it out: the entry, the
    // comment match, the other matches in order, the target.
    std::vector<unsigned char> build(const IptRule& r) {
        std::vector<Payload> matches;
        if (!r.comment.empty()) {
            Payload c{"comment", 0, std::vector<unsigned char>(sizeof(xt_comment_info), 0)};
            std::strncpy(reinterpret_cast<xt_comment_info*>(c.data.data())->comment, r.comment.c_str(), XT_MAX_COMMENT_LEN - 1);
            matches.push_back(std::move(c));
        }
        for (auto& m : r.matches) matches.push_back(encode_match(m, r.proto));
        std::optional<Payload> target = encode_target(r);
        const std::size_t entry = XT_ALIGN(sizeof(typename T::Entry));
        std::size_t size = entry;
        for (auto& m : matches) size += XT_ALIGN(sizeof(xt_entry_match) + m.data.size());
        const std::size_t target_off = size;
        size += target ? XT_ALIGN(sizeof(xt_entry_target) + target->data.size()) : XT_ALIGN(sizeof(xt_standard_target));
        std::vector<unsigned char> buf(size, 0);
        auto* e = reinterpret_cast<typename T::Entry*>(buf.data());
        e->target_offset = static_cast<std::uint16_t>(target_off);
        e->next_offset = static_cast<std::uint16_t>(size);
        write_header(r, e);
        std::size_t off = entry;
        for (auto& m : matches) {
            auto* em = reinterpret_cast<xt_entry_match*>(buf.data() + off);
            em->u.match_size = static_cast<std::uint16_t>(XT_ALIGN(sizeof(xt_entry_match) + m.data.size()));
            std::strncpy(em->u.user.name, m.name, sizeof em->u.user.name - 1);
            em->u.user.revision = m.revision;
            std::memcpy(em->data, m.data.data(), m.data.size());
            off += em->u.match_size;
        }
        auto* t = reinterpret_cast<xt_entry_target*>(buf.data() + target_off);
        t->u.target_size = static_cast<std::uint16_t>(size - target_off);
        std::strncpy(t->u.user.name, r.target.c_str(), sizeof t->u.user.name - 1);
        if (target) {
            t->u.user.revision = target->revision;
            std::memcpy(t->data, target->data.data(), target->data.size());
        }
        return buf;
    }

    // The IptRule an entry of `len` bytes stands for, and whether it has anything IptRule cannot
    // express; `target` is its target's name as libiptc resolves it. The entry comes from the
    // kernel, which checked its offsets, but every offset and string is checked again here
    // (tests/fuzz/iptables_rule): a malformed part makes the rule foreign, never a read past it.
    // The header must be byte for byte what write_header makes of the decoded rule: a mask that
    // is no prefix, address bits outside it, an interface mask iptables would not write, or any
    // other flag makes the rule foreign, so a rule is never taken for one it only resembles.
    static IptTable::Listed describe_entry(const typename T::Entry* e, std::size_t len, std::string_view target) {
        using Entry = typename T::Entry;
        IptTable::Listed out;
        static const unsigned char zero[16] = {};
        if (std::memcmp(T::smsk(e), zero, T::kBytes) != 0) out.rule.src = to_net(T::src(e), T::smsk(e));
        if (std::memcmp(T::dmsk(e), zero, T::kBytes) != 0) out.rule.dst = to_net(T::dst(e), T::dmsk(e));
        const auto inv = T::invflags(e);
        out.rule.src_inverted = (inv & T::kInvSrc) != 0;
        out.rule.dst_inverted = (inv & T::kInvDst) != 0;
        out.rule.in_inverted = (inv & T::kInvIn) != 0;
        out.rule.out_inverted = (inv & T::kInvOut) != 0;
        out.rule.proto = T::proto(e);
        out.rule.in_iface.assign(T::iniface(e), ::strnlen(T::iniface(e), IFNAMSIZ));
        out.rule.out_iface.assign(T::outiface(e), ::strnlen(T::outiface(e), IFNAMSIZ));
        Entry canonical;
        std::memset(&canonical, 0, sizeof canonical);
        write_header(out.rule, &canonical);
        if (std::memcmp(T::header(&canonical), T::header(e), T::kHeaderSize) != 0) out.foreign = true;
        out.go_to = T::go_to(e);  // its flag is in the header: foreign too
        out.rule.target = target;
        const std::size_t target_off = e->target_offset;
        if (target_off < sizeof(Entry) || target_off > len || XT_ALIGN(target_off) != target_off) {
            out.foreign = true;
            return out;
        }
        const auto* base = reinterpret_cast<const unsigned char*>(e);
        for (std::size_t off = sizeof(Entry); off < target_off;) {
            const auto* m = reinterpret_cast<const xt_entry_match*>(base + off);
            const std::size_t size = target_off - off < sizeof(xt_entry_match) ? 0 : m->u.match_size;
            if (size < sizeof(xt_entry_match) || size > target_off - off || XT_ALIGN(size) != size) {
                out.foreign = true;
                break;
            }
            const std::string_view name(m->u.user.name, ::strnlen(m->u.user.name, sizeof m->u.user.name));
            if (name == "comment" && out.rule.comment.empty() && out.rule.matches.empty()) {
                const auto* c = reinterpret_cast<const char*>(m->data);
                const std::size_t room = std::min<std::size_t>(XT_MAX_COMMENT_LEN, size - sizeof(xt_entry_match));
                const std::size_t n = ::strnlen(c, room);
                if (n == room) out.foreign = true;  // no terminator: not a comment iptables wrote
                out.rule.comment.assign(c, n);
            } else if (auto known = decode_match(m, out.rule.proto)) {
                out.rule.matches.push_back(*known);
            } else {
                out.foreign = true;
            }
            off += size;
        }
        const auto* t = reinterpret_cast<const xt_entry_target*>(base + target_off);
        const std::size_t size = len - target_off < sizeof(xt_entry_target) ? 0 : t->u.target_size;
        if (size < sizeof(xt_entry_target) || size > len - target_off) {
            out.foreign = true;
        } else if (has_target_args(out.rule.target)) {
            if (auto args = decode_target(t, out.rule.target)) out.rule.target_args = *args;
            else out.foreign = true;
        }
        return out;
    }

    IptTable::Listed describe(const typename T::Entry* e) const {
        const char* target = T::get_target(e, h);
        return describe_entry(e, e->next_offset, target ? target : "");
    }

    // What iptables would pick: the highest revision of `name` (among `known`, highest first)
    // the kernel supports; remembered per table.
    std::uint8_t revision(bool target, const char* name, std::initializer_list<std::uint8_t> known) {
        std::string key = (target ? "t:" : "m:") + std::string(name);
        if (auto it = revisions.find(key); it != revisions.end()) return it->second;
        std::uint8_t pick = *(known.end() - 1);
        if (probe) {
            for (std::uint8_t r : known)
                if (probe(target, name, r)) {
                    pick = r;
                    break;
                }
            return revisions[key] = pick;
        }
        int fd = ::socket(T::kAf, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW);
        if (fd >= 0) {
            for (std::uint8_t r : known) {
                xt_get_revision rev{};
                std::strncpy(rev.name, name, sizeof rev.name - 1);
                rev.revision = r;
                socklen_t len = sizeof rev;
                if (::getsockopt(fd, T::kSol, target ? T::kRevTarget : T::kRevMatch, &rev, &len) == 0) {
                    pick = r;
                    break;
                }
            }
            ::close(fd);
        }
        revisions[key] = pick;
        return pick;
    }

    struct Payload {
        const char* name;
        std::uint8_t revision;
        std::vector<unsigned char> data;
    };

    template <class S>
    static Payload payload(const char* name, std::uint8_t rev, const S& s) {
        Payload p{name, rev, std::vector<unsigned char>(sizeof(S))};
        std::memcpy(p.data.data(), &s, sizeof(S));
        return p;
    }

    static void set_iface(const std::string& name, char* via, unsigned char* mask) {
        if (name.empty()) return;
        std::strncpy(via, name.c_str(), IFNAMSIZ - 1);
        if (name.back() == '+') std::memset(mask, 0xff, name.size() - 1);  // a wildcard, as iptables parses it
        else std::memset(mask, 0xff, std::min<std::size_t>(name.size() + 1, IFNAMSIZ));
    }

    static const char* proto_match(int proto) {
        return proto == IPPROTO_TCP ? "tcp" : proto == IPPROTO_UDP ? "udp" : proto == IPPROTO_SCTP ? "sctp" : "";
    }

    Payload encode_match(const IptMatch& m, int proto) {
        if (auto* mp = std::get_if<MultiportDst>(&m)) {
            xt_multiport_v1 info{};
            info.flags = XT_MULTIPORT_DESTINATION;
            info.count = static_cast<std::uint8_t>(std::min<std::size_t>(mp->ports.size(), XT_MULTI_PORTS));
            for (std::size_t i = 0; i < info.count; ++i) info.ports[i] = mp->ports[i];
            return payload("multiport", 1, info);
        }
        if (auto* dp = std::get_if<DstPort>(&m)) {
            if (proto == IPPROTO_UDP) {
                xt_udp u{};
                u.spts[1] = 0xffff;
                u.dpts[0] = u.dpts[1] = dp->port;
                return payload("udp", 0, u);
            }
            if (proto == IPPROTO_SCTP) {
                xt_sctp_info sc{};  // as libxt_sctp fills it: no source range, "no flag" chunk types
                sc.dpts[0] = sc.dpts[1] = dp->port;
                for (auto& f : sc.flag_info) f.chunktype = 0xff;
                sc.flags = XT_SCTP_DEST_PORTS;
                return payload("sctp", 0, sc);
            }
            xt_tcp t{};
            t.spts[1] = 0xffff;
            t.dpts[0] = t.dpts[1] = dp->port;
            return payload("tcp", 0, t);
        }
        if (auto* at = std::get_if<AddrType>(&m)) {
            xt_addrtype_info_v1 a{};
            a.source = static_cast<std::uint16_t>(at->src);
            a.dest = static_cast<std::uint16_t>(at->dst);
            a.flags = (at->src_inverted ? XT_ADDRTYPE_INVERT_SOURCE : 0) | (at->dst_inverted ? XT_ADDRTYPE_INVERT_DEST : 0) |
                      (at->limit_iface_in ? XT_ADDRTYPE_LIMIT_IFACE_IN : 0) | (at->limit_iface_out ? XT_ADDRTYPE_LIMIT_IFACE_OUT : 0);
            return payload("addrtype", 1, a);
        }
        if (auto* mk = std::get_if<MarkMatch>(&m)) {
            xt_mark_mtinfo1 info{};
            info.mark = mk->mark;
            info.mask = mk->mask;
            info.invert = mk->inverted;
            return payload("mark", 1, info);
        }
        if (auto* ir = std::get_if<IpRange>(&m)) {
            xt_iprange_mtinfo info{};
            auto put = [](const net::IpAddr& ip, nf_inet_addr& to) {
                std::memcpy(&to, T::kBytes == 4 ? &ip.bytes()[12] : ip.bytes().data(), T::kBytes);
            };
            if (ir->src) {
                put(ir->src->first, info.src_min), put(ir->src->second, info.src_max);
                info.flags |= IPRANGE_SRC | (ir->src_inverted ? IPRANGE_SRC_INV : 0);
            }
            if (ir->dst) {
                put(ir->dst->first, info.dst_min), put(ir->dst->second, info.dst_max);
                info.flags |= IPRANGE_DST | (ir->dst_inverted ? IPRANGE_DST_INV : 0);
            }
            return payload("iprange", 1, info);
        }
        const auto& ct = std::get<CtState>(m);
        xt_conntrack_mtinfo3 info{};
        info.match_flags = XT_CONNTRACK_STATE;
        info.state_mask = static_cast<std::uint16_t>(ct.states);
        if (ct.inverted) info.invert_flags = XT_CONNTRACK_STATE;
        std::uint8_t rev = revision(false, "conntrack", {3, 2, 1});
        if (rev == 3) return payload("conntrack", 3, info);
        xt_conntrack_mtinfo2 v2{};  // the same layout up to the port ranges
        std::memcpy(&v2, &info, sizeof v2);
        return payload("conntrack", rev, v2);
    }

    // The match's payload read as S, when it holds at least that many bytes.
    template <class S>
    static bool payload_as(const xt_entry_match* m, S* out) {
        const std::size_t size = m->u.match_size - sizeof(xt_entry_match);
        if (size < sizeof(S)) return false;
        std::memcpy(out, m->data, sizeof(S));
        return true;
    }

    // tcp, udp or sctp (`name`, the protocol's own match) naming one destination port and
    // nothing else.
    static std::optional<IptMatch> decode_dst_port(const xt_entry_match* m, const std::string& name) {
        std::uint16_t spts[2], dpts[2];
        if (name == "tcp") {
            xt_tcp t{};
            if (!payload_as(m, &t) || t.option || t.flg_mask || t.invflags) return std::nullopt;
            std::memcpy(spts, t.spts, sizeof spts), std::memcpy(dpts, t.dpts, sizeof dpts);
        } else if (name == "udp") {
            xt_udp u{};
            if (!payload_as(m, &u) || u.invflags) return std::nullopt;
            std::memcpy(spts, u.spts, sizeof spts), std::memcpy(dpts, u.dpts, sizeof dpts);
        } else {
            xt_sctp_info sc{};
            if (!payload_as(m, &sc) || sc.flags != XT_SCTP_DEST_PORTS || sc.invflags || sc.flag_count) return std::nullopt;
            spts[0] = 0, spts[1] = 0xffff;  // unused without XT_SCTP_SRC_PORTS
            std::memcpy(dpts, sc.dpts, sizeof dpts);
        }
        if (spts[0] != 0 || spts[1] != 0xffff || dpts[0] != dpts[1]) return std::nullopt;
        return DstPort{dpts[0]};
    }

    static std::optional<IptMatch> decode_iprange(const xt_entry_match* m) {
        xt_iprange_mtinfo info{};
        if (!payload_as(m, &info) || (info.flags & ~(IPRANGE_SRC | IPRANGE_DST | IPRANGE_SRC_INV | IPRANGE_DST_INV)))
            return std::nullopt;
        // an inversion without its range: nothing iptables writes
        if (((info.flags & IPRANGE_SRC_INV) && !(info.flags & IPRANGE_SRC)) ||
            ((info.flags & IPRANGE_DST_INV) && !(info.flags & IPRANGE_DST)))
            return std::nullopt;
        auto get = [](const nf_inet_addr& a) {
            std::array<std::uint8_t, 16> b{};
            if (T::kBytes == 4) {
                b[10] = b[11] = 0xff;
                std::memcpy(&b[12], &a, 4);
            } else {
                std::memcpy(b.data(), &a, 16);
            }
            return net::IpAddr::from_bytes(b);
        };
        IpRange out;
        if (info.flags & IPRANGE_SRC) out.src = std::pair{get(info.src_min), get(info.src_max)};
        if (info.flags & IPRANGE_DST) out.dst = std::pair{get(info.dst_min), get(info.dst_max)};
        out.src_inverted = (info.flags & IPRANGE_SRC_INV) != 0;
        out.dst_inverted = (info.flags & IPRANGE_DST_INV) != 0;
        return out;
    }

    static std::optional<IptMatch> decode_match(const xt_entry_match* m, int proto) {
        const std::string name(m->u.user.name, ::strnlen(m->u.user.name, sizeof m->u.user.name));
        const std::uint8_t rev = m->u.user.revision;
        if (name == "multiport" && rev == 1) {
            xt_multiport_v1 info{};
            if (!payload_as(m, &info) || info.flags != XT_MULTIPORT_DESTINATION || info.invert) return std::nullopt;
            MultiportDst out;
            for (int i = 0; i < info.count && i < XT_MULTI_PORTS; ++i) {
                if (info.pflags[i]) return std::nullopt;
                out.ports.push_back(info.ports[i]);
            }
            return out;
        }
        if (name == proto_match(proto) && rev == 0) return decode_dst_port(m, name);
        if (name == "addrtype" && rev == 1) {
            xt_addrtype_info_v1 a{};
            constexpr std::uint32_t known =
                XT_ADDRTYPE_INVERT_SOURCE | XT_ADDRTYPE_INVERT_DEST | XT_ADDRTYPE_LIMIT_IFACE_IN | XT_ADDRTYPE_LIMIT_IFACE_OUT;
            if (!payload_as(m, &a) || (a.flags & ~known)) return std::nullopt;
            return AddrType{a.source, a.dest, (a.flags & XT_ADDRTYPE_INVERT_SOURCE) != 0, (a.flags & XT_ADDRTYPE_INVERT_DEST) != 0,
                            (a.flags & XT_ADDRTYPE_LIMIT_IFACE_IN) != 0, (a.flags & XT_ADDRTYPE_LIMIT_IFACE_OUT) != 0};
        }
        if (name == "mark" && rev == 1) {
            xt_mark_mtinfo1 info{};
            if (!payload_as(m, &info) || info.invert > 1) return std::nullopt;  // the kernel XORs the match with it
            return MarkMatch{info.mark, info.mask, info.invert != 0};
        }
        if (name == "iprange" && rev == 1) return decode_iprange(m);
        if (name == "conntrack" && (rev == 2 || rev == 3)) {
            xt_conntrack_mtinfo2 info{};
            if (!payload_as(m, &info) || info.match_flags != XT_CONNTRACK_STATE || (info.invert_flags & ~XT_CONNTRACK_STATE))
                return std::nullopt;
            return CtState{info.state_mask, info.invert_flags != 0};
        }
        return std::nullopt;
    }

    std::optional<Payload> encode_target(const IptRule& r) {
        if (r.target == "MASQUERADE") return Payload{"MASQUERADE", 0, T::masq_payload()};
        if (auto* mk = std::get_if<SetXMark>(&r.target_args)) {
            xt_mark_tginfo2 info{mk->mark, mk->mask};
            return payload("MARK", 2, info);
        }
        if (auto* d = std::get_if<DnatTo>(&r.target_args))
            return nat_payload("DNAT", d->ip, NF_NAT_RANGE_MAP_IPS | (d->port ? NF_NAT_RANGE_PROTO_SPECIFIED : 0), d->port);
        if (auto* sn = std::get_if<SnatTo>(&r.target_args))
            return nat_payload("SNAT", sn->ip, NF_NAT_RANGE_MAP_IPS | (sn->random_fully ? NF_NAT_RANGE_PROTO_RANDOM_FULLY : 0), 0);
        if (auto* cm = std::get_if<ConnMark>(&r.target_args)) {
            // libxt_CONNMARK: revision 2 where the kernel has it, else 1 (the same fields, no shift)
            xt_connmark_tginfo2 info{};
            info.ctmark = cm->ctmark, info.ctmask = cm->ctmask, info.nfmask = cm->nfmask;
            info.mode = cm->restore ? XT_CONNMARK_RESTORE : XT_CONNMARK_SET;
            if (revision(true, "CONNMARK", {2, 1}) == 2) return payload("CONNMARK", 2, info);
            xt_connmark_tginfo1 v1{info.ctmark, info.ctmask, info.nfmask, info.mode};
            return payload("CONNMARK", 1, v1);
        }
        return std::nullopt;
    }

    // DNAT or SNAT to one address (and port), in the highest revision both iptables 1.8.9 and the
    // kernel have: nf_nat_range2 (DNAT's revision 2), nf_nat_range (revision 1), or IPv4's
    // original layout (revision 0). iptables writes IPv4's SNAT in revision 0 only.
    Payload nat_payload(const char* name, const net::IpAddr& ip, unsigned flags, std::uint16_t port) {
        nf_nat_range2 range{};
        range.flags = flags;
        std::memcpy(&range.min_addr, T::kBytes == 4 ? &ip.bytes()[12] : ip.bytes().data(), T::kBytes);
        range.max_addr = range.min_addr;
        range.min_proto.all = range.max_proto.all = htons(port);
        const bool dnat = std::string_view(name) == "DNAT";
        std::uint8_t rev = T::kBytes == 4 ? (dnat ? revision(true, name, {2, 1, 0}) : std::uint8_t(0))
                                          : (dnat ? revision(true, name, {2, 1}) : revision(true, name, {1}));
        if (rev == 2) return payload(name, 2, range);
        if (rev == 1) {
            nf_nat_range r1{};
            std::memcpy(&r1, &range, sizeof r1);
            return payload(name, 1, r1);
        }
        nf_nat_ipv4_multi_range_compat c{};
        c.rangesize = 1;
        c.range[0].flags = range.flags;
        c.range[0].min_ip = c.range[0].max_ip = range.min_addr.ip;
        c.range[0].min.all = c.range[0].max.all = range.min_proto.all;
        return payload(name, 0, c);
    }

    static std::optional<IptTargetArgs> decode_target(const xt_entry_target* t, const std::string& name) {
        const std::size_t size = t->u.target_size - sizeof(xt_entry_target);
        const std::uint8_t rev = t->u.user.revision;
        if (name == "MARK") {
            if (rev != 2 || size < sizeof(xt_mark_tginfo2)) return std::nullopt;
            xt_mark_tginfo2 info{};
            std::memcpy(&info, t->data, sizeof info);
            return SetXMark{info.mark, info.mask};
        }
        if (name == "CONNMARK") {
            if ((rev != 1 && rev != 2) || size < sizeof(xt_connmark_tginfo1)) return std::nullopt;
            xt_connmark_tginfo2 info{};
            std::memcpy(&info, t->data, std::min(size, sizeof info));
            if (rev == 1) info.mode = reinterpret_cast<const xt_connmark_tginfo1*>(t->data)->mode, info.shift_bits = 0;
            if (info.shift_bits || (info.mode != XT_CONNMARK_SET && info.mode != XT_CONNMARK_RESTORE)) return std::nullopt;
            return ConnMark{info.mode == XT_CONNMARK_RESTORE, info.ctmark, info.ctmask, info.nfmask};
        }
        unsigned flags;
        nf_inet_addr addr{};
        std::uint16_t port;
        if (rev >= 1 && size >= sizeof(nf_nat_range)) {
            nf_nat_range r{};
            std::memcpy(&r, t->data, sizeof r);
            if (r.min_addr.all[0] != r.max_addr.all[0] || r.min_proto.all != r.max_proto.all) return std::nullopt;
            flags = r.flags, addr = r.min_addr, port = ntohs(r.min_proto.all);
        } else if (rev == 0 && T::kBytes == 4 && size >= sizeof(nf_nat_ipv4_multi_range_compat)) {
            nf_nat_ipv4_multi_range_compat c{};
            std::memcpy(&c, t->data, sizeof c);
            if (c.rangesize != 1 || c.range[0].min_ip != c.range[0].max_ip) return std::nullopt;
            flags = c.range[0].flags, addr.ip = c.range[0].min_ip, port = ntohs(c.range[0].min.all);
        } else {
            return std::nullopt;
        }
        if (!(flags & NF_NAT_RANGE_MAP_IPS)) return std::nullopt;
        std::array<std::uint8_t, 16> b{};
        if (T::kBytes == 4) {
            b[10] = b[11] = 0xff;
            std::memcpy(&b[12], &addr.ip, 4);
        } else {
            std::memcpy(b.data(), &addr.in6, 16);
        }
        if (name == "SNAT") {
            if (flags & ~(NF_NAT_RANGE_MAP_IPS | NF_NAT_RANGE_PROTO_RANDOM_FULLY)) return std::nullopt;
            return SnatTo{net::IpAddr::from_bytes(b), (flags & NF_NAT_RANGE_PROTO_RANDOM_FULLY) != 0};
        }
        return DnatTo{net::IpAddr::from_bytes(b), (flags & NF_NAT_RANGE_PROTO_SPECIFIED) ? port : std::uint16_t(0)};
    }

    Result<std::vector<IptTable::Listed>> rules(const std::string& chain) const {
        if (!T::is_chain(chain.c_str(), h)) return fail("no chain " + chain + " in table " + name);
        std::vector<IptTable::Listed> out;
        for (auto* e = T::first(chain.c_str(), h); e; e = T::next(e, h)) out.push_back(describe(e));
        return out;
    }

    // Whether a rule's -j is `target`: a string test that spares decoding the other rules of a
    // long chain (CNI-HOSTPORT-DNAT holds a rule per published port of the node).
    bool jumps_to(const typename T::Entry* e, const std::string& target) const {
        const char* t = T::get_target(e, h);
        return t && target == t;
    }

    Status add_unique(const std::string& chain, const IptRule& r, bool at_top) {
        if (!T::is_chain(chain.c_str(), h)) return fail("no chain " + chain + " in table " + name);
        for (auto* e = T::first(chain.c_str(), h); e; e = T::next(e, h)) {
            if (!jumps_to(e, r.target)) continue;
            if (auto l = describe(e); !l.foreign && l.rule == r) return {};
        }
        auto buf = build(r);
        auto* e = reinterpret_cast<typename T::Entry*>(buf.data());
        if (!(at_top ? T::insert(chain.c_str(), e, 0, h) : T::append(chain.c_str(), e, h)))
            return cni::Unexpected(err((at_top ? "inserting a rule into " : "appending a rule to ") + name + "/" + chain));
        return {};
    }

    Result<int> delete_if(const std::string& chain, const std::string& target, const std::function<bool(const IptRule&)>& pred) {
        if (!T::is_chain(chain.c_str(), h)) return fail("no chain " + chain + " in table " + name);
        std::vector<unsigned> hits;
        unsigned i = 0;
        for (auto* e = T::first(chain.c_str(), h); e; e = T::next(e, h), ++i)
            if (jumps_to(e, target) && (!pred || pred(describe(e).rule))) hits.push_back(i);
        for (auto it = hits.rbegin(); it != hits.rend(); ++it)
            if (!T::delete_num(chain.c_str(), *it, h))
                return cni::Unexpected(err("deleting rule " + std::to_string(*it + 1) + " of " + name + "/" + chain));
        return int(hits.size());
    }
};

}  // namespace cni::fw::detail

namespace cni::fw {

// The operations IptTable forwards to whichever family it holds.
struct IptTable::Impl {
    virtual ~Impl() = default;
    virtual bool has_chain(const std::string& chain) const = 0;
    virtual std::vector<std::string> chains() const = 0;
    virtual Status create_chain(const std::string& chain) = 0;
    virtual Status flush_chain(const std::string& chain) = 0;
    virtual Status delete_chain(const std::string& chain) = 0;
    virtual Result<std::vector<IptTable::Listed>> rules(const std::string& chain) const = 0;
    virtual Status append_unique(const std::string& chain, const IptRule& rule) = 0;
    virtual Status insert_unique(const std::string& chain, const IptRule& rule) = 0;
    virtual Result<int> delete_if(const std::string& chain, const std::string& target,
                                  const std::function<bool(const IptRule&)>& pred) = 0;
    virtual Status commit() = 0;
    // Rule handles, which only nf_tables has (see IptTable). The legacy tables' defaults: no
    // handles, and an append that looks for an identical rule, as the table is read whole anyway.
    virtual void keep_added_handles() {}
    virtual std::vector<std::uint64_t> added_handles(const std::string&) const { return {}; }
    virtual Result<std::optional<std::vector<IptTable::AtHandle>>> rules_at(const std::string&, const std::vector<std::uint64_t>&) const {
        return std::nullopt;
    }
    virtual Status append_new(const std::string& chain, const IptRule& rule) { return append_unique(chain, rule); }
    virtual Status delete_at(const std::string& chain, const std::vector<std::uint64_t>&) {
        return fail("iptables: the legacy table " + chain + " has no rule handles");
    }
};

namespace detail {

template <class T>
struct ImplFor final : IptTable::Impl {
    Table<T> t;
    bool has_chain(const std::string& c) const override { return T::is_chain(c.c_str(), t.h) != 0; }
    std::vector<std::string> chains() const override {
        std::vector<std::string> out;
        for (const char* c = T::first_chain(t.h); c; c = T::next_chain(t.h))
            if (!T::is_builtin(c, t.h)) out.emplace_back(c);
        return out;
    }
    Status create_chain(const std::string& c) override {
        if (!T::create_chain(c.c_str(), t.h)) return cni::Unexpected(t.err("creating chain " + t.name + "/" + c));
        return {};
    }
    Status flush_chain(const std::string& c) override {
        if (!T::flush(c.c_str(), t.h)) return cni::Unexpected(t.err("flushing chain " + t.name + "/" + c));
        return {};
    }
    Status delete_chain(const std::string& c) override {
        if (!T::delete_chain(c.c_str(), t.h)) return cni::Unexpected(t.err("deleting chain " + t.name + "/" + c));
        return {};
    }
    Result<std::vector<IptTable::Listed>> rules(const std::string& c) const override { return t.rules(c); }
    Status append_unique(const std::string& c, const IptRule& r) override { return t.add_unique(c, r, false); }
    Status insert_unique(const std::string& c, const IptRule& r) override { return t.add_unique(c, r, true); }
    Result<int> delete_if(const std::string& c, const std::string& target, const std::function<bool(const IptRule&)>& p) override {
        return t.delete_if(c, target, p);
    }
    // EAGAIN: another writer replaced the table since it was read (one that does not take the
    // xtables lock); IptTable::transact reads it again.
    Status commit() override {
        if (T::commit(t.h)) return {};
        Error e = t.err("committing table " + t.name);
        if (errno == EAGAIN) e.code = code::try_again_later;
        return cni::Unexpected(std::move(e));
    }
};

// A namespace gets its own instance of a table on the table's first use. When two processes
// use it first at the same moment, the kernel makes both instantiate it (xt_find_table_lock runs
// the template's init outside its mutex) and the loser's lookup fails with EEXIST, although the
// table now exists (3 times in 60 fresh namespaces with 8 lookups at once). Asked again, the
// kernel finds it. `lookup` returns something false with errno set when it fails.
template <class Lookup>
auto retry_first_use(Lookup&& lookup) {
    auto found = lookup();
    for (int tries = 1; !found && errno == EEXIST && tries < 4; ++tries) found = lookup();
    return found;
}

template <class T>
Result<std::unique_ptr<IptTable::Impl>> open_table(const std::string& table) {
    auto impl = std::make_unique<ImplFor<T>>();
    impl->t.name = std::string(T::kName) + " " + table;
    impl->t.h = retry_first_use([&] { return T::init(table.c_str()); });
    if (!impl->t.h)
        return fail(std::string(T::kName) + ": cannot open table " + table + ": " + T::strerror(errno));
    return std::unique_ptr<IptTable::Impl>(std::move(impl));
}

Result<std::unique_ptr<IptTable::Impl>> open_v4(const std::string& table);
Result<std::unique_ptr<IptTable::Impl>> open_v6(const std::string& table);

// What the kernel says of a legacy table (IPT_SO_GET_INFO: one getsockopt, the table is not
// copied). The kernel makes a table the namespace does not have yet on this first lookup.
struct LegacyTableInfo {
    unsigned builtin_chains = 0, entries = 0;
    // A rule or a chain of its own: more entries than an empty table's, one policy per built-in
    // chain and the closing entry.
    bool holds_rules() const { return entries > builtin_chains + 1; }
};
// nullopt, with errno set, when the kernel does not answer.
template <class T>
std::optional<LegacyTableInfo> table_info(const std::string& table) {
    os::UniqueFd fd(::socket(T::kAf, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW));
    if (!fd) return std::nullopt;
    typename T::Info info{};
    std::strncpy(info.name, table.c_str(), sizeof info.name - 1);
    socklen_t len = sizeof info;
    if (::getsockopt(fd.get(), T::kSol, T::kGetInfo, &info, &len) != 0) return std::nullopt;
    return LegacyTableInfo{unsigned(std::popcount(info.valid_hooks)), info.num_entries};
}
std::optional<LegacyTableInfo> table_info_v4(const std::string& table);
std::optional<LegacyTableInfo> table_info_v6(const std::string& table);

// One family's xtables payloads of a rule, built as iptables builds them, and read back: what
// the iptables-nft form (xtables_nft.cpp) shares with the libiptc one. Payloads are padded to
// XT_ALIGN, as iptables-nft hands them to nft_compat.
struct XtCodec {
    fw::nft::XtPayload (*comment)(const std::string& text);
    fw::nft::XtPayload (*encode_match)(const IptMatch& m, int proto, const RevisionProbe& probe);
    std::optional<fw::nft::XtPayload> (*encode_target)(const IptRule& r, const RevisionProbe& probe);
    std::optional<IptMatch> (*decode_match)(const fw::nft::XtPayload& x, int proto);
    std::optional<IptTargetArgs> (*decode_target)(const fw::nft::XtPayload& x);
};

template <class T>
const XtCodec& xt_codec_for() {
    using P = typename Table<T>::Payload;
    static constexpr auto padded = [](const char* name, std::uint8_t rev, std::vector<unsigned char> data) {
        data.resize(XT_ALIGN(data.size()), 0);
        return fw::nft::XtPayload{name, rev, std::move(data)};
    };
    // The kernel's form of a payload, for the legacy decoders.
    static constexpr auto entry = [](const fw::nft::XtPayload& x, std::size_t header) {
        std::vector<unsigned char> buf(header + x.info.size(), 0);
        auto* m = reinterpret_cast<xt_entry_match*>(buf.data());  // xt_entry_target has the same head
        m->u.match_size = static_cast<std::uint16_t>(buf.size());
        std::strncpy(m->u.user.name, x.name.c_str(), sizeof m->u.user.name - 1);
        m->u.user.revision = x.revision;
        std::memcpy(buf.data() + header, x.info.data(), x.info.size());
        return buf;
    };
    static const XtCodec codec{
        [](const std::string& text) {
            std::vector<unsigned char> info(sizeof(xt_comment_info), 0);
            std::strncpy(reinterpret_cast<xt_comment_info*>(info.data())->comment, text.c_str(), XT_MAX_COMMENT_LEN - 1);
            return padded("comment", 0, std::move(info));
        },
        [](const IptMatch& m, int proto, const RevisionProbe& probe) {
            Table<T> t;
            t.probe = probe;
            P p = t.encode_match(m, proto);
            return padded(p.name, p.revision, std::move(p.data));
        },
        [](const IptRule& r, const RevisionProbe& probe) -> std::optional<fw::nft::XtPayload> {
            Table<T> t;
            t.probe = probe;
            auto p = t.encode_target(r);
            if (!p) return std::nullopt;
            return padded(p->name, p->revision, std::move(p->data));
        },
        [](const fw::nft::XtPayload& x, int proto) {
            auto buf = entry(x, sizeof(xt_entry_match));
            return Table<T>::decode_match(reinterpret_cast<const xt_entry_match*>(buf.data()), proto);
        },
        [](const fw::nft::XtPayload& x) {
            auto buf = entry(x, sizeof(xt_entry_target));
            return Table<T>::decode_target(reinterpret_cast<const xt_entry_target*>(buf.data()), x.name);
        },
    };
    return codec;
}

const XtCodec& xt_codec_v4();
const XtCodec& xt_codec_v6();

// One family's legacy entries built from a rule and read back outside a table (describe_entry
// and build): what the entry decoder's fuzz target and unit tests call. `entry` may be any
// bytes; a part too short for an entry reads as a foreign rule.
struct EntryCodec {
    IptTable::Listed (*describe)(std::span<const unsigned char> entry, std::string_view target);
    std::vector<unsigned char> (*build)(const IptRule& r, const RevisionProbe& probe);
};

template <class T>
const EntryCodec& entry_codec_for() {
    static const EntryCodec codec{
        [](std::span<const unsigned char> bytes, std::string_view target) {
            if (bytes.size() < sizeof(typename T::Entry)) return IptTable::Listed{{}, true};
            std::unique_ptr<unsigned char[]> aligned(new unsigned char[bytes.size()]);  // new's alignment
            std::memcpy(aligned.get(), bytes.data(), bytes.size());
            const auto* e = reinterpret_cast<const typename T::Entry*>(aligned.get());
            return Table<T>::describe_entry(e, std::min<std::size_t>(e->next_offset, bytes.size()), target);
        },
        [](const IptRule& r, const RevisionProbe& probe) {
            Table<T> t;
            t.probe = probe;
            return t.build(r);
        },
    };
    return codec;
}

const EntryCodec& entry_codec_v4();
const EntryCodec& entry_codec_v6();

}  // namespace detail
}  // namespace cni::fw
