// SPDX-License-Identifier: Apache-2.0
// What the libFuzzer targets share: the input as a string_view, and a property check that aborts
// (a report libFuzzer saves with its input) with a message naming what broke.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

inline std::string_view text_of(const std::uint8_t* data, std::size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

inline void property(bool holds, const char* what) {
    if (holds) return;
    std::fprintf(stderr, "property broken: %s\n", what);
    std::abort();
}
