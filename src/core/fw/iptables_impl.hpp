// SPDX-License-Identifier: Apache-2.0
// The family-independent half of IptTable, written once over a trait (IPv4: libip4tc and
// ipt_entry; IPv6: libip6tc and ip6t_entry). Each family's .cpp includes only its own libiptc
// header, as iptables itself does, and instantiates this template.
#pragma once

#include <linux/netfilter/nf_nat.h>
#include <linux/netfilter/x_tables.h>
#include <linux/netfilter/xt_comment.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <vector>

#include "core/fw/iptables.hpp"

namespace cni::fw::detail {

inline int prefix_of(const unsigned char* mask, int bytes) {
    int n = 0;
    for (int i = 0; i < bytes; ++i) n += __builtin_popcount(mask[i]);
    return n;
}

// Trait T provides: Handle, Entry, kBytes (4/16), init/free/commit/is_chain/create_chain/
// flush/delete_chain/first/next/get_target/append/delete_num/strerror, addr accessors, and
// the inverse-dst flag, the MASQUERADE payload size and how to fill it.
template <class T>
struct Table {
    typename T::Handle* h = nullptr;
    std::string name;

    ~Table() {
        if (h) T::free(h);
    }

    Error err(std::string_view what) const {
        return Error{code::internal, std::string(what) + ": " + T::strerror(errno), {}};
    }

    static IpNet to_net(const unsigned char* addr, const unsigned char* mask) {
        std::array<std::uint8_t, 16> b{};
        if (T::kBytes == 4) {
            b[10] = b[11] = 0xff;
            std::memcpy(&b[12], addr, 4);
        } else {
            std::memcpy(b.data(), addr, 16);
        }
        int bits = T::kBytes * 8;
        return IpNet{IpAddr::from_bytes(b), prefix_of(mask, T::kBytes), bits};
    }

    static void from_net(const IpNet& n, unsigned char* addr, unsigned char* mask) {
        IpNet net = n.masked();
        const auto& b = net.ip.bytes();
        std::memcpy(addr, T::kBytes == 4 ? &b[12] : b.data(), T::kBytes);
        int ones = net.prefix;
        for (int i = 0; i < T::kBytes; ++i, ones -= 8)
            mask[i] = ones >= 8 ? 0xff : ones <= 0 ? 0 : static_cast<unsigned char>(0xff << (8 - ones));
    }

    // The kernel form of a rule, laid out as the iptables binary lays it out.
    std::vector<unsigned char> build(const IptRule& r) const {
        const bool masq = r.target == "MASQUERADE";
        const std::size_t entry = XT_ALIGN(sizeof(typename T::Entry));
        const std::size_t match = r.comment.empty() ? 0 : XT_ALIGN(sizeof(xt_entry_match) + sizeof(xt_comment_info));
        const std::size_t target = masq ? XT_ALIGN(sizeof(xt_entry_target) + T::kMasqSize) : XT_ALIGN(sizeof(xt_standard_target));
        std::vector<unsigned char> buf(entry + match + target, 0);
        auto* e = reinterpret_cast<typename T::Entry*>(buf.data());
        e->target_offset = static_cast<std::uint16_t>(entry + match);
        e->next_offset = static_cast<std::uint16_t>(buf.size());
        if (r.src) from_net(*r.src, T::src(e), T::smsk(e));
        if (r.dst) from_net(*r.dst, T::dst(e), T::dmsk(e));
        if (r.dst_inverted) T::invflags(e) |= T::kInvDst;
        T::prepare(e);
        if (match) {
            auto* m = reinterpret_cast<xt_entry_match*>(buf.data() + entry);
            m->u.match_size = static_cast<std::uint16_t>(match);
            std::strncpy(m->u.user.name, "comment", sizeof m->u.user.name - 1);
            auto* info = reinterpret_cast<xt_comment_info*>(m->data);
            std::strncpy(info->comment, r.comment.c_str(), XT_MAX_COMMENT_LEN - 1);
        }
        auto* t = reinterpret_cast<xt_entry_target*>(buf.data() + entry + match);
        t->u.target_size = static_cast<std::uint16_t>(target);
        std::strncpy(t->u.user.name, r.target.c_str(), sizeof t->u.user.name - 1);
        if (masq) T::fill_masq(t->data);
        return buf;
    }

