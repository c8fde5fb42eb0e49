// SPDX-License-Identifier: Apache-2.0
// DHCPv6 messages from a server: a message that decodes encodes to what decodes to the same
// message (decode, encode, decode); what it grants any of its IAs has lifetimes within the floors
// and T1/T2 under their ceilings; the domain search list's names decode or fail cleanly on their
// own.
#include "applets/dhcp/message6.hpp"
#include "fuzz_check.hpp"

using namespace cni::dhcp::v6;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::span<const std::uint8_t> wire(data, size);
    if (auto names = decode_names(wire))
        for (const auto& n : *names) property(bool(encode_name(n)), "a decoded name does not encode");
    auto m = decode(wire);
    if (!m) return 0;
    cni::dhcp::Bytes once = encode(*m);
    auto again = decode(once);
    property(bool(again), "an encoded message does not decode");
    property(*again == *m, "decode, encode, decode changed the message");
    property(encode(*again) == once, "encoding the message again changed its bytes");
    for (const auto& ia : m->ia_na) {
        auto g = granted(*m, ia.iaid);
        property(bool(g.address) == (g.status.code == status::success), "a grant without an address or a failure with one");
        auto t = lease_times(g);
        property(t.lease >= cni::dhcp::kMinLeaseSeconds && t.t1 >= cni::dhcp::kMinRenewSeconds && t.t1 <= t.t2 && t.t2 <= t.lease,
                 "lease times out of order or under the floors");
        property(t.t1 <= kMaxRenewSeconds && t.t2 <= kMaxRebindSeconds, "T1 or T2 over its ceiling");
    }
    return 0;
}
