// SPDX-License-Identifier: Apache-2.0
// Results and prevResults: an object decoded in the shape of each cniVersion family encodes at
// that version to what decodes to the same result (decode, encode, decode), and a result taken
// down to each older version and back up keeps what both versions hold (the second trip through
// a version changes nothing more than the first did). Results with an address or a route
// destination Go would print as "<nil>" are left out: Go cannot read those back either.
#include <algorithm>

#include "core/cni/cni_result.hpp"
#include "core/cni/json.hpp"
#include "core/cni/version.hpp"
#include "fuzz_check.hpp"

using namespace cni;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto doc = json::parse(text_of(data, size));
    if (!doc) return 0;
    for (std::string_view version : kAllVersions) {
        auto r = decode_result(*doc, version);
        if (!r) continue;
        // An address or route destination that was missing prints as Go prints a nil IPNet,
        // "<nil>", which no version reads back (Go's own round trip fails the same way).
        if (std::any_of(r->ips.begin(), r->ips.end(), [](const IpConfig& ip) { return ip.address.is_nil(); }) ||
            std::any_of(r->routes.begin(), r->routes.end(), [](const Route& rt) { return rt.dst.is_nil(); }))
            continue;
        auto text = encode_result(*r, version);
        if (!text) continue;
        auto again = json::parse(*text);
        property(bool(again), "an encoded result does not parse");
        auto r2 = decode_result(*again, version);
        property(bool(r2), "an encoded result does not decode");
        auto text2 = encode_result(*r2, version);
        property(text2 && *text2 == *text, "decode, encode, decode changed the result");
        for (std::string_view down : kAllVersions) {
            auto once = round_trip(*r, down);
            if (!once) continue;
            auto twice = round_trip(*once, down);
            property(twice && *twice == *once, "a second trip through a version changed the result");
        }
    }
    return 0;
}
