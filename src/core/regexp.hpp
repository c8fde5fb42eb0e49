// SPDX-License-Identifier: Apache-2.0
// Go's regexp (RE2 syntax) for the one place the reference matches patterns an operator wrote:
// tuning's sysctl allowlist, where each line is a regexp.MatchString pattern (unanchored).
// A pattern compiles to a short instruction list that a Thompson simulation runs in time
// linear in the text, with no backtracking, as RE2 does. It works on bytes: sysctl keys are
// ASCII. Supported: literals and escapes (\t \x41 \x{41} \101 \Q..\E, escaped punctuation),
// `.`, classes with ranges, negation, [:name:] and \d \s \w with their negations, ^ $ \A \z
// \b \B, groups (plain, (?:), (?P<name>), (?<name>)), the flags i m s U (for the rest of the
// group or scoped as (?i:...)), * + ? {n} {n,} {n,m} and their lazy forms, and |. Errors read
// as Go's ("error parsing regexp: missing closing ): `(a`"). Unicode classes (\p, \P) and
// non-ASCII characters inside a class are refused, not guessed at. As in Go, counted repeats
// nested inside each other may not multiply past 1,000 copies ("invalid repeat count"). Also
// refused: a pattern whose unrolled repeats exceed 100,000 instructions (Go's limit is higher;
// no allowlist comes close), and groups nested more than 1,000 deep ("expression nests too
// deeply"; Go limits the height of its parse tree to 1,000, which a group holding `|` or a
// repeat adds more than one level to, so Go refuses some patterns a few hundred groups deep
// that we accept). Parsing and compiling keep their own stacks on the heap, so nesting never
// depends on the call stack's size.
#pragma once

#include <bitset>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/result.hpp"

namespace cni {

class Regexp {
public:
    static Result<Regexp> compile(std::string_view pattern);
    // Whether the pattern matches anywhere in `text` (Go's regexp.MatchString).
    bool search(std::string_view text) const;

    enum class Op : std::uint8_t { byte, split, jump, assert, match };
    enum class Assertion : std::uint8_t { begin_text, end_text, begin_line, end_line, word_boundary, not_word_boundary };
    struct Inst {
        Op op;
        int x = 0;  // byte: index into sets_; split and jump: a target; assert: an Assertion
        int y = 0;  // split: the second target
    };

private:
    std::vector<Inst> program_;
    std::vector<std::bitset<256>> sets_;
};

}  // namespace cni
