// SPDX-License-Identifier: Apache-2.0
// An answer of the instance metadata service as node-setup --imds reads it off the socket: the
// HTTP answer parsed or refused, and its body through every path's parser. Its body never
// passes 64 KiB, and what a parser takes is what the node file may hold: MACs in one form, at
// most 251 of them, device numbers up to 999, ENI ids, IPv4 addresses and masked IPv4 CIDRs (a
// prefix list, as written: each already masked).
#include "core/http/answer.hpp"
#include "applets/vpc_eni/imds.hpp"
#include "fuzz_check.hpp"

using namespace cni;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto r = http::parse_answer(text_of(data, size), "GET http://169.254.169.254/latest/meta-data/mac");
    if (!r) return 0;
    property(r->body.size() <= http::kAnswerLimit, "a body past 64 KiB");
    const std::string_view body = r->body;
    if (auto macs = vpc_eni::metadata_macs(body)) {
        property(!macs->empty() && macs->size() <= vpc_eni::kMostEnis, "a MAC list of 0 or more than 251");
        for (auto& m : *macs) property(m.size() == 17 && m == vpc_eni::metadata_mac(m), "a MAC not in its one form");
    }
    if (auto n = vpc_eni::metadata_device_number(body)) property(*n >= 0 && *n <= 999, "a device number out of range");
    if (auto id = vpc_eni::metadata_eni_id(body)) property(id->starts_with("eni-") && id->size() <= 64, "an ENI id");
    if (auto ips = vpc_eni::metadata_addresses(body))
        for (auto& ip : *ips) property(ip.is_v4(), "an address that is not IPv4");
    if (auto cidrs = vpc_eni::metadata_cidrs(body))
        for (auto& c : *cidrs) property(c.ip.is_v4() && c == c.masked(), "a CIDR not IPv4 or not masked");
    if (auto prefixes = vpc_eni::metadata_prefixes(body))
        for (auto& p : *prefixes) property(p.ip.is_v4() && p.mask_bits == 32 && p == p.masked(), "a prefix not IPv4 or not masked");
    return 0;
}
