// SPDX-License-Identifier: Apache-2.0
// The dhcp daemon's lease records, read back from its state directory at start: a record that
// decodes encodes to what decodes and encodes the same (decode, encode, decode).
#include "applets/dhcp/lease_store.hpp"
#include "fuzz_check.hpp"

using namespace cni::dhcp;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto r = decode_record(text_of(data, size));
    if (!r) return 0;
    std::string once = encode_record(*r);
    auto again = decode_record(once);
    property(bool(again), "an encoded lease record does not decode");
    property(encode_record(*again) == once, "decode, encode, decode changed the record");
    return 0;
}
