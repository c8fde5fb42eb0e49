// SPDX-License-Identifier: Apache-2.0
// Go regexp syntax, parsed rune by rune into a tree, compiled into a Thompson program, run as a
// set of threads stepping through the text's runes together (see regexp.hpp).
#include "applets/tuning/regexp.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <utility>

#include "core/strings.hpp"

namespace cni::tuning {

namespace {

using RuneSet = Regexp::RuneSet;
using Assertion = Regexp::Assertion;

constexpr int kMaxRepeat = 1000;        // RE2's limit on {n,m}
constexpr std::size_t kMaxProgram = 100'000;  // instructions, after repeats are unrolled
constexpr int kMaxDepth = 1000;                // nested groups (Go limits its parse tree's height instead; see regexp.hpp)
constexpr char32_t kMaxRune = 0x10FFFF;

struct Flags {
    bool fold = false;       // i
    bool multiline = false;  // m: ^ and $ at line ends too
    bool dot_nl = false;     // s: . matches \n
};

struct Node {
    enum class Kind { empty, set, concat, alternate, repeat, assert } kind = Kind::empty;
    int set = 0;             // set: index into the set list
    std::vector<int> parts = {};  // concat, alternate; repeat: the one repeated node
    int min = 0, max = 0;    // repeat; max -1 is unbounded
    Assertion assertion = Assertion::begin_text;
};

bool is_word(char32_t c) { return c < 0x80 && (std::isalnum(int(c)) || c == '_'); }

// --- Rune sets -----------------------------------------------------------------------------

void add_range(RuneSet& s, char32_t lo, char32_t hi) {
    for (; lo <= hi && lo < 0x80; ++lo) s.ascii.set(lo);
    if (lo <= hi) s.high.emplace_back(lo, hi);
}

// Sorts and merges the ranges above ASCII, so that negation and lookup can rely on order.
void normalize(RuneSet& s) {
    std::sort(s.high.begin(), s.high.end());
    std::vector<std::pair<char32_t, char32_t>> merged;
    for (auto range : s.high) {
        if (!merged.empty() && range.first <= merged.back().second + 1)
            merged.back().second = std::max(merged.back().second, range.second);
        else
            merged.push_back(range);
    }
    s.high = std::move(merged);
}

void merge(RuneSet& into, const RuneSet& from) {
    into.ascii |= from.ascii;
    into.high.insert(into.high.end(), from.high.begin(), from.high.end());
    normalize(into);
}

RuneSet negated(RuneSet s) {
    normalize(s);
    RuneSet out;
    out.ascii = ~s.ascii;
    char32_t next = 0x80;
    for (auto [lo, hi] : s.high) {
        if (lo > next) out.high.emplace_back(next, lo - 1);
        next = hi + 1;
    }
    if (next <= kMaxRune) out.high.emplace_back(next, kMaxRune);
    return out;
}

// Under (?i): ASCII letters with their other case, and the two non-ASCII runes whose case
// folding reaches ASCII (K, k and U+212A KELVIN SIGN; S, s and U+017F LONG S).
RuneSet folded(RuneSet s) {
    normalize(s);
    for (char32_t c = 'a'; c <= 'z'; ++c) {
        if (s.ascii.test(c) || s.ascii.test(c - 32)) s.ascii.set(c).set(c - 32);
    }
    for (auto [letter, other] : {std::pair<char32_t, char32_t>{'k', 0x212A}, {'s', 0x17F}}) {
        if (s.ascii.test(letter) || s.contains(other)) {
            s.ascii.set(letter).set(letter - 32);
            s.high.emplace_back(other, other);
        }
    }
    normalize(s);
    return s;
}

RuneSet of_chars(std::string_view chars) {
    RuneSet s;
    for (unsigned char c : chars) s.ascii.set(c);
    return s;
}

template <class Predicate>
RuneSet of_predicate(Predicate in) {
    RuneSet s;
    for (int c = 0; c < 128; ++c) s.ascii.set(std::size_t(c), in(c) != 0);
    return s;
}

// The POSIX classes Go knows, ASCII only as in Go.
std::optional<RuneSet> posix_class(std::string_view name) {
    if (name == "alnum") return of_predicate([](int c) { return std::isalnum(c); });
    if (name == "alpha") return of_predicate([](int c) { return std::isalpha(c); });
    if (name == "ascii") return RuneSet{.ascii = std::bitset<128>().set(), .high = {}};
    if (name == "blank") return of_chars(" \t");
    if (name == "cntrl") return of_predicate([](int c) { return std::iscntrl(c); });
    if (name == "digit") return of_predicate([](int c) { return std::isdigit(c); });
    if (name == "graph") return of_predicate([](int c) { return std::isgraph(c); });
    if (name == "lower") return of_predicate([](int c) { return std::islower(c); });
    if (name == "print") return of_predicate([](int c) { return std::isprint(c); });
    if (name == "punct") return of_predicate([](int c) { return std::ispunct(c); });
    if (name == "space") return of_chars(" \t\n\v\f\r");
    if (name == "upper") return of_predicate([](int c) { return std::isupper(c); });
    if (name == "word") return of_predicate([](int c) { return int(is_word(char32_t(c))); });
    if (name == "xdigit") return of_predicate([](int c) { return std::isxdigit(c); });
    return std::nullopt;
}

// \d \s \w (lower case; upper case is the negation, which the caller applies), as Go defines
// them (\s without \v).
std::optional<RuneSet> perl_class(char c) {
    switch (std::tolower(static_cast<unsigned char>(c))) {
        case 'd': return posix_class("digit");
        case 's': return of_chars(" \t\n\f\r");
        case 'w': return posix_class("word");
        default: return std::nullopt;
    }
}

// The names \p{...} knows: Any, Unicode's general categories, and its scripts (Unicode 15, as
// current Go; Go 1.19 lacks the last seven).
constexpr std::string_view kCategories =
    " C Cc Cf Co Cs L Ll Lm Lo Lt Lu M Mc Me Mn N Nd Nl No P Pc Pd Pe Pf Pi Po Ps S Sc Sk Sm So Z Zl Zp Zs ";
constexpr std::string_view kScripts =
    " Adlam Ahom Anatolian_Hieroglyphs Arabic Armenian Avestan Balinese Bamum Bassa_Vah Batak Bengali Bhaiksuki"
    " Bopomofo Brahmi Braille Buginese Buhid Canadian_Aboriginal Carian Caucasian_Albanian Chakma Cham Cherokee"
    " Chorasmian Common Coptic Cuneiform Cypriot Cyrillic Deseret Devanagari Dives_Akuru Dogra Duployan"
    " Egyptian_Hieroglyphs Elbasan Elymaic Ethiopic Georgian Glagolitic Gothic Grantha Greek Gujarati Gunjala_Gondi"
    " Gurmukhi Han Hangul Hanifi_Rohingya Hanunoo Hatran Hebrew Hiragana Imperial_Aramaic Inherited"
    " Inscriptional_Pahlavi Inscriptional_Parthian Javanese Kaithi Kannada Katakana Kayah_Li Kharoshthi"
    " Khitan_Small_Script Khmer Khojki Khudawadi Lao Latin Lepcha Limbu Linear_A Linear_B Lisu Lycian Lydian"
    " Mahajani Makasar Malayalam Mandaic Manichaean Marchen Masaram_Gondi Medefaidrin Meetei_Mayek Mende_Kikakui"
    " Meroitic_Cursive Meroitic_Hieroglyphs Miao Modi Mongolian Mro Multani Myanmar Nabataean Nandinagari"
    " New_Tai_Lue Newa Nko Nushu Nyiakeng_Puachue_Hmong Ogham Ol_Chiki Old_Hungarian Old_Italic Old_North_Arabian"
    " Old_Permic Old_Persian Old_Sogdian Old_South_Arabian Old_Turkic Oriya Osage Osmanya Pahawh_Hmong Palmyrene"
    " Pau_Cin_Hau Phags_Pa Phoenician Psalter_Pahlavi Rejang Runic Samaritan Saurashtra Sharada Shavian Siddham"
    " SignWriting Sinhala Sogdian Sora_Sompeng Soyombo Sundanese Syloti_Nagri Syriac Tagalog Tagbanwa Tai_Le"
    " Tai_Tham Tai_Viet Takri Tamil Tangut Telugu Thaana Thai Tibetan Tifinagh Tirhuta Ugaritic Vai Wancho"
    " Warang_Citi Yezidi Yi Zanabazar_Square"
    " Cypro_Minoan Old_Uyghur Tangsa Toto Vithkuqi Kawi Nag_Mundari ";
// The names Go folds under (?i) (its fold tables); the others are taken as they are.
constexpr std::string_view kFolding = " Any L Ll Lt Lu M Mn Common Greek Inherited ";

bool listed(std::string_view list, std::string_view name) {
    return !name.empty() && name.find(' ') == std::string_view::npos &&
           list.find(" " + std::string(name) + " ") != std::string_view::npos;
}

// A Unicode class's ASCII members (see regexp.hpp: the rest of Unicode is left out).
std::optional<RuneSet> unicode_class(std::string_view name) {
    constexpr std::string_view kPunct = "!\"#%&'()*,-./:;?@[\\]_{}", kSymbols = "$+<=>^`|~";
    if (name == "Any") return negated(RuneSet{});
    if (name == "C" || name == "Cc") return of_predicate([](int c) { return std::iscntrl(c); });
    if (name == "L" || name == "Latin") return of_predicate([](int c) { return std::isalpha(c); });
    if (name == "Lu") return of_predicate([](int c) { return std::isupper(c); });
    if (name == "Ll") return of_predicate([](int c) { return std::islower(c); });
    if (name == "N" || name == "Nd") return of_predicate([](int c) { return std::isdigit(c); });
    if (name == "P") return of_chars(kPunct);
    if (name == "Pc") return of_chars("_");
    if (name == "Pd") return of_chars("-");
    if (name == "Ps") return of_chars("([{");
    if (name == "Pe") return of_chars(")]}");
    if (name == "Po") return of_chars("!\"#%&'*,./:;?@\\");
    if (name == "S") return of_chars(kSymbols);
    if (name == "Sc") return of_chars("$");
    if (name == "Sk") return of_chars("^`");
    if (name == "Sm") return of_chars("+<=>|~");
    if (name == "Z" || name == "Zs") return of_chars(" ");
    if (name == "Common") {
        RuneSet s = of_predicate([](int c) { return std::isalpha(c); });
        s.ascii.flip();
        return s;
    }
    if (listed(kCategories, name) || listed(kScripts, name)) return RuneSet{};
    return std::nullopt;
}

// A class such as \W or [:^alpha:] under the flags, as Go builds it: folded first, then negated.
RuneSet group(RuneSet members, bool negate, bool fold) {
    if (fold) members = folded(std::move(members));
    return negate ? negated(std::move(members)) : members;
}

// --- Parser --------------------------------------------------------------------------------

class Parser {
public:
    explicit Parser(std::string_view re) : re_(re) {}

