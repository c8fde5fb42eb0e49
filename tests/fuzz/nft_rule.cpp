// SPDX-License-Identifier: Apache-2.0
// nf_tables rule expressions as the kernel (or anything on the netlink socket) sends them: the
// input is the payload of a rule's NFTA_RULE_EXPRESSIONS attribute, decoded as iptables-nft
// reads rules back, for each table family. Nothing is trusted: lengths, nesting, types.
#include <netlink/attr.h>

#include <vector>

#include "core/fw/nftables.hpp"
#include "core/fw/nftables_decode.hpp"
#include "fuzz_check.hpp"

using namespace cni::fw::nft;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 60000) return 0;
    // One attribute header around the bytes, aligned as the kernel's would be.
    std::vector<std::uint8_t> buf(NLA_HDRLEN + NLA_ALIGN(size), 0);
    auto* nla = reinterpret_cast<nlattr*>(buf.data());
    nla->nla_len = std::uint16_t(NLA_HDRLEN + size);
    nla->nla_type = NLA_F_NESTED | 4;  // NFTA_RULE_EXPRESSIONS
    std::copy(data, data + size, buf.begin() + NLA_HDRLEN);
    for (Family f : {Family::ip, Family::ip6, Family::inet}) {
        ListedRule r;
        detail::decode_expressions(nla, f, r);
    }
    return 0;
}
