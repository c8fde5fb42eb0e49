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
    static constexpr std::size_t kMasqSize = sizeof(nf_nat_ipv4_multi_range_compat);

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
    static int delete_num(const char* c, unsigned n, Handle* h) { return iptc_delete_num_entry(c, n, h); }
    static const char* strerror(int e) { return iptc_strerror(e); }

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
    static void prepare(Entry*) {}
    static bool has_other_fields(const Entry* e) {
        return e->ip.proto != 0 || e->ip.iniface[0] || e->ip.outiface[0] || e->ip.flags;
    }
    static void fill_masq(unsigned char* data) { reinterpret_cast<nf_nat_ipv4_multi_range_compat*>(data)->rangesize = 1; }
};

}  // namespace

Result<std::unique_ptr<IptTable::Impl>> open_v4(const std::string& table) { return open_table<V4>(table); }

}  // namespace cni::fw::detail
