// SPDX-License-Identifier: Apache-2.0
// The syntax check Go's encoding/json runs over a whole text before decoding it, written anew
// as a state machine: the first error, worded as Go words it ("invalid character 'x' after
// object key", "... in literal true (expecting 'r')", "exceeded max depth" past 10,000 nested
// arrays and objects, "unexpected end of JSON input"). json::parse lets RapidJSON try first and
// asks here only where RapidJSON's verdict may not be Go's, so a refused config gets exactly
// the Go plugins' text. Also here: rewriting the valid JSON RapidJSON refuses (lone UTF-16
// surrogate escapes, which Go decodes to U+FFFD; numbers beyond a double's range, which Go
// accepts until a field needs their value).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace cni::json {

// The first syntax error in `text`: Go's message, and the offset of the byte at fault (the text's
// length when it ends too soon); nullopt when it is valid JSON.
struct SyntaxError {
    std::string message;
    std::size_t offset = 0;
};
std::optional<SyntaxError> find_syntax_error(std::string_view text);

// Go's message for the first syntax error in `text`, or nullopt when it is valid JSON.
std::optional<std::string> go_syntax_error(std::string_view text);

// `text` with each byte that starts no valid UTF-8 sequence (an encoded surrogate included)
// replaced by U+FFFD, as Go's decoder reads strings; "" when it is valid UTF-8 already.
std::string replace_invalid_utf8(std::string_view text);

// `text` (valid JSON) with every \u escape of an unpaired surrogate replaced by \ufffd.
std::string replace_lone_surrogates(std::string_view text);

// `text` (valid JSON) with the number literal at `offset`, whose exponent RapidJSON refused as
// too large, replaced by the largest finite double of the same sign, or by a zero of that sign
// when its digits are all zeros (Go reads -0.000e400 as -0).
std::string clamp_number_at(std::string_view text, std::size_t offset);

}  // namespace cni::json