    // The whole pattern, with an explicit stack of open groups in place of recursion, so
    // nesting costs heap, never call stack.
    Result<int> parse() {
        std::vector<OpenGroup> open(1);  // the pattern itself is the outermost "group"
        for (;;) {
            OpenGroup& group = open.back();
            if (at_end() || peek() == '|' || peek() == ')') {
                group.branches.push_back(sequence(std::move(group.sequence)));
                group.sequence.clear();
                if (!at_end() && peek() == '|') {
                    ++pos_;
                    continue;
                }
                bool outermost = open.size() == 1;
                if (at_end() && !outermost) return error("missing closing )", re_);
                if (!at_end() && outermost) return error("unexpected )", re_);
                int node = choice(std::move(group.branches));
                if (outermost) return node;
                ++pos_;
                open.pop_back();
                CNI_TRY_ASSIGN(int repeated, repetitions(node));
                open.back().sequence.push_back(repeated);
                continue;
            }
            // A repetition here follows something that matched nothing ((?i), \Q\E) or nothing
            // at all: as in Go, it repeats the atom before, if there is one.
            if (int min = 0, max = 0; std::size_t len = repeat_length(&min, &max)) {
                if (!group.sequence.empty()) {
                    CNI_TRY_ASSIGN(group.sequence.back(), repetitions(group.sequence.back()));
                    continue;
                }
                // As Go: the counts are checked first, and the operator is shown with its lazy `?`.
                if (min > kMaxRepeat || max > kMaxRepeat || (max >= 0 && max < min))
                    return error("invalid repeat count", re_.substr(pos_, len));
                if (pos_ + len < re_.size() && re_[pos_ + len] == '?') ++len;
                return error("missing argument to repetition operator", re_.substr(pos_, len));
            }
            if (peek() == '(') {
                CNI_TRY_ASSIGN(GroupOpening opening, group_opening(group.flags));
                if (opening.flags_only) {
                    group.flags = opening.inner;
                    continue;
                }
                if (open.size() > std::size_t(kMaxDepth)) return error("expression nests too deeply", re_);
                open.push_back(OpenGroup{.flags = opening.inner});
                continue;
            }
            if (next_is("\\Q")) {  // each quoted rune is an atom: a repeat after \E takes the last
                pos_ += 2;
                std::size_t end = std::min(re_.find("\\E", pos_), re_.size());
                while (pos_ < end) {
                    CNI_TRY_ASSIGN(char32_t r, next_rune(end));
                    group.sequence.push_back(add_literal(r, group.flags));
                }
                pos_ = std::min(end + 2, re_.size());
                continue;
            }
            CNI_TRY_ASSIGN(int node, atom(group.flags));
            CNI_TRY_ASSIGN(int repeated, repetitions(node));
            group.sequence.push_back(repeated);
        }
    }

