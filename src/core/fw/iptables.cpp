// SPDX-License-Identifier: Apache-2.0
// IptTable's variant and family dispatch (see iptables.hpp, iptables_impl.hpp, xtables_nft.hpp).
#include "core/fw/iptables.hpp"

#include "core/fw/iptables_impl.hpp"  // first: net/if.h before the kernel headers
#include "core/fw/xtables_nft.hpp"

#include <algorithm>

#include "core/os/fs.hpp"
#include "core/strings.hpp"

namespace cni::fw {

IptTable::IptTable(std::unique_ptr<Impl> impl, Family family, std::string table, Variant variant)
    : impl_(std::move(impl)), family_(family), table_(std::move(table)), variant_(variant) {}
IptTable::IptTable(IptTable&&) noexcept = default;
IptTable::~IptTable() = default;

Result<IptTable> IptTable::open(Family family, const std::string& table) { return open(family, table, node_variant()); }

namespace {

// The legacy tables of the family this namespace has (none where x_tables is not loaded).
std::vector<std::string> legacy_tables(Family family) {
    auto names = os::read_file(family == Family::v4 ? "/proc/thread-self/net/ip_tables_names" : "/proc/thread-self/net/ip6_tables_names");
    std::vector<std::string> out;
    if (names)
        for (auto line : split(*names, '\n'))
            if (!line.empty()) out.emplace_back(line);
    return out;
}

}  // namespace

bool legacy_table_present(Family family, const std::string& table) {
    auto tables = legacy_tables(family);
    return std::ranges::find(tables, table) != tables.end();
}

bool legacy_rules_present() {
    for (Family family : {Family::v4, Family::v6})
        for (auto& table : legacy_tables(family))
            if (auto info = family == Family::v4 ? detail::table_info_v4(table) : detail::table_info_v6(table);
                info && info->holds_rules())
                return true;
    return false;
}

Result<IptTable> IptTable::open(Family family, const std::string& table, Variant variant) {
    if (variant == Variant::nft) {
        CNI_TRY_ASSIGN(auto impl, detail::open_xtables_nft(family, table));
        return IptTable(std::move(impl), family, table, variant);
    }
    // Opening a legacy table makes the kernel instantiate it (and load x_tables): on a node
    // whose iptables is iptables-nft, every `iptables` would then warn of legacy tables. Where
    // the table does not exist yet it holds nothing of ours, so it is not opened at all.
    if (node_variant() != Variant::legacy && !legacy_table_present(family, table))
        return fail(std::string("the legacy ") + (family == Family::v4 ? "iptables " : "ip6tables ") + table +
                    " table is not in use here");
    CNI_TRY_ASSIGN(auto impl, family == Family::v4 ? detail::open_v4(table) : detail::open_v6(table));
    return IptTable(std::move(impl), family, table, variant);
}

Status IptTable::reload() {
    CNI_TRY_ASSIGN(auto fresh, open(family_, table_, variant_));
    impl_ = std::move(fresh.impl_);
    if (keep_handles_) impl_->keep_added_handles();
    return {};
}

bool iptables_usable() { return node_variant() == Variant::nft || IptTable::legacy_nat_usable(); }

bool IptTable::legacy_nat_usable() {
    return detail::retry_first_use([] { return detail::table_info_v4("nat"); }).has_value();
}

bool IptTable::has_chain(const std::string& chain) const { return impl_->has_chain(chain); }
std::vector<std::string> IptTable::chains() const { return impl_->chains(); }
Status IptTable::create_chain(const std::string& chain) { return impl_->create_chain(chain); }
Status IptTable::flush_chain(const std::string& chain) { return impl_->flush_chain(chain); }
Status IptTable::delete_chain(const std::string& chain) { return impl_->delete_chain(chain); }
Result<std::vector<IptTable::Listed>> IptTable::rules(const std::string& chain) const { return impl_->rules(chain); }
Result<bool> IptTable::has_rule(const std::string& chain, const IptRule& want) const {
    if (!has_chain(chain)) return false;
    CNI_TRY_ASSIGN(auto listed, rules(chain));
    return std::ranges::any_of(listed, [&](const Listed& l) { return !l.foreign && l.rule == want; });
}
Status IptTable::append_unique(const std::string& chain, const IptRule& rule) { return impl_->append_unique(chain, rule); }
Status IptTable::insert_unique(const std::string& chain, const IptRule& rule) { return impl_->insert_unique(chain, rule); }
Result<int> IptTable::delete_if(const std::string& chain, const std::string& target,
                                const std::function<bool(const IptRule&)>& pred) {
    return impl_->delete_if(chain, target, pred);
}
Status IptTable::commit() { return impl_->commit(); }
void IptTable::keep_added_handles() {
    keep_handles_ = true;
    impl_->keep_added_handles();
}
std::vector<std::uint64_t> IptTable::added_handles(const std::string& chain) const { return impl_->added_handles(chain); }
Result<std::optional<std::vector<IptTable::AtHandle>>> IptTable::rules_at(const std::string& chain,
                                                                           const std::vector<std::uint64_t>& handles) const {
    return impl_->rules_at(chain, handles);
}
Status IptTable::append_new(const std::string& chain, const IptRule& rule) { return impl_->append_new(chain, rule); }
Status IptTable::delete_at(const std::string& chain, const std::vector<std::uint64_t>& handles) { return impl_->delete_at(chain, handles); }

}  // namespace cni::fw
