// SPDX-License-Identifier: Apache-2.0
// Go numbers on their way into kernel state. go_uint32: Go's float64-to-uint32 conversion as
// the reference's amd64 binaries do it (tc's buckets and limits): truncation toward zero to a
// 64-bit integer, then the low 32 bits, so a value past 2^32 wraps as it does there. In C++ the
// plain conversion of such a value is undefined; this one is defined for every input (NaN and
// values outside the 64-bit range give 0, as the instruction Go uses does in its low 32 bits).
// kernel_u32: a config's Go int (64 bits) where the kernel holds a u32 (an MTU, a queue length,
// a route's metric or table); nothing when it does not fit, for the caller to refuse, where
// Go's netlink would keep the low 32 bits.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

namespace cni {

inline constexpr std::int64_t kMaxKernelU32 = std::numeric_limits<std::uint32_t>::max();

inline std::optional<std::uint32_t> kernel_u32(std::int64_t v) {
    if (v < 0 || v > kMaxKernelU32) return std::nullopt;
    return std::uint32_t(v);
}

inline std::uint32_t go_uint32(double x) {
    constexpr double k2p63 = 9223372036854775808.0;
    if (!(x > -k2p63 && x < k2p63)) return 0;
    return static_cast<std::uint32_t>(static_cast<std::int64_t>(x));
}

}  // namespace cni
