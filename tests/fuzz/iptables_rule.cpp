// SPDX-License-Identifier: Apache-2.0
// A legacy iptables rule as the kernel hands it to libiptc (an ipt_entry or ip6t_entry with its
// matches and target), decoded into the rule it stands for (fw::detail::EntryCodec). The first
// byte picks the family and the target's name as libiptc would resolve it; the rest is the
// entry, any bytes. A rule read as one of ours (not foreign), written again as the iptables
// binary would, reads back as ours and as the same rule.
#include <array>

#include "core/fw/iptables_impl.hpp"
#include "fuzz_check.hpp"

namespace {

constexpr std::array<const char*, 10> kTargets{"",     "ACCEPT", "RETURN",   "MASQUERADE", "DNAT",
                                               "SNAT", "MARK",   "CONNMARK", "CNI-HOSTPORT-DNAT", "DROP"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const bool v6 = data[0] & 1;
    const std::string_view target = kTargets[(data[0] >> 1) % kTargets.size()];
    const auto& codec = v6 ? cni::fw::detail::entry_codec_v6() : cni::fw::detail::entry_codec_v4();
    auto listed = codec.describe({data + 1, size - 1}, target);
    if (listed.foreign) return 0;
    auto newest = [](bool, const char*, std::uint8_t) { return true; };
    auto built = codec.build(listed.rule, newest);
    auto again = codec.describe(built, target);
    property(!again.foreign, "a rule read as ours, written again, reads as ours");
    property(again.rule == listed.rule, "a rule read as ours, written again, reads as the same rule");
    return 0;
}
