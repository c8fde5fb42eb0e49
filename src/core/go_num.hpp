// SPDX-License-Identifier: Apache-2.0
// Go's float64-to-uint32 conversion as the reference's amd64 binaries do it, for values that end
// up in kernel state (tc's buckets and limits): truncation toward zero to a 64-bit integer, then
// the low 32 bits, so a value past 2^32 wraps as it does there. In C++ the plain conversion of
// such a value is undefined; this one is defined for every input (NaN and values outside the
// 64-bit range give 0, as the instruction Go uses does in its low 32 bits).
#pragma once

#include <cmath>
#include <cstdint>

namespace cni {

inline std::uint32_t go_uint32(double x) {
    constexpr double k2p63 = 9223372036854775808.0;
    if (!(x > -k2p63 && x < k2p63)) return 0;
    return static_cast<std::uint32_t>(static_cast<std::int64_t>(x));
}

}  // namespace cni