    std::vector<Node> nodes;
    std::vector<RuneSet> sets;

private:
    std::string_view re_;
    std::size_t pos_ = 0;

    // A group whose `)` has not been read yet.
    struct OpenGroup {
        Flags flags;                 // in force inside it, (?i) included
        std::vector<int> branches = {};  // finished alternatives
        std::vector<int> sequence = {};  // the alternative being read
    };
    // What a `(` opened: a group with these flags inside, or (flags_only) a flag group such as
    // (?i) that changes the flags of the group around it and matches nothing.
    struct GroupOpening {
        Flags inner;
        bool flags_only = false;
    };

    static cni::Unexpected<Error> error(std::string_view what, std::string_view expr) {
        return fail(code::invalid_config, "error parsing regexp: " + std::string(what) + ": `" + std::string(expr) + "`");
    }

    bool at_end() const { return pos_ >= re_.size(); }
    char peek() const { return re_[pos_]; }
    bool next_is(std::string_view s) const { return re_.substr(pos_).starts_with(s); }

    // The rune at pos_, which moves past it. A pattern that is not UTF-8 is refused there, and
    // the error shows the rest of what was being read, up to `end` (as Go's does).
    Result<char32_t> next_rune(std::size_t end = std::string_view::npos) {
        auto [r, len] = decode_rune(re_, pos_);
        if (r == kReplacementRune && len == 1) return error("invalid UTF-8", re_.substr(pos_, end - std::min(end, pos_)));
        pos_ += len;
        return r;
    }
    // Whether re_[from, end) is UTF-8, as next_rune reports it; pos_ is left where it was.
    Status check_utf8(std::size_t from, std::size_t end) {
        std::size_t saved = std::exchange(pos_, from);
        while (pos_ < end) {
            if (auto r = next_rune(end); !r) return cni::Unexpected(r.error());
        }
        pos_ = saved;
        return {};
    }

