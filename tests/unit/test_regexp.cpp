// SPDX-License-Identifier: Apache-2.0
// Go regexp syntax and MatchString answers (tuning's allowlist): the expected values are what
// Go's regexp package gives for the same pattern and text.
#include <catch2/catch.hpp>

#include <string>

#include "applets/tuning/regexp.hpp"
#include "small_stack.hpp"

namespace {

bool matches(std::string_view pattern, std::string_view text) {
    auto re = cni::tuning::Regexp::compile(pattern);
    INFO("pattern " << pattern);
    REQUIRE(re);
    return re->search(text);
}

std::string parse_error(std::string_view pattern) {
    auto re = cni::tuning::Regexp::compile(pattern);
    INFO("pattern " << pattern);
    REQUIRE_FALSE(re);
    CHECK(re.error().code == cni::code::invalid_config);
    return re.error().msg;
}

}  // namespace

TEST_CASE("regexp: allowlist patterns as operators write them", "[tuning]") {
    CHECK(matches("^net\\.ipv4\\.conf\\.IFNAME\\.[a-z_]*$", "net.ipv4.conf.IFNAME.arp_ignore"));
    CHECK_FALSE(matches("^net\\.ipv4\\.conf\\.IFNAME\\.[a-z_]*$", "net.ipv4.conf.IFNAME.arp_ignore2"));
    CHECK(matches("somaxconn", "net.core.somaxconn"));  // unanchored, as MatchString
    CHECK_FALSE(matches("^somaxconn", "net.core.somaxconn"));
    CHECK(matches("^net\\.ipv6\\.conf\\.(all|default|IFNAME)\\.accept_ra$", "net.ipv6.conf.default.accept_ra"));
    CHECK_FALSE(matches("^net\\.ipv6\\.conf\\.(all|default)\\.accept_ra$", "net.ipv6.conf.eth0.accept_ra"));
    CHECK(matches("net.core.rmem_(max|default)", "net.core.rmem_max"));
    CHECK(matches("", "anything"));
}

TEST_CASE("regexp: repetition", "[tuning]") {
    CHECK(matches("^a{3}$", "aaa"));
    CHECK_FALSE(matches("^a{3}$", "aa"));
    CHECK(matches("^a{2,}$", "aaaaa"));
    CHECK(matches("^a{1,2}b$", "aab"));
    CHECK_FALSE(matches("^a{1,2}b$", "aaab"));
    CHECK(matches("^a{0}b$", "b"));
    CHECK(matches("^ab*?c$", "abbbc"));
    CHECK(matches("^(ab)+$", "ababab"));
    CHECK_FALSE(matches("^(ab)+$", "ababa"));
    CHECK(matches("^x?y$", "y"));
    // A `{` that opens no valid count is a literal in Go.
    CHECK(matches("^a{,2}$", "a{,2}"));
    CHECK(matches("^a{x}$", "a{x}"));
    CHECK(matches("^{$", "{"));
    // Nested empty loops terminate, and a pathological pattern runs in linear time.
    CHECK(matches("^(a*)*$", "aaaa"));
    CHECK(matches("(|a)*b", "b"));
    CHECK_FALSE(matches("^(a*)*b$", std::string(5000, 'a')));
    CHECK_FALSE(matches("(a|aa)*c", std::string(5000, 'a')));
}

TEST_CASE("regexp: classes", "[tuning]") {
    CHECK(matches("^[]a]+$", "]a]"));
    CHECK(matches("^[^]a]$", "b"));
    CHECK_FALSE(matches("^[^]a]$", "]"));
    CHECK(matches("^[a-]+$", "a-a"));
    CHECK(matches("^[a-c-e]+$", "c-e"));
    CHECK_FALSE(matches("^[a-c-e]+$", "d"));
    CHECK(matches("^[[:alpha:]]+[[:digit:]]$", "eth0"));
    CHECK(matches("^[[:^digit:]]$", "x"));
    CHECK_FALSE(matches("^[[:^digit:]]$", "7"));
    CHECK(matches("^\\d\\D\\w\\W\\s\\S$", "1x_. y"));
    CHECK_FALSE(matches("^\\s$", "\v"));  // Go's \s has no \v
    CHECK(matches("^[\\d.]+$", "10.0.0.1"));
    CHECK(matches("^[^a]$", "\n"));  // a negated class matches a newline, as in Go
    CHECK_FALSE(matches("^.$", "\n"));
    CHECK(matches("^[\\x41-\\x43]+$", "ABC"));
    CHECK(matches("^[\\]\\-]+$", "]-"));
}

