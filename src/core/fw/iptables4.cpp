// SPDX-License-Identifier: Apache-2.0
// The IPv4 family of IptTable: libip4tc and ipt_entry (see iptables_impl.hpp).
#include <libiptc/libiptc.h>

#include "core/fw/iptables_impl.hpp"

namespace cni::fw::detail {
namespace {

struct V4 {
    using Handle = xtc_handle;
    using Entry = ipt_entry;
    static constexpr const char* kName = "iptables";
    static constexpr int kBytes = 4;
    static constexpr std::uint8_t kInvDst = IPT_INV_DSTIP;
    static constexpr std::uint8_t kInvSrc = IPT_INV_SRCIP;
    static constexpr std::uint8_t kInvIn = IPT_INV_VIA_IN;
    static constexpr std::uint8_t kInvOut = IPT_INV_VIA_OUT;
    static constexpr int kAf = AF_INET;
    static constexpr int kSol = SOL_IP;
    static constexpr int kRevMatch = IPT_SO_GET_REVISION_MATCH;
    static constexpr int kRevTarget = IPT_SO_GET_REVISION_TARGET;
    using Info = ipt_getinfo;
    static constexpr int kGetInfo = IPT_SO_GET_INFO;

    static Handle* init(const char* t) { return iptc_init(t); }
    static void free(Handle* h) { iptc_free(h); }
    static int commit(Handle* h) { return iptc_commit(h); }
    static int is_chain(const char* c, Handle* h) { return iptc_is_chain(c, h); }
    static const char* first_chain(Handle* h) { return iptc_first_chain(h); }
    static const char* next_chain(Handle* h) { return iptc_next_chain(h); }
    static int is_builtin(const char* c, Handle* h) { return iptc_builtin(c, h); }
    static int create_chain(const char* c, Handle* h) { return iptc_create_chain(c, h); }
    static int flush(const char* c, Handle* h) { return iptc_flush_entries(c, h); }
    static int delete_chain(const char* c, Handle* h) { return iptc_delete_chain(c, h); }
    static const Entry* first(const char* c, Handle* h) { return iptc_first_rule(c, h); }
    static const Entry* next(const Entry* e, Handle* h) { return iptc_next_rule(e, h); }
    static const char* get_target(const Entry* e, Handle* h) { return iptc_get_target(e, h); }
    static int append(const char* c, const Entry* e, Handle* h) { return iptc_append_entry(c, e, h); }
    static int insert(const char* c, const Entry* e, unsigned n, Handle* h) { return iptc_insert_entry(c, e, n, h); }
    static int delete_num(const char* c, unsigned n, Handle* h) { return iptc_delete_num_entry(c, n, h); }
    static const char* strerror(int e) { return iptc_strerror(e); }

    // The part of an entry write_header fills (addresses, masks, protocol, interfaces, flags).
    static constexpr std::size_t kHeaderSize = sizeof(ipt_ip);
    static const void* header(const Entry* e) { return &e->ip; }
    static unsigned char* src(Entry* e) { return reinterpret_cast<unsigned char*>(&e->ip.src); }
    static unsigned char* smsk(Entry* e) { return reinterpret_cast<unsigned char*>(&e->ip.smsk); }
    static unsigned char* dst(Entry* e) { return reinterpret_cast<unsigned char*>(&e->ip.dst); }
    static unsigned char* dmsk(Entry* e) { return reinterpret_cast<unsigned char*>(&e->ip.dmsk); }
    static const unsigned char* src(const Entry* e) { return reinterpret_cast<const unsigned char*>(&e->ip.src); }
    static const unsigned char* smsk(const Entry* e) { return reinterpret_cast<const unsigned char*>(&e->ip.smsk); }
    static const unsigned char* dst(const Entry* e) { return reinterpret_cast<const unsigned char*>(&e->ip.dst); }
    static const unsigned char* dmsk(const Entry* e) { return reinterpret_cast<const unsigned char*>(&e->ip.dmsk); }
    static std::uint8_t& invflags(Entry* e) { return e->ip.invflags; }
    static std::uint8_t invflags(const Entry* e) { return e->ip.invflags; }
    static bool go_to(const Entry* e) { return (e->ip.flags & IPT_F_GOTO) != 0; }
    static void set_proto(Entry* e, int p) { e->ip.proto = static_cast<std::uint16_t>(p); }
    static int proto(const Entry* e) { return e->ip.proto; }
    static char* iniface(Entry* e) { return e->ip.iniface; }
    static char* outiface(Entry* e) { return e->ip.outiface; }
    static const char* iniface(const Entry* e) { return e->ip.iniface; }
    static const char* outiface(const Entry* e) { return e->ip.outiface; }
    static unsigned char* iniface_mask(Entry* e) { return e->ip.iniface_mask; }
    static unsigned char* outiface_mask(Entry* e) { return e->ip.outiface_mask; }
    static std::vector<unsigned char> masq_payload() {
        nf_nat_ipv4_multi_range_compat m{};
        m.rangesize = 1;
        std::vector<unsigned char> out(sizeof m);
        std::memcpy(out.data(), &m, sizeof m);
        return out;
    }
};

}  // namespace

Result<std::unique_ptr<IptTable::Impl>> open_v4(const std::string& table) { return open_table<V4>(table); }
std::optional<LegacyTableInfo> table_info_v4(const std::string& table) { return table_info<V4>(table); }
const XtCodec& xt_codec_v4() { return xt_codec_for<V4>(); }
const EntryCodec& entry_codec_v4() { return entry_codec_for<V4>(); }

}  // namespace cni::fw::detail