    int add(Node n) {
        nodes.push_back(std::move(n));
        return int(nodes.size()) - 1;
    }
    int add_set(RuneSet s) {
        normalize(s);
        sets.push_back(std::move(s));
        return add(Node{.kind = Node::Kind::set, .set = int(sets.size()) - 1});
    }
    int add_assert(Assertion a) { return add(Node{.kind = Node::Kind::assert, .assertion = a}); }
    int add_literal(char32_t r, const Flags& f) {
        RuneSet s;
        add_range(s, r, r);
        return add_set(f.fold ? folded(std::move(s)) : std::move(s));
    }

    int sequence(std::vector<int> parts) {
        return parts.size() == 1 ? parts[0] : add(Node{.kind = Node::Kind::concat, .parts = std::move(parts)});
    }
    int choice(std::vector<int> branches) {
        return branches.size() == 1 ? branches[0] : add(Node{.kind = Node::Kind::alternate, .parts = std::move(branches)});
    }

    // The length of the repetition operator at pos_ (0 if there is none); `{` that does not
    // open a valid {n}, {n,} or {n,m} is a literal, as in Go, and so is a count with a leading
    // zero ({01}).
    std::size_t repeat_length(int* min = nullptr, int* max = nullptr) const {
        char c = peek();
        if (c == '*' || c == '+' || c == '?') {
            if (min) *min = c == '+' ? 1 : 0;
            if (max) *max = c == '?' ? 1 : -1;
            return 1;
        }
        if (c != '{') return 0;
        std::size_t i = pos_ + 1;
        auto digit = [&](std::size_t k) { return k < re_.size() && std::isdigit(static_cast<unsigned char>(re_[k])); };
        auto number = [&](int& out) {
            if (!digit(i) || (re_[i] == '0' && digit(i + 1))) return false;
            long v = 0;
            for (; digit(i); ++i) v = std::min<long>(v * 10 + (re_[i] - '0'), kMaxRepeat + 1L);
            out = int(v);
            return true;
        };
        int lo = 0, hi = 0;
        if (!number(lo)) return 0;
        hi = lo;
        if (i < re_.size() && re_[i] == ',') {
            ++i;
            if (i < re_.size() && re_[i] == '}') hi = -1;
            else if (!number(hi)) return 0;
        }
        if (i >= re_.size() || re_[i] != '}') return 0;
        if (min) *min = lo;
        if (max) *max = hi;
        return i + 1 - pos_;
    }

    Result<int> repetitions(int node) {
        std::size_t last_op = std::string_view::npos;
        for (;;) {
            if (at_end()) return node;
            int min = 0, max = 0;
            std::size_t len = repeat_length(&min, &max);
            if (len == 0) return node;
            if (min > kMaxRepeat || max > kMaxRepeat || (max >= 0 && max < min))
                return error("invalid repeat count", re_.substr(pos_, len));
            std::size_t op = pos_;
            pos_ += len;
            if (!at_end() && peek() == '?') ++pos_;  // lazy: the same answer to "is there a match"
            if (last_op != std::string_view::npos)
                return error("invalid nested repetition operator", re_.substr(last_op, pos_ - last_op));
            last_op = op;
            Node rep{.kind = Node::Kind::repeat, .parts = {node}, .min = min, .max = max};
            node = add(std::move(rep));
            if ((min >= 2 || max >= 2) && !copies_within_limit(node))
                return error("invalid repeat count", re_.substr(op, pos_ - op));
        }
    }