TEST_CASE("regexp: escapes", "[tuning]") {
    CHECK(matches("^\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$\\\\$", ".*+?()[]{}|^$\\"));
    CHECK(matches("^\\x41\\x{42}\\103$", "ABC"));
    CHECK(matches("^\\x{e9}$", "\xc3\xa9"));  // a code point is matched as its UTF-8 bytes
    CHECK(matches("^\\Qa.b*\\E$", "a.b*"));
    CHECK_FALSE(matches("^\\Qa.b\\E$", "axb"));
    // A repeat after \E repeats the last quoted character, as Go's parser pushes each one.
    CHECK(matches("^\\Qab\\E*$", "abbb"));
    CHECK(matches("^\\Qab\\E*$", "a"));
    CHECK_FALSE(matches("^\\Qab\\E*$", "abab"));
    CHECK(matches("^\\Qa.\\E{2}$", "a.."));
    CHECK(matches("^x\\Q\\E*$", "xxx"));  // an empty quote: the repeat takes what came before
    CHECK(matches("^\\Qa\\Eb$", "ab"));
    CHECK(matches("^\\t\\n$", "\t\n"));
    CHECK(matches("^\\0$", std::string(1, '\0')));
}

TEST_CASE("regexp: assertions and flags", "[tuning]") {
    CHECK(matches("\\bconf\\b", "net.ipv4.conf.all"));
    CHECK_FALSE(matches("\\bconf\\b", "net.ipv4.config"));
    CHECK(matches("\\Bonf", "conf"));
    CHECK(matches("\\B", ""));  // no word on either side: not a boundary
    CHECK(matches("\\Aab\\z", "ab"));
    CHECK_FALSE(matches("^b", "a\nb"));
    CHECK(matches("(?m)^b$", "a\nb\nc"));
    CHECK_FALSE(matches("a$", "a\n"));  // $ is the end of the text, not before a final newline
    CHECK(matches("(?i)NET\\.CORE", "net.core.somaxconn"));
    CHECK(matches("^(?i:A)b$", "ab"));
    CHECK_FALSE(matches("^(?i:A)b$", "aB"));
    CHECK(matches("^(?i)a|B$", "b"));  // (?i) reaches every later alternative of its group
    CHECK(matches("^(?i)[a-c]+$", "AbC"));
    CHECK_FALSE(matches("^(?i)[^a]$", "A"));
    CHECK(matches("(?s)^a.b$", "a\nb"));
    CHECK(matches("^a(?i)b(?-i)c$", "aBc"));
    CHECK_FALSE(matches("^a(?i)b(?-i)c$", "aBC"));
    CHECK(matches("^(?U)a+$", "aaa"));
    CHECK(matches("^(?P<key>[a-z]+)\\.(?<rest>.*)$", "net.core"));
    CHECK(matches("^(?:ab)+$", "abab"));
    CHECK(matches("a(?)b", "ab"));
}

