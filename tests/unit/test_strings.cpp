// SPDX-License-Identifier: Apache-2.0
// Go's string helpers (core/strings): the expected values are what Go gives for the same input.
#include <catch2/catch.hpp>

#include <string>
#include <utility>

#include "core/strings.hpp"

using cni::decode_rune;
using cni::kReplacementRune;

TEST_CASE("decode_rune reads UTF-8 as Go's utf8.DecodeRuneInString", "[base]") {
    using Rune = std::pair<char32_t, std::size_t>;
    CHECK(decode_rune("a", 0) == Rune{U'a', 1});
    CHECK(decode_rune("x\xC3\xA9", 1) == Rune{0xE9, 2});
    CHECK(decode_rune("\xE2\x84\xAA", 0) == Rune{0x212A, 3});
    CHECK(decode_rune("\xF4\x8F\xBF\xBF", 0) == Rune{0x10FFFF, 4});
    CHECK(decode_rune("\xEF\xBF\xBD", 0) == Rune{kReplacementRune, 3});  // a real U+FFFD is three bytes
    // Each byte that does not start a valid sequence is U+FFFD, one byte long.
    for (std::string bad : {"\xC3", "\xC0\x80", "\xE0\x80\x80", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xFF", "\x80", "\xE2\x84"})
        CHECK(decode_rune(bad, 0) == Rune{kReplacementRune, 1});
}

TEST_CASE("cut_text keeps short text whole and cuts long text with a marker, never inside a UTF-8 character", "[base]") {
    CHECK(cni::cut_text("abc", 3) == "abc");
    CHECK(cni::cut_text("abcdef", 3) == "abc...[truncated 3 bytes]");
    CHECK(cni::cut_text("a\xc3\xa9z", 2) == "a...[truncated 3 bytes]");  // not half of the é
    CHECK(cni::cut_text("abc", 0) == "...[truncated 3 bytes]");
}