    // Go's rule for counted repeats: nested ones may not multiply past 1,000 copies of what is
    // innermost, so (a{100}){10} is fine and (a{100}){11} is not.
    bool copies_within_limit(int root) const {
        std::vector<std::pair<int, int>> todo{{root, kMaxRepeat}};  // node, copies it may still make
        while (!todo.empty()) {
            auto [index, budget] = todo.back();
            todo.pop_back();
            const Node& n = nodes[std::size_t(index)];
            if (n.kind == Node::Kind::repeat) {
                int most = n.max < 0 ? n.min : n.max;
                if (most == 0) continue;  // x{0}: whatever is inside never appears
                if (most > budget) return false;
                budget /= most;
            }
            for (int part : n.parts) todo.emplace_back(part, budget);
        }
        return true;
    }

    // One atom other than a group.
    Result<int> atom(const Flags& flags) {
        std::size_t start = pos_;
        switch (peek()) {
            case '[': ++pos_; return char_class(flags, start);
            case '.': {
                ++pos_;
                RuneSet all = negated(RuneSet{});
                if (!flags.dot_nl) all.ascii.reset('\n');
                return add_set(std::move(all));
            }
            case '^': ++pos_; return add_assert(flags.multiline ? Assertion::begin_line : Assertion::begin_text);
            case '$': ++pos_; return add_assert(flags.multiline ? Assertion::end_line : Assertion::end_text);
            case '\\': ++pos_; return escape(flags, start);
            default: {
                CNI_TRY_ASSIGN(char32_t r, next_rune());
                return add_literal(r, flags);
            }
        }
    }

    // After `(` is seen (pos_ at it): its header, (?P<name>, (?<name>, (?flags: or (?flags).
    Result<GroupOpening> group_opening(const Flags& outer) {
        std::size_t start = pos_++;
        GroupOpening opening{.inner = outer};
        std::size_t left = re_.size() - start;
        bool python = left > 4 && next_is("?P<"), perl = left > 3 && next_is("?<");
        if (python || perl) {
            pos_ += python ? 3 : 2;
            std::size_t end = re_.find('>', pos_);
            CNI_TRY(check_utf8(end == std::string_view::npos ? start : pos_, std::min(end, re_.size())));
            if (end == std::string_view::npos) return error("invalid named capture", re_.substr(start));
            std::string_view name = re_.substr(pos_, end - pos_);
            bool valid = !name.empty();
            for (unsigned char ch : name) valid = valid && is_word(ch);
            if (!valid) return error("invalid named capture", re_.substr(start, end + 1 - start));
            pos_ = end + 1;
        } else if (next_is("?")) {  // flags: (?i) for the rest of this group, (?i:...) scoped
            ++pos_;
            bool negate = false, saw_flag = false;
            while (!at_end()) {
                CNI_TRY_ASSIGN(char32_t f, next_rune());
                if (f == ':' || f == ')') {
                    if (negate && !saw_flag) break;
                    opening.flags_only = f == ')';
                    return opening;
                }
                if (f == '-') {
                    if (negate) break;
                    negate = true;
                    saw_flag = false;
                    continue;
                }
                if (f == 'i') opening.inner.fold = !negate;
                else if (f == 'm') opening.inner.multiline = !negate;
                else if (f == 's') opening.inner.dot_nl = !negate;
                else if (f != 'U') break;  // U (ungreedy) changes which match, not whether one exists
                saw_flag = true;
            }
            return error("invalid or unsupported Perl syntax", re_.substr(start, pos_ - start));
        }
        return opening;
    }

    // After `\` (pos_ past it): an assertion (\b), a class (\pL, \d) or one character (\Q..\E
    // is parse()'s).
    Result<int> escape(const Flags& flags, std::size_t start) {
        if (at_end()) return error("trailing backslash at end of expression", "");
        switch (peek()) {
            case 'A': ++pos_; return add_assert(Assertion::begin_text);
            case 'z': ++pos_; return add_assert(Assertion::end_text);
            case 'b': ++pos_; return add_assert(Assertion::word_boundary);
            case 'B': ++pos_; return add_assert(Assertion::not_word_boundary);
            case 'C': return error("invalid escape sequence", "\\C");  // any byte: Go refuses it
            default: break;
        }
        pos_ = start;
        CNI_TRY_ASSIGN(std::optional<RuneSet> set, class_escape(flags));
        if (set) return add_set(std::move(*set));
        ++pos_;
        CNI_TRY_ASSIGN(char32_t r, escaped_char(start));
        return add_literal(r, flags);
    }