TEST_CASE("regexp: errors read as Go's", "[tuning]") {
    CHECK(parse_error("net.(") == "error parsing regexp: missing closing ): `net.(`");
    CHECK(parse_error("a)") == "error parsing regexp: unexpected ): `a)`");
    CHECK(parse_error("[a") == "error parsing regexp: missing closing ]: `[a`");
    CHECK(parse_error("*a") == "error parsing regexp: missing argument to repetition operator: `*`");
    CHECK(parse_error("a|+") == "error parsing regexp: missing argument to repetition operator: `+`");
    CHECK(parse_error("(?i)*") == "error parsing regexp: missing argument to repetition operator: `*`");
    // Go shows a lazy operator whole, and checks a count before looking for its argument.
    CHECK(parse_error("*?a") == "error parsing regexp: missing argument to repetition operator: `*?`");
    CHECK(parse_error("{3,1}") == "error parsing regexp: invalid repeat count: `{3,1}`");
    CHECK(parse_error("{2}") == "error parsing regexp: missing argument to repetition operator: `{2}`");
    CHECK(parse_error("a**") == "error parsing regexp: invalid nested repetition operator: `**`");
    CHECK(parse_error("a{2}{3}") == "error parsing regexp: invalid nested repetition operator: `{2}{3}`");
    CHECK(parse_error("a{1001}") == "error parsing regexp: invalid repeat count: `{1001}`");
    CHECK(parse_error("a{3,2}") == "error parsing regexp: invalid repeat count: `{3,2}`");
    CHECK(parse_error("[z-a]") == "error parsing regexp: invalid character class range: `z-a`");
    CHECK(parse_error("[[:nope:]]") == "error parsing regexp: invalid character class range: `[:nope:]`");
    CHECK(parse_error("a\\") == "error parsing regexp: trailing backslash at end of expression: ``");
    CHECK(parse_error("\\1") == "error parsing regexp: invalid escape sequence: `\\1`");
    CHECK(parse_error("\\xZZ") == "error parsing regexp: invalid escape sequence: `\\xZZ`");
    CHECK(parse_error("\\q") == "error parsing regexp: invalid escape sequence: `\\q`");
    CHECK(parse_error("(?x)a") == "error parsing regexp: invalid or unsupported Perl syntax: `(?x`");
    CHECK(parse_error("(?i-)a") == "error parsing regexp: invalid or unsupported Perl syntax: `(?i-)`");
    CHECK(parse_error("(?P<>a)") == "error parsing regexp: invalid named capture: `(?P<>`");
    CHECK(parse_error("\\p{Foo}") == "error parsing regexp: invalid character class range: `\\p{Foo}`");
    CHECK(parse_error("(?P<") == "error parsing regexp: invalid or unsupported Perl syntax: `(?P`");
    CHECK(parse_error("a\xC3" "b") == "error parsing regexp: invalid UTF-8: `\xC3" "b`");
    CHECK(parse_error("\\Q\xC3\\Eb") == "error parsing regexp: invalid UTF-8: `\xC3`");  // the rest of the quote
    CHECK(parse_error("\\x{110000}") == "error parsing regexp: invalid escape sequence: `\\x{110000`");
    CHECK(parse_error("a*?*") == "error parsing regexp: invalid nested repetition operator: `*?*`");
    CHECK(parse_error("a{2}{1001}") == "error parsing regexp: invalid repeat count: `{1001}`");
    CHECK(matches(std::string(500, '(') + "a" + std::string(500, ')'), "a"));
    std::string deep = std::string(100'000, '(') + std::string(100'000, ')');  // no stack overflow
    CHECK(parse_error(deep) == "error parsing regexp: expression nests too deeply: `" + deep + "`");
    std::string large;
    for (int i = 0; i < 101; ++i) large += "a{1000}";  // 101,000 instructions
    CHECK(parse_error(large) == "error parsing regexp: expression too large: `" + large + "`");
}

TEST_CASE("regexp: runes, Unicode classes and case folding, as Go", "[tuning]") {
    CHECK(matches("^\\pL+\\p{Nd}$", "sysctl1"));
    CHECK_FALSE(matches("^\\PL$", "a"));
    CHECK(matches("^\\p{^Lu}$", "a"));
    CHECK(matches("^[\\p{Greek}\\x{e9}]$", "\xC3\xA9"));  // é, one rune
    CHECK(matches("^x\xC3\xA9*$", "x"));        // a repeat takes the whole rune
    CHECK(matches("^.$", "\xC3\xA9"));
    CHECK(matches("^.$", "\xFF"));               // a byte that is not UTF-8 is one rune, U+FFFD
    CHECK(matches("(?i)\\x{212A}", "k"));         // KELVIN SIGN folds to k
    CHECK_FALSE(matches("(?i)[^\\x{17F}]", "S"));  // and LONG S to s
    CHECK_FALSE(matches("(?i)[[:^upper:]]", "a"));  // a negated class is folded, then negated
    CHECK(matches("(?i)\\p{Lu}", "a"));
    CHECK(matches("^(?<name>a)$", "a"));          // current Go's named group
    CHECK(matches("^a(?i)*$", "aa"));              // a repeat after (?i) repeats the atom before
    CHECK(matches("^a{01}$", "a{01}"));            // a count with a leading zero is literal
    // Alternatives that start alike but differ in case folding are kept apart (Go 1.19 merged
    // them, golang/go#59007; Go 1.23, which the reference is built with, does not).
    CHECK(matches("P(?i)|p[a-z]", "pa"));
}

TEST_CASE("regexp: counted repeats nested in each other make at most 1,000 copies, as in Go", "[tuning]") {
    CHECK(matches("^(a{100}){10}$", std::string(1000, 'a')));
    CHECK(parse_error("(a{100}){11}") == "error parsing regexp: invalid repeat count: `{11}`");
    CHECK(parse_error("(a{10}){101}?") == "error parsing regexp: invalid repeat count: `{101}?`");
    CHECK(parse_error("((a{1000}){1000}){1000}") == "error parsing regexp: invalid repeat count: `{1000}`");
    CHECK(parse_error("(\\b{1000}){2}") == "error parsing regexp: invalid repeat count: `{2}`");
    CHECK(matches("(a{2,}){500}", std::string(1000, 'a')));  // {n,} counts as n
    CHECK(parse_error("(a{2,}){501}") == "error parsing regexp: invalid repeat count: `{501}`");
    CHECK(matches("((a{1000}){0}){1000}x", "x"));  // {0}: what is inside never appears
    CHECK(matches("(a{1000}|b*){1}(c+d?)*", "a"));  // * + ? are not counted
}

TEST_CASE("regexp: nesting costs no call stack", "[tuning]") {
    // 1,000 nested groups (the most we allow) and every kind of node at each level: parsing
    // and compiling use explicit stacks, so a 64 KiB stack is plenty.
    std::string pattern;
    for (int i = 0; i < 1000; ++i) pattern += "(?:x|";
    pattern += "a";
    for (int i = 0; i < 1000; ++i) pattern += "y?)*";
    bool compiled = false, matched = false;
    std::string error;
    on_small_stack([&] {
        auto re = cni::tuning::Regexp::compile(pattern);
        compiled = bool(re);
        if (re) matched = re->search("-a-");
        auto deeper = cni::tuning::Regexp::compile("(" + pattern + ")");
        error = deeper ? "" : deeper.error().msg;
    });
    CHECK(compiled);
    CHECK(matched);
    CHECK(error == "error parsing regexp: expression nests too deeply: `(" + pattern + ")`");
}
