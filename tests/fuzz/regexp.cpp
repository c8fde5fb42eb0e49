// SPDX-License-Identifier: Apache-2.0
// tuning's Go-compatible regexp: the input is a pattern, a NUL, and a text; any pattern compiles
// or fails cleanly, and a search runs in time linear in the text (no backtracking to hang on).
#include "applets/tuning/regexp.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto input = text_of(data, size);
    auto nul = input.find('\0');
    auto pattern = input.substr(0, nul);
    auto text = nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);
    auto re = cni::tuning::Regexp::compile(pattern);
    if (!re) return 0;
    bool first = re->search(text);
    property(re->search(text) == first, "a search is not deterministic");
    return 0;
}
