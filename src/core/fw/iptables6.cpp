// SPDX-License-Identifier: Apache-2.0
// The IPv6 family of IptTable: libip6tc and ip6t_entry (see iptables_impl.hpp).
// libip6tc.h, unlike libiptc.h, has no extern "C" guard of its own.
extern "C" {
#include <libiptc/libip6tc.h>
}

#include "core/fw/iptables_impl.hpp"

namespace cni::fw::detail {
namespace {

struct V6 {
    using Handle = xtc_handle;
    using Entry = ip6t_entry;
    static constexpr const char* kName = "ip6tables";
    static constexpr int kBytes = 16;
    static constexpr std::uint8_t kInvDst = IP6T_INV_DSTIP;
    static constexpr std::uint8_t kInvSrc = IP6T_INV_SRCIP;
    static constexpr std::uint8_t kInvIn = IP6T_INV_VIA_IN;
    static constexpr std::uint8_t kInvOut = IP6T_INV_VIA_OUT;
    static constexpr int kAf = AF_INET6;
    static constexpr int kSol = SOL_IPV6;
    static constexpr int kRevMatch = IP6T_SO_GET_REVISION_MATCH;
    static constexpr int kRevTarget = IP6T_SO_GET_REVISION_TARGET;
    using Info = ip6t_getinfo;
    static constexpr int kGetInfo = IP6T_SO_GET_INFO;

    static Handle* init(const char* t) { return ip6tc_init(t); }
    static void free(Handle* h) { ip6tc_free(h); }
    static int commit(Handle* h) { return ip6tc_commit(h); }
    static int is_chain(const char* c, Handle* h) { return ip6tc_is_chain(c, h); }
    static const char* first_chain(Handle* h) { return ip6tc_first_chain(h); }
    static const char* next_chain(Handle* h) { return ip6tc_next_chain(h); }
    static int is_builtin(const char* c, Handle* h) { return ip6tc_builtin(c, h); }
    static int create_chain(const char* c, Handle* h) { return ip6tc_create_chain(c, h); }
    static int flush(const char* c, Handle* h) { return ip6tc_flush_entries(c, h); }
    static int delete_chain(const char* c, Handle* h) { return ip6tc_delete_chain(c, h); }
    static const Entry* first(const char* c, Handle* h) { return ip6tc_first_rule(c, h); }
    static const Entry* next(const Entry* e, Handle* h) { return ip6tc_next_rule(e, h); }
    static const char* get_target(const Entry* e, Handle* h) { return ip6tc_get_target(e, h); }
    static int append(const char* c, const Entry* e, Handle* h) { return ip6tc_append_entry(c, e, h); }
    static int insert(const char* c, const Entry* e, unsigned n, Handle* h) { return ip6tc_insert_entry(c, e, n, h); }
    static int delete_num(const char* c, unsigned n, Handle* h) { return ip6tc_delete_num_entry(c, n, h); }
    static const char* strerror(int e) { return ip6tc_strerror(e); }

    // The part of an entry write_header fills (addresses, masks, interfaces, protocol, flags),
    // without the struct's tail padding.
    static constexpr std::size_t kHeaderSize = offsetof(ip6t_ip6, invflags) + 1;
    static const void* header(const Entry* e) { return &e->ipv6; }
    static unsigned char* src(Entry* e) { return reinterpret_cast<unsigned char*>(&e->ipv6.src); }
    static unsigned char* smsk(Entry* e) { return reinterpret_cast<unsigned char*>(&e->ipv6.smsk); }
    static unsigned char* dst(Entry* e) { return reinterpret_cast<unsigned char*>(&e->ipv6.dst); }
    static unsigned char* dmsk(Entry* e) { return reinterpret_cast<unsigned char*>(&e->ipv6.dmsk); }
    static const unsigned char* src(const Entry* e) { return reinterpret_cast<const unsigned char*>(&e->ipv6.src); }
    static const unsigned char* smsk(const Entry* e) { return reinterpret_cast<const unsigned char*>(&e->ipv6.smsk); }
    static const unsigned char* dst(const Entry* e) { return reinterpret_cast<const unsigned char*>(&e->ipv6.dst); }
    static const unsigned char* dmsk(const Entry* e) { return reinterpret_cast<const unsigned char*>(&e->ipv6.dmsk); }
    static std::uint8_t& invflags(Entry* e) { return e->ipv6.invflags; }
    static std::uint8_t invflags(const Entry* e) { return e->ipv6.invflags; }
    static bool go_to(const Entry* e) { return (e->ipv6.flags & IP6T_F_GOTO) != 0; }
    // ip6tables marks a rule that names a protocol with IP6T_F_PROTO.
    static void set_proto(Entry* e, int p) {
        e->ipv6.proto = static_cast<std::uint16_t>(p);
        e->ipv6.flags |= IP6T_F_PROTO;
    }
    static int proto(const Entry* e) { return e->ipv6.proto; }
    static char* iniface(Entry* e) { return e->ipv6.iniface; }
    static char* outiface(Entry* e) { return e->ipv6.outiface; }
    static const char* iniface(const Entry* e) { return e->ipv6.iniface; }
    static const char* outiface(const Entry* e) { return e->ipv6.outiface; }
    static unsigned char* iniface_mask(Entry* e) { return e->ipv6.iniface_mask; }
    static unsigned char* outiface_mask(Entry* e) { return e->ipv6.outiface_mask; }
    // An all-zero nf_nat_range, as ip6tables -j MASQUERADE writes.
    static std::vector<unsigned char> masq_payload() { return std::vector<unsigned char>(sizeof(nf_nat_range), 0); }
};

}  // namespace

Result<std::unique_ptr<IptTable::Impl>> open_v6(const std::string& table) { return open_table<V6>(table); }
std::optional<LegacyTableInfo> table_info_v6(const std::string& table) { return table_info<V6>(table); }
const XtCodec& xt_codec_v6() { return xt_codec_for<V6>(); }
const EntryCodec& entry_codec_v6() { return entry_codec_for<V6>(); }

}  // namespace cni::fw::detail