    // A \p{Name}, \pN or \d-style class at pos_ (a backslash), pos_ past it; nothing (pos_
    // unmoved) if there is none.
    Result<std::optional<RuneSet>> class_escape(const Flags& flags) {
        if (pos_ + 1 >= re_.size() || re_[pos_] != '\\') return std::nullopt;
        char c = re_[pos_ + 1];
        if (auto perl = perl_class(c)) {
            pos_ += 2;
            return group(std::move(*perl), std::isupper(static_cast<unsigned char>(c)), flags.fold);
        }
        if (c != 'p' && c != 'P') return std::nullopt;
        std::size_t start = pos_;
        bool negate = c == 'P';
        pos_ += 2;
        std::string_view name;
        if (!at_end() && peek() == '{') {
            std::size_t end = re_.find('}', pos_);
            if (end == std::string_view::npos) {
                CNI_TRY(check_utf8(start, re_.size()));
                return error("invalid character class range", re_.substr(start));
            }
            CNI_TRY(check_utf8(pos_ + 1, end));
            name = re_.substr(pos_ + 1, end - pos_ - 1);
            pos_ = end + 1;
        } else if (!at_end()) {
            std::size_t at = pos_;
            CNI_TRY(next_rune());
            name = re_.substr(at, pos_ - at);
        }
        if (name.starts_with('^')) {
            negate = !negate;
            name.remove_prefix(1);
        }
        std::optional<RuneSet> members = unicode_class(name);
        if (!members) return error("invalid character class range", re_.substr(start, pos_ - start));
        return group(std::move(*members), negate, flags.fold && listed(kFolding, name));
    }

    // One escaped character after `\` (pos_ at the character after the backslash), consumed as
    // far as Go reads it, so that an error shows the same text.
    Result<char32_t> escaped_char(std::size_t start) {
        CNI_TRY_ASSIGN(char32_t c, next_rune());
        auto invalid = [&] { return error("invalid escape sequence", re_.substr(start, pos_ - start)); };
        auto hex = [](char32_t h) {
            return h < 0x80 && std::isxdigit(int(h)) ? int(std::isdigit(int(h)) ? h - '0' : std::tolower(int(h)) - 'a' + 10) : -1;
        };
        switch (c) {
            case 'a': return U'\a';
            case 'f': return U'\f';
            case 't': return U'\t';
            case 'n': return U'\n';
            case 'r': return U'\r';
            case 'v': return U'\v';
            case 'x': {
                if (at_end()) return invalid();
                CNI_TRY_ASSIGN(char32_t first, next_rune());
                if (first == '{') {  // \x{...}: one or more hex digits, at most U+10FFFF
                    char32_t r = 0;
                    int digits = 0;
                    for (;;) {
                        if (at_end()) return invalid();
                        CNI_TRY_ASSIGN(char32_t d, next_rune());
                        if (d == '}') break;
                        if (hex(d) < 0) return invalid();
                        r = r * 16 + char32_t(hex(d));
                        if (r > kMaxRune) return invalid();
                        ++digits;
                    }
                    if (digits == 0) return invalid();
                    return r;
                }
                char32_t second = 0;
                if (!at_end()) CNI_TRY_ASSIGN(second, next_rune());
                if (hex(first) < 0 || hex(second) < 0) return invalid();
                return char32_t(hex(first) * 16 + hex(second));
            }
            default: break;
        }
        if (c >= '0' && c <= '7') {
            // \1 to \7 alone would be a backreference, which Go (and RE2) refuse.
            if (c != '0' && (at_end() || peek() < '0' || peek() > '7')) return invalid();
            char32_t r = c - '0';
            for (int i = 0; i < 2 && !at_end() && peek() >= '0' && peek() <= '7'; ++i) r = r * 8 + char32_t(re_[pos_++] - '0');
            return r;
        }
        if (c < 0x80 && !std::isalnum(int(c))) return c;
        return invalid();
    }

