// SPDX-License-Identifier: Apache-2.0
// DHCP packets from a server: a packet that decodes encodes to what decodes to the same message
// (decode, encode, decode), and the classless and static route options parse or fail cleanly.
#include "applets/dhcp/message.hpp"
#include "fuzz_check.hpp"

using namespace cni::dhcp;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::span<const std::uint8_t> wire(data, size);
    Bytes raw(data, data + size);
    (void)parse_classless_routes(raw);
    (void)parse_static_routes(raw);
    auto m = decode(wire);
    if (!m) return 0;
    Bytes once = encode(*m);
    auto again = decode(once);
    property(bool(again), "an encoded message does not decode");
    property(encode(*again) == once, "decode, encode, decode changed the message");
    for (auto code : {opt::classless_routes, opt::static_routes})
        if (const Bytes* b = m->find(code)) (void)(code == opt::classless_routes ? parse_classless_routes(*b) : parse_static_routes(*b));
    (void)lease_times(*m);
    return 0;
}