    // The IptRule an entry stands for, and whether it has anything IptRule cannot express.
    IptTable::Listed describe(const typename T::Entry* e) const {
        IptTable::Listed out;
        static const unsigned char zero[16] = {};
        if (std::memcmp(T::smsk(e), zero, T::kBytes) != 0) out.rule.src = to_net(T::src(e), T::smsk(e));
        if (std::memcmp(T::dmsk(e), zero, T::kBytes) != 0) out.rule.dst = to_net(T::dst(e), T::dmsk(e));
        out.rule.dst_inverted = (T::invflags(e) & T::kInvDst) != 0;
        if ((T::invflags(e) & ~T::kInvDst) || T::has_other_fields(e)) out.foreign = true;
        for (std::size_t off = sizeof(typename T::Entry); off < e->target_offset;) {
            auto* m = reinterpret_cast<const xt_entry_match*>(reinterpret_cast<const unsigned char*>(e) + off);
            if (m->u.match_size == 0) break;
            if (std::strcmp(m->u.user.name, "comment") == 0 && out.rule.comment.empty())
                out.rule.comment = reinterpret_cast<const xt_comment_info*>(m->data)->comment;
            else
                out.foreign = true;
            off += m->u.match_size;
        }
        if (const char* target = T::get_target(e, h)) out.rule.target = target;
        return out;
    }

    Result<std::vector<IptTable::Listed>> rules(const std::string& chain) const {
        if (!T::is_chain(chain.c_str(), h)) return fail("no chain " + chain + " in table " + name);
        std::vector<IptTable::Listed> out;
        for (auto* e = T::first(chain.c_str(), h); e; e = T::next(e, h)) out.push_back(describe(e));
        return out;
    }

    Status append_unique(const std::string& chain, const IptRule& r) {
        CNI_TRY_ASSIGN(auto existing, rules(chain));
        for (auto& l : existing)
            if (!l.foreign && l.rule == r) return {};
        auto buf = build(r);
        if (!T::append(chain.c_str(), reinterpret_cast<typename T::Entry*>(buf.data()), h))
            return std::unexpected(err("appending a rule to " + name + "/" + chain));
        return {};
    }

    Result<int> delete_if(const std::string& chain, const std::function<bool(const IptRule&)>& pred) {
        CNI_TRY_ASSIGN(auto existing, rules(chain));
        int deleted = 0;
        for (std::size_t i = existing.size(); i-- > 0;) {
            if (!pred(existing[i].rule)) continue;
            if (!T::delete_num(chain.c_str(), static_cast<unsigned>(i), h))
                return std::unexpected(err("deleting rule " + std::to_string(i + 1) + " of " + name + "/" + chain));
            ++deleted;
        }
        return deleted;
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
    virtual Result<int> delete_if(const std::string& chain, const std::function<bool(const IptRule&)>& pred) = 0;
    virtual Status commit() = 0;
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
        if (!T::create_chain(c.c_str(), t.h)) return std::unexpected(t.err("creating chain " + t.name + "/" + c));
        return {};
    }
    Status flush_chain(const std::string& c) override {
        if (!T::flush(c.c_str(), t.h)) return std::unexpected(t.err("flushing chain " + t.name + "/" + c));
        return {};
    }
    Status delete_chain(const std::string& c) override {
        if (!T::delete_chain(c.c_str(), t.h)) return std::unexpected(t.err("deleting chain " + t.name + "/" + c));
        return {};
    }
    Result<std::vector<IptTable::Listed>> rules(const std::string& c) const override { return t.rules(c); }
    Status append_unique(const std::string& c, const IptRule& r) override { return t.append_unique(c, r); }
    Result<int> delete_if(const std::string& c, const std::function<bool(const IptRule&)>& p) override { return t.delete_if(c, p); }
    Status commit() override {
        if (!T::commit(t.h)) return std::unexpected(t.err("committing table " + t.name));
        return {};
    }
};

template <class T>
Result<std::unique_ptr<IptTable::Impl>> open_table(const std::string& table) {
    auto impl = std::make_unique<ImplFor<T>>();
    impl->t.name = std::string(T::kName) + " " + table;
    impl->t.h = T::init(table.c_str());
    if (!impl->t.h)
        return fail(std::string(T::kName) + ": cannot open table " + table + ": " + T::strerror(errno));
    return std::unique_ptr<IptTable::Impl>(std::move(impl));
}

Result<std::unique_ptr<IptTable::Impl>> open_v4(const std::string& table);
Result<std::unique_ptr<IptTable::Impl>> open_v6(const std::string& table);

}  // namespace detail
}  // namespace cni::fw
