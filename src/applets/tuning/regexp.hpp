// SPDX-License-Identifier: Apache-2.0
// Go's regexp (RE2 syntax) for the one place the reference matches patterns an operator wrote:
// tuning's sysctl allowlist, where each line is a regexp.MatchString pattern (unanchored).
// A pattern compiles to a short instruction list that a Thompson simulation runs in time
// linear in the text, with no backtracking, as RE2 does. Patterns and texts are UTF-8 and are
// read rune by rune as Go reads them (an invalid byte in a text is U+FFFD; in a pattern it is
// refused). The whole syntax is supported: literals and escapes (\t \x41 \x{41} \101 \Q..\E,
// escaped punctuation), `.`, classes with ranges, negation, [:name:], \d \s \w and Unicode
// classes (\pL, \p{Greek}, \P{^Lu}) with their negations, ^ $ \A \z \b \B, groups (plain, (?:),
// (?P<name>), (?<name>)), the flags i m s U, * + ? {n} {n,} {n,m} and their lazy forms, and |.
// Patterns are accepted and refused as Go does, with Go's error texts ("error parsing regexp:
// missing closing ): `(a`"); tests/regexp checks that against Go itself. Two things need
// Unicode's tables, which this file leaves out: a \p class knows only its ASCII members, and
// (?i) folds ASCII letters and the two other letters that fold to them (U+212A KELVIN SIGN, U+017F
// LONG S). Sysctl names are ASCII, so neither changes an allowlist's answer (docs/tuning.md).
// Also refused: a pattern whose unrolled repeats exceed 100,000 instructions (Go's limit is
// higher; no allowlist comes close), and groups nested more than 1,000 deep ("expression nests
// too deeply"; Go limits the height of its parse tree to 1,000, which a group holding `|` or a
// repeat adds more than one level to, so Go refuses some patterns a few hundred groups deep that
// we accept). Parsing and compiling keep their own stacks on the heap, so nesting never depends
// on the call stack's size.
#pragma once

#include <bitset>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"

namespace cni::tuning {

class Regexp {
public:
    static Result<Regexp> compile(std::string_view pattern);
    // Whether the pattern matches anywhere in `text` (Go's regexp.MatchString).
    bool search(std::string_view text) const;

    enum class Op : std::uint8_t { rune, split, jump, assert, match };
    enum class Assertion : std::uint8_t { begin_text, end_text, begin_line, end_line, word_boundary, not_word_boundary };
    struct Inst {
        Op op;
        int x = 0;  // rune: index into sets_; split and jump: a target; assert: an Assertion
        int y = 0;  // split: the second target
    };
    // The runes one `rune` instruction accepts.
    struct RuneSet {
        std::bitset<128> ascii;
        std::vector<std::pair<char32_t, char32_t>> high;  // sorted, disjoint ranges above U+007F
        bool contains(char32_t r) const;
    };

private:
    std::vector<Inst> program_;
    std::vector<RuneSet> sets_;
};

}  // namespace cni::tuning
