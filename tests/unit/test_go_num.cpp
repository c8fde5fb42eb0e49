// SPDX-License-Identifier: Apache-2.0
// go_uint32: Go's float64-to-uint32 conversion on amd64, defined for every input; kernel_u32:
// a Go int that fits a kernel u32, or nothing.
#include <catch2/catch.hpp>

#include <limits>

#include "core/go_num.hpp"

using cni::go_uint32;

TEST_CASE("go_uint32 truncates toward zero within range", "[base]") {
    CHECK(go_uint32(0.0) == 0u);
    CHECK(go_uint32(25.9) == 25u);
    CHECK(go_uint32(4294967295.0) == 4294967295u);
}

TEST_CASE("go_uint32 keeps the low 32 bits past 2^32, as the reference's binaries do", "[base]") {
    CHECK(go_uint32(4294967296.0) == 0u);
    CHECK(go_uint32(4294967296.0 + 125.5) == 125u);
    CHECK(go_uint32(4294967250e6) == std::uint32_t(std::uint64_t(4294967250000000ULL)));
    CHECK(go_uint32(-1.0) == 4294967295u);
}

TEST_CASE("go_uint32 gives 0 where the 64-bit truncation has no value", "[base]") {
    CHECK(go_uint32(std::numeric_limits<double>::infinity()) == 0u);
    CHECK(go_uint32(-std::numeric_limits<double>::infinity()) == 0u);
    CHECK(go_uint32(std::numeric_limits<double>::quiet_NaN()) == 0u);
    CHECK(go_uint32(1e30) == 0u);
}

TEST_CASE("kernel_u32 takes a Go int only where a u32 holds it", "[base]") {
    CHECK(cni::kernel_u32(0) == 0u);
    CHECK(cni::kernel_u32(4294967295) == 4294967295u);
    CHECK_FALSE(cni::kernel_u32(4294967296));
    CHECK_FALSE(cni::kernel_u32(-1));
    CHECK_FALSE(cni::kernel_u32(std::numeric_limits<std::int64_t>::min()));
}
