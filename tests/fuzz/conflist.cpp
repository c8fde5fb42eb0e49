// SPDX-License-Identifier: Apache-2.0
// What `cni-all exec` loads as libcni does: a conflist, or a single plugin's config made into
// one; a list or an error, whatever the bytes.
#include "core/runtime/network_list.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto text = text_of(data, size);
    (void)cni::runtime::parse_conflist(text);
    (void)cni::runtime::conflist_from_conf(text);
    return 0;
}
