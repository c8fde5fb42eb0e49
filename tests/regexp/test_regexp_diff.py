#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Differential test of cni-all's regexp (tuning's sysctl allowlist) against Go's regexp
package, which the reference tuning plugin uses: random patterns built from regexp syntax and
its corner cases (bytes that are not UTF-8 among them), each searched in random texts, must be
accepted or refused alike, refused with the same error text, and match the same texts. The
texts are ASCII, as sysctl names are; texts with other runes and bytes that are not UTF-8 are
searched only by patterns without \p classes and (?i), the two things that need Unicode's
tables (docs/tuning.md). Go is Debian's golang-go (1.19); the one syntax Go gained since, the
`(?<name>` group, is never generated and is covered by the unit tests. Usage: test_regexp_diff.py OURS [COUNT [SEED]], OURS being tests/regexp/regexp_oracle."""
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import check, eq, run_all, test  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OURS = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("REGEXP_ORACLE", "")
COUNT = int(sys.argv[2]) if len(sys.argv) > 2 else 40000
SEED = int(sys.argv[3]) if len(sys.argv) > 3 else 20261125
TEXTS_PER_PATTERN = 15

# Single characters: regexp operators and the letters escapes and flags are made of, a few
# that fold to ASCII letters under (?i) (U+212A KELVIN SIGN, U+017F LONG S), other non-ASCII.
CHARS = list("abckKsSAZz09_-.*+?|()[]{}^$\\,:=!>PpxQEdDwWbBimU18 \n/") + ["é", "\u212a", "\u017f", "µ", "Ω"]
# Bytes that are not UTF-8 (a lone lead byte, a stray continuation byte), kept in a str as
# surrogate escapes.
NOT_UTF8 = ["\udcc3", "\udca9", "\udcff"]
# Fragments of syntax that random characters would rarely spell.
FRAGMENTS = [
    r"\Q", r"\E", r"\Qa*\E", "(?i)", "(?-i)", "(?s:", "(?m)", "(?U)", "(?i-s:", "(?im-s)", "(?P<n>", "(?P<>",
    "(?P<n!>", "(?:", "(?z)", "(?i", "[:alpha:]", "[[:^digit:]]", "[[:foo:]]", "[[:word:]x]", r"\pL", r"\pN",
    r"\p{Lu}", r"\p{Ll}", r"\P{Lu}", r"\p{^Nd}", r"\P{^L}", r"\p{Greek}", r"\p{Latin}", r"\p{Common}",
    r"\p{Any}", r"\p{Po}", r"\p{Sm}", r"\p{Zs}", r"\p{Cc}", r"\p{Foo}", r"\pX", r"\p{", r"\p{L", r"\p",
    r"\p{Inherited}", r"\p{Han}", "{2}", "{1,3}", "{,2}", "{3,1}", "{0}", "{2,}", "{1001}", "{1000}", r"\x41",
    r"\x{212A}", r"\x{17f}", r"\x{110000}", r"\x{}", r"\x4", r"\xzz", r"\101", r"\0", r"\8", r"\7", r"\C",
    r"\z", r"\Z", r"\A", r"\a", r"\v", r"\f", r"\t", r"\r", r"\n", r"\e", r"\.", r"\-", r"\_", r"\é",
    "[a-z]", "[^a-c]", "[z-a]", "[a-]", "[-a]", "[]a]", "[^]a]", "[^\\n]", "[\\d-z]", "[a-\\d]",
    "[\\x{100}-\\x{200}]", "[\\x{212A}]", "[^\\x{17F}]", "[é-ü]", "[\\pL]", "[^\\p{Lu}]", "[\\P{Ll}0]",
    "[\\Q]\\E]", "[", "]", r"\d", r"\S", r"\W", ".*", "(a|b)", "(|a)", "a|", "(?i)k", "(?i)s", "x{2}{3}",
    "a**", "a*?", "a+?+", "(a)*", "^*", "$+", r"\b*", "(?i)[k-s]", "(?i)[^k]", "{01}", "{00}", "{1,01}",
    "{99999999999}", "(?P<", "(?P<n", "(?P<é>", "(?P=n)", "(?i)*", "a(?i)*", r"a\Q\E*", r"\Q\E*", "(?s).",
    "(?m)^a$", r"(?i)\W", r"(?i)\S", "(?i)[[:^upper:]]", r"(?i)\P{Lu}", r"(?i)\p{Ll}", r"[\p{Ll}-z]",
    r"\x{FFFD}", "\ufffd", r"\x{D800}", "(a(b(c)))", "((a|b)*)?", "(?:a{2}){3}",
] + NOT_UTF8
# Texts: sysctl-like names and short random ASCII strings.
NAMES = ["net.ipv4.conf.eth0.rp_filter", "net/ipv4/ip_forward", "net.core.somaxconn", "kernel.core_pattern"]
TEXT_CHARS = "abckKsSAZz09_-. \n/$^()[]{}*+?|\\:=!>PQEimU"
UNICODE_TEXT_CHARS = ["é", "É", "\u212a", "\u017f", "µ", "Ω", "\ufffd", "\u4e2d"] + NOT_UTF8
NEEDS_TABLES = re.compile(r"\\[pP]|\(\?[-msU]*i")


def random_pattern(rng):
    parts = []
    for _ in range(rng.randint(1, 9)):
        parts.append(rng.choice(FRAGMENTS) if rng.random() < 0.35 else rng.choice(CHARS))
    return "".join(parts)


def valid_pattern(rng, depth=0):
    """A pattern that compiles, in the shape allowlists have: literals, classes, groups with
    alternatives and flags, repeats and anchors, nested."""
    atoms = [lambda: rng.choice("abcknst_.019"), lambda: rng.choice([r"\.", r"\d", r"\w", r"\W", r"\s", r"\b"]),
             lambda: rng.choice(["[a-z_]", "[^.]", "[0-9a-f]", "[[:alpha:]k]", "[^\n]", r"[\w.]", "."]),
             lambda: rng.choice(["^", "$", r"\A", r"\z"])]
    if depth < 3:
        atoms.append(lambda: "(" + rng.choice(["", "?:", "?i:", "?s:", "?P<g>"]) + "|".join(
            valid_pattern(rng, depth + 1) for _ in range(rng.randint(1, 3))) + ")")
    out = ""
    for _ in range(rng.randint(1, 5)):
        out += rng.choice(atoms)()
        if rng.random() < 0.3:
            out += rng.choice(["*", "+", "?", "{2}", "{1,3}", "{0,}", "*?", "+?"])
    return out


def random_texts(rng, pattern):
    # Texts made of the pattern's own ASCII characters match far more often than random ones.
    own = [c for c in pattern if c.isascii()] or ["a"]
    unicode = not NEEDS_TABLES.search(pattern)
    texts = ["", rng.choice(NAMES)]
    while len(texts) < TEXTS_PER_PATTERN:
        alphabet = own if rng.random() < 0.5 else TEXT_CHARS
        if unicode and rng.random() < 0.3:
            alphabet = list(alphabet) + [c for c in pattern if not c.isascii()] + UNICODE_TEXT_CHARS
        texts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 10))))
    return texts


def field(s):
    return "x" + s.encode("utf-8", "surrogateescape").hex()


def answers(program, lines):
    return subprocess.run([program], input="".join(lines), capture_output=True, text=True, check=True).stdout.splitlines()


def defeat_factoring(pattern):
    """The same pattern with an empty group `(?:)` opening every second alternative of each
    group, so that no two neighbouring alternatives start alike. Go 1.19 factors neighbours that
    start with the same character even when only one of them is case-insensitive, and then
    matches wrongly (golang/go#59007, fixed in Go 1.23, which the reference plugins are built
    with): `P(?i)|p[a-z]` does not match "pa". Classes, escapes and \\Q...\\E are copied as
    they are."""
    out, i, branch = [], 0, [0]
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("\\Q", i):
            end = pattern.find("\\E", i)
            end = len(pattern) if end < 0 else end + 2
        elif c == "\\":
            end = i + 2
        elif c == "[":
            end = i + 1 + (pattern[i + 1:i + 2] == "^")
            end += pattern[end:end + 1] == "]"
            while end < len(pattern) and pattern[end] != "]":
                named = pattern.find(":]", end + 2) if pattern.startswith("[:", end) else -1
                end = named + 2 if named >= 0 else end + (2 if pattern[end] == "\\" else 1)
            end += 1
        else:
            end = i + 1
            if c == "(":
                branch.append(0)
            elif c == ")" and len(branch) > 1:
                branch.pop()
            elif c == "|":
                branch[-1] += 1
                if branch[-1] % 2:
                    c = "|(?:)"
        out.append(c if end == i + 1 else pattern[i:end])
        i = end
    return "".join(out)


def describe(line):
    kind, _, rest = line.partition(" ")
    return bytes.fromhex(rest).decode(errors="surrogateescape") if kind == "E" else "matches " + rest


_state = {}


@test
def go_oracle_builds():
    work = tempfile.mkdtemp()
    go = shutil.which("go")
    check(go, "`go` on PATH (Debian golang-go, installed by scripts/install-deps.sh)")
    env = dict(os.environ, GOCACHE=os.path.join(work, "cache"), GOPATH=os.path.join(work, "gopath"), GO111MODULE="off")
    subprocess.run([go, "build", "-o", os.path.join(work, "go-oracle"), os.path.join(HERE, "go_oracle.go")],
                   env=env, check=True)
    _state["go"] = os.path.join(work, "go-oracle")


def line(pattern, texts):
    return " ".join(field(s) for s in [pattern, *texts]) + "\n"


def compare_with_go(cases, what):
    """Asks Go and ours about every (pattern, texts) case; prints the first disagreements and
    the counts, and fails on any disagreement."""
    go, ours = answers(_state["go"], [line(*c) for c in cases]), answers(OURS, [line(*c) for c in cases])
    eq(len(ours), len(go), "one answer per pattern")
    # A disagreement on matches that goes away when Go cannot factor is Go 1.19's bug, not ours.
    recheck = [i for i, (g, o) in enumerate(zip(go, ours)) if g != o and g[0] == o[0] == "M"]
    rechecked = answers(_state["go"], [line(defeat_factoring(cases[i][0]), cases[i][1]) for i in recheck])
    go_bug = {i for i, answer in zip(recheck, rechecked) if answer == ours[i]}
    for i in sorted(go_bug)[:5]:
        print(f"# Go 1.19's golang/go#59007, not counted: {cases[i][0]!r}: go: {describe(go[i])!r}, "
              f"go on {defeat_factoring(cases[i][0])!r} and ours: {describe(ours[i])!r}")
    verdicts = {"accept/refuse": 0, "error text": 0, "matches": 0}
    for i, ((pattern, texts), g, o) in enumerate(zip(cases, go, ours)):
        if g == o or i in go_bug:
            continue
        kind = "accept/refuse" if g[0] != o[0] else "error text" if g[0] == "E" else "matches"
        verdicts[kind] += 1
        if sum(verdicts.values()) <= 25:
            print(f"# {kind}: {pattern!r}: go: {describe(g)!r}, ours: {describe(o)!r}"
                  + (f" over {texts!r}" if kind == "matches" else ""))
    refused = sum(1 for g in go if g.startswith("E"))
    matched = sum(g.count("1") for g in go if g.startswith("M"))
    pairs = sum(len(texts) for _, texts in cases)
    print(f"# {what}: {len(cases)} patterns ({refused} refused by Go), {pairs} pattern/text pairs ({matched} "
          f"matches), seed {SEED}; {len(go_bug)} answers left out as Go 1.19's golang/go#59007")
    eq(verdicts, {"accept/refuse": 0, "error text": 0, "matches": 0}, "disagreements with Go")


@test
def random_patterns_agree_with_go():
    rng = random.Random(SEED)
    cases = []
    for _ in range(COUNT):
        pattern = random_pattern(rng)
        cases.append((pattern, random_texts(rng, pattern)))
    compare_with_go(cases, "random patterns")


@test
def allowlist_shaped_patterns_agree_with_go():
    rng = random.Random(SEED + 1)
    names = NAMES + ["net.ipv4.conf.all.arp_ignore", "net.ipv6.conf.default.accept_ra", "net.core.rmem_max"]
    cases = []
    for _ in range(COUNT // 4):
        texts = [rng.choice(names) for _ in range(5)]
        texts += ["".join(rng.choice("abcknst_.019\n ") for _ in range(rng.randint(0, 12))) for _ in range(10)]
        cases.append((valid_pattern(rng), texts))
    compare_with_go(cases, "allowlist-shaped patterns")


if __name__ == "__main__":
    run_all()
