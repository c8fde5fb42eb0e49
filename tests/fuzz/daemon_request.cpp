// SPDX-License-Identifier: Apache-2.0
// The dhcp daemon's socket messages: a request (what any local process may write to its socket)
// or a reply that decodes encodes to what decodes and encodes the same (decode, encode, decode).
#include "applets/dhcp/protocol.hpp"
#include "fuzz_check.hpp"

using namespace cni::dhcp;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto text = text_of(data, size);
    if (auto req = decode_request(text)) {
        std::string once = encode_request(*req);
        auto again = decode_request(once);
        property(bool(again), "an encoded request does not decode");
        property(encode_request(*again) == once, "decode, encode, decode changed the request");
    }
    auto reply = decode_reply(text);
    std::string once = encode_reply(reply);
    property(encode_reply(decode_reply(once)) == once, "decode, encode, decode changed the reply");
    return 0;
}