    // [...]: pos_ just past the '['. Each item is folded as it is added; the class is negated
    // as a whole at the end, as Go builds it.
    Result<int> char_class(const Flags& flags, std::size_t start) {
        RuneSet set;
        bool negate = !at_end() && peek() == '^';
        if (negate) ++pos_;
        bool first = true;
        while (at_end() || peek() != ']' || first) {
            first = false;
            if (re_.size() - pos_ > 2 && next_is("[:")) {
                std::size_t end = re_.find(":]", pos_ + 2);
                if (end != std::string_view::npos) {
                    std::string_view name = re_.substr(pos_ + 2, end - pos_ - 2);
                    bool negated_name = name.starts_with('^');
                    std::optional<RuneSet> named = posix_class(negated_name ? name.substr(1) : name);
                    if (!named) return error("invalid character class range", re_.substr(pos_, end + 2 - pos_));
                    merge(set, group(std::move(*named), negated_name, flags.fold));
                    pos_ = end + 2;
                    continue;
                }
            }
            CNI_TRY_ASSIGN(std::optional<RuneSet> escaped, class_escape(flags));
            if (escaped) {
                merge(set, *escaped);
                continue;
            }
            std::size_t item = pos_;
            CNI_TRY_ASSIGN(char32_t lo, class_char(start));
            char32_t hi = lo;
            if (pos_ + 1 < re_.size() && peek() == '-' && re_[pos_ + 1] != ']') {
                ++pos_;
                CNI_TRY_ASSIGN(hi, class_char(start));
                if (hi < lo) return error("invalid character class range", re_.substr(item, pos_ - item));
            }
            RuneSet range;
            add_range(range, lo, hi);
            merge(set, flags.fold ? folded(std::move(range)) : range);
        }
        ++pos_;
        return add_set(negate ? negated(std::move(set)) : std::move(set));
    }

    // One character of a class, plain or escaped; the class runs out at the end of the pattern.
    Result<char32_t> class_char(std::size_t class_start) {
        if (at_end()) return error("missing closing ]", re_.substr(class_start));
        if (peek() != '\\') return next_rune();
        ++pos_;
        if (at_end()) return error("trailing backslash at end of expression", "");
        return escaped_char(pos_ - 1);
    }
};

// The program each node compiles to, as Thompson's construction lays it out, emitted with an
// explicit stack of nodes in progress rather than recursion. Sizes are worked out first, bottom
// up (a node's parts always come before it in the node list), so that a pattern too large is
// refused before anything is emitted and a repeat of something empty costs nothing.
class Compiler {
public:
    Compiler(const std::vector<Node>& nodes, std::vector<Regexp::Inst>& program) : nodes_(nodes), program_(program) {}

    Status emit(int root) {
        std::vector<std::size_t> sizes = program_sizes();
        if (sizes[std::size_t(root)] > kMaxProgram) return fail(code::invalid_config, "expression too large");
        program_.reserve(sizes[std::size_t(root)] + 1);
        std::vector<Frame> stack{{root}};
        while (!stack.empty()) {
            Frame& frame = stack.back();
            int part = sizes[std::size_t(frame.node)] == 0 ? -1 : next_part(frame);
            if (part < 0) stack.pop_back();
            else stack.push_back({part});
        }
        return {};
    }

private:
    const std::vector<Node>& nodes_;
    std::vector<Regexp::Inst>& program_;

    struct Frame {
        int node;
        std::size_t done = 0;          // parts (or copies of the repeated part) emitted so far
        std::size_t mark = 0;          // alternate: the last split; unbounded repeat: the loop's split
        std::vector<std::size_t> patches = {};  // jumps or splits that go to the end
    };

    // The number of instructions each node emits, capped just past the limit.
    std::vector<std::size_t> program_sizes() const {
        std::vector<std::size_t> sizes(nodes_.size(), 0);
        auto capped = [](std::size_t n) { return std::min(n, kMaxProgram + 1); };
        for (std::size_t i = 0; i < nodes_.size(); ++i) {
            const Node& n = nodes_[i];
            std::size_t total = 0;
            switch (n.kind) {
                case Node::Kind::empty: break;
                case Node::Kind::set:
                case Node::Kind::assert: total = 1; break;
                case Node::Kind::concat:
                case Node::Kind::alternate:
                    for (int part : n.parts) total = capped(total + sizes[std::size_t(part)]);
                    if (n.kind == Node::Kind::alternate) total = capped(total + 2 * (n.parts.size() - 1));  // split, jump
                    break;
                case Node::Kind::repeat: {
                    std::size_t body = sizes[std::size_t(n.parts[0])];
                    std::size_t optional = n.max < 0 ? body + 2 : std::size_t(n.max - n.min) * (body + 1);
                    total = capped(std::size_t(n.min) * body + optional);
                    break;
                }
            }
            sizes[i] = total;
        }
        return sizes;
    }

    void add(Regexp::Op op, int x = 0, int y = 0) { program_.push_back({op, x, y}); }
    int here() const { return int(program_.size()); }

    // Emits what comes before the frame's next part, and returns that part; or emits what
    // comes after its last part and returns -1.
    int next_part(Frame& frame) {
        const Node& n = nodes_[std::size_t(frame.node)];
        std::size_t k = frame.done++;
        switch (n.kind) {
            case Node::Kind::empty: return -1;
            case Node::Kind::set: add(Regexp::Op::rune, n.set); return -1;
            case Node::Kind::assert: add(Regexp::Op::assert, int(n.assertion)); return -1;
            case Node::Kind::concat: return k < n.parts.size() ? n.parts[k] : -1;
            case Node::Kind::alternate: {  // split L1, next; branch; jump end; next: split ...; last branch
                std::size_t count = n.parts.size();
                if (k > 0 && k < count) {
                    frame.patches.push_back(program_.size());
                    add(Regexp::Op::jump);
                    program_[frame.mark].y = here();
                }
                if (k == count) {
                    for (auto jump : frame.patches) program_[jump].x = here();
                    return -1;
                }
                if (k + 1 < count) {
                    frame.mark = program_.size();
                    add(Regexp::Op::split, here() + 1);
                }
                return n.parts[k];
            }
            case Node::Kind::repeat: {  // min copies, then L: split body, out; body; jump L — or
                                        // (max - min) times: split body, end; body
                std::size_t copies = std::size_t(n.min) + (n.max < 0 ? 1 : std::size_t(n.max - n.min));
                if (k == copies) {
                    if (n.max < 0) {
                        add(Regexp::Op::jump, int(frame.mark));
                        program_[frame.mark].y = here();
                    }
                    for (auto split : frame.patches) program_[split].y = here();
                    return -1;
                }
                if (k >= std::size_t(n.min)) {
                    if (n.max < 0) frame.mark = program_.size();
                    else frame.patches.push_back(program_.size());
                    add(Regexp::Op::split, here() + 1);
                }
                return n.parts[0];
            }
        }
        return -1;
    }
};

bool holds(Assertion a, std::string_view text, std::size_t at) {
    bool begin = at == 0, end = at == text.size();
    switch (a) {
        case Assertion::begin_text: return begin;
        case Assertion::end_text: return end;
        case Assertion::begin_line: return begin || text[at - 1] == '\n';
        case Assertion::end_line: return end || text[at] == '\n';
        case Assertion::word_boundary:
        case Assertion::not_word_boundary: {
            bool before = !begin && is_word(static_cast<unsigned char>(text[at - 1]));
            bool after = !end && is_word(static_cast<unsigned char>(text[at]));
            return (before != after) == (a == Assertion::word_boundary);
        }
    }
    return false;
}

}  // namespace

Result<Regexp> Regexp::compile(std::string_view pattern) {
    Parser parser(pattern);
    CNI_TRY_ASSIGN(int root, parser.parse());
    Regexp re;
    re.sets_ = std::move(parser.sets);
    if (auto st = Compiler(parser.nodes, re.program_).emit(root); !st)
        return fail(code::invalid_config, "error parsing regexp: " + st.error().msg + ": `" + std::string(pattern) + "`");
    re.program_.push_back({Op::match});
    return re;
}

bool Regexp::RuneSet::contains(char32_t r) const {
    if (r < 0x80) return ascii.test(r);
    auto after = std::upper_bound(high.begin(), high.end(), std::pair{r, kMaxRune});
    return after != high.begin() && std::prev(after)->second >= r;
}

bool Regexp::search(std::string_view text) const {
    // The threads at one position: instruction indexes, each at most once (mark == generation).
    std::vector<int> current, next, stack;
    std::vector<std::size_t> mark(program_.size(), 0);
    std::size_t generation = 0;
    // Follow jumps, splits and assertions from `pc` at text position `at`; true on a match.
    auto add = [&](std::vector<int>& list, int pc, std::size_t at) {
        stack.assign(1, pc);
        while (!stack.empty()) {
            int i = stack.back();
            stack.pop_back();
            if (mark[std::size_t(i)] == generation) continue;
            mark[std::size_t(i)] = generation;
            const Inst& inst = program_[std::size_t(i)];
            switch (inst.op) {
                case Op::match: return true;
                case Op::rune: list.push_back(i); break;
                case Op::jump: stack.push_back(inst.x); break;
                case Op::split: stack.push_back(inst.y), stack.push_back(inst.x); break;
                case Op::assert:
                    if (holds(Assertion(inst.x), text, at)) stack.push_back(i + 1);
                    break;
            }
        }
        return false;
    };
    char32_t last = 0;  // the rune the threads in `current` wait to consume
    for (std::size_t at = 0;;) {
        ++generation;
        // The threads that consumed the previous rune go on; a new one starts here too, since
        // the match may begin anywhere.
        next.clear();
        for (int pc : current) {
            if (sets_[std::size_t(program_[std::size_t(pc)].x)].contains(last) && add(next, pc + 1, at)) return true;
        }
        if (add(next, 0, at)) return true;
        if (at == text.size()) return false;
        current.swap(next);
        auto [rune, len] = decode_rune(text, at);
        last = rune;
        at += len;
    }
}

}  // namespace cni::tuning
