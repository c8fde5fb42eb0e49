// SPDX-License-Identifier: Apache-2.0
// Go regexp syntax, parsed into a tree, compiled into a Thompson program, run as a set of
// threads stepping through the text together (see regexp.hpp).
#include "core/regexp.hpp"

#include <algorithm>
#include <cctype>
#include <string>

namespace cni {

namespace {

using ByteSet = std::bitset<256>;
using Assertion = Regexp::Assertion;

constexpr int kMaxRepeat = 1000;        // RE2's limit on {n,m}
constexpr std::size_t kMaxProgram = 100'000;  // instructions, after repeats are unrolled
constexpr int kMaxDepth = 1000;                // nested groups (Go limits its parse tree's height instead; see regexp.hpp)

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

bool is_word(unsigned char c) { return std::isalnum(c) || c == '_'; }

ByteSet range_set(unsigned char lo, unsigned char hi) {
    ByteSet s;
    for (int c = lo; c <= hi; ++c) s.set(std::size_t(c));
    return s;
}

ByteSet folded(ByteSet s) {
    for (int c = 'a'; c <= 'z'; ++c) {
        if (s.test(std::size_t(c)) || s.test(std::size_t(c - 32))) {
            s.set(std::size_t(c));
            s.set(std::size_t(c - 32));
        }
    }
    return s;
}

// The POSIX classes Go knows, ASCII only as in Go.
bool named_class(std::string_view name, ByteSet& out) {
    out.reset();
    for (int c = 0; c < 128; ++c) {
        bool in;
        if (name == "alnum") in = std::isalnum(c);
        else if (name == "alpha") in = std::isalpha(c);
        else if (name == "ascii") in = true;
        else if (name == "blank") in = c == ' ' || c == '\t';
        else if (name == "cntrl") in = std::iscntrl(c);
        else if (name == "digit") in = std::isdigit(c);
        else if (name == "graph") in = std::isgraph(c);
        else if (name == "lower") in = std::islower(c);
        else if (name == "print") in = std::isprint(c);
        else if (name == "punct") in = std::ispunct(c);
        else if (name == "space") in = c == ' ' || (c >= '\t' && c <= '\r');
        else if (name == "upper") in = std::isupper(c);
        else if (name == "word") in = is_word(static_cast<unsigned char>(c));
        else if (name == "xdigit") in = std::isxdigit(c);
        else return false;
        if (in) out.set(std::size_t(c));
    }
    return true;
}

// \d \s \w and their negations, as Go defines them (\s without \v).
bool perl_class(char c, ByteSet& out) {
    switch (c) {
        case 'd': case 'D': out = range_set('0', '9'); break;
        case 's': case 'S': out = ByteSet().set('\t').set('\n').set('\f').set('\r').set(' '); break;
        case 'w': case 'W': named_class("word", out); break;
        default: return false;
    }
    if (std::isupper(static_cast<unsigned char>(c))) out.flip();
    return true;
}

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
            if (int min = 0, max = 0; std::size_t len = repeat_length(&min, &max)) {
                // As Go: the counts are checked first, and the operator is shown with its lazy `?`.
                if (min > kMaxRepeat || max > kMaxRepeat || (max >= 0 && max < min))
                    return error("invalid repeat count", re_.substr(pos_, len));
                if (pos_ + len < re_.size() && re_[pos_ + len] == '?') ++len;
                return error("missing argument to repetition operator", re_.substr(pos_, len));
            }
            if (peek() == '(') {
                CNI_TRY_ASSIGN(GroupOpening opening, group_opening(group.flags));
                if (opening.flags_only) {  // (?i): a repetition after it has nothing to repeat
                    group.flags = opening.inner;
                    continue;
                }
                if (open.size() > std::size_t(kMaxDepth)) return error("expression nests too deeply", re_);
                open.push_back(OpenGroup{.flags = opening.inner});
                continue;
            }
            if (next_is("\\Q")) {  // each quoted character is an atom: a repeat after \E takes the last
                std::string_view text = quoted();
                if (!text.empty()) {
                    std::size_t last = text.size() - 1;  // the last character's first byte (UTF-8)
                    while (last > 0 && (static_cast<unsigned char>(text[last]) & 0xC0) == 0x80) --last;
                    if (last > 0) group.sequence.push_back(add_literal(text.substr(0, last), group.flags));
                    CNI_TRY_ASSIGN(int repeated, repetitions(add_literal(text.substr(last), group.flags)));
                    group.sequence.push_back(repeated);
                } else if (!group.sequence.empty() && repeat_length() > 0) {  // a\Q\E* is a*, as in Go
                    CNI_TRY_ASSIGN(group.sequence.back(), repetitions(group.sequence.back()));
                }
                continue;
            }
            CNI_TRY_ASSIGN(int node, atom(group.flags));
            CNI_TRY_ASSIGN(int repeated, repetitions(node));
            group.sequence.push_back(repeated);
        }
    }

    // \Q...\E, pos_ at the backslash: the text between (to the end without \E), pos_ past it.
    std::string_view quoted() {
        pos_ += 2;
        std::size_t end = re_.find("\\E", pos_);
        std::string_view text = re_.substr(pos_, end == std::string_view::npos ? std::string_view::npos : end - pos_);
        pos_ = end == std::string_view::npos ? re_.size() : end + 2;
        return text;
    }

    std::vector<Node> nodes;
    std::vector<ByteSet> sets;

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

    static std::unexpected<Error> error(std::string_view what, std::string_view expr) {
        return fail(code::invalid_config, "error parsing regexp: " + std::string(what) + ": `" + std::string(expr) + "`");
    }

    bool at_end() const { return pos_ >= re_.size(); }
    char peek() const { return re_[pos_]; }
    bool next_is(std::string_view s) const { return re_.substr(pos_).starts_with(s); }

    int add(Node n) {
        nodes.push_back(std::move(n));
        return int(nodes.size()) - 1;
    }
    int add_set(ByteSet s, const Flags& f) {
        sets.push_back(f.fold ? folded(s) : s);
        return add(Node{.kind = Node::Kind::set, .set = int(sets.size()) - 1});
    }
    int add_assert(Assertion a) { return add(Node{.kind = Node::Kind::assert, .assertion = a}); }
    // A literal string (non-ASCII bytes included, as their UTF-8 bytes).
    int add_literal(std::string_view s, const Flags& f) {
        Node cat{.kind = Node::Kind::concat};
        for (unsigned char c : s) cat.parts.push_back(add_set(ByteSet().set(c), f));
        return add(std::move(cat));
    }

    int sequence(std::vector<int> parts) {
        return parts.size() == 1 ? parts[0] : add(Node{.kind = Node::Kind::concat, .parts = std::move(parts)});
    }
    int choice(std::vector<int> branches) {
        return branches.size() == 1 ? branches[0] : add(Node{.kind = Node::Kind::alternate, .parts = std::move(branches)});
    }

    // The length of the repetition operator at pos_ (0 if there is none); `{` that does not
    // open a valid {n}, {n,} or {n,m} is a literal, as in Go.
    std::size_t repeat_length(int* min = nullptr, int* max = nullptr) const {
        char c = peek();
        if (c == '*' || c == '+' || c == '?') {
            if (min) *min = c == '+' ? 1 : 0;
            if (max) *max = c == '?' ? 1 : -1;
            return 1;
        }
        if (c != '{') return 0;
        std::size_t i = pos_ + 1;
        auto number = [&](int& out) {
            std::size_t begin = i;
            long v = 0;
            while (i < re_.size() && std::isdigit(static_cast<unsigned char>(re_[i]))) {
                v = std::min<long>(v * 10 + (re_[i] - '0'), kMaxRepeat + 1L);
                ++i;
            }
            out = int(v);
            return i > begin;
        };
        int lo = 0, hi = 0;
        if (!number(lo)) return 0;
        hi = lo;
        if (i < re_.size() && re_[i] == ',') {
            ++i;
            if (!number(hi)) hi = -1;
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
        char c = re_[pos_++];
        switch (c) {
            case '[': return char_class(flags, start);
            case '.': {
                ByteSet all;
                all.set();
                if (!flags.dot_nl) all.reset('\n');
                return add_set(all, Flags{});
            }
            case '^': return add_assert(flags.multiline ? Assertion::begin_line : Assertion::begin_text);
            case '$': return add_assert(flags.multiline ? Assertion::end_line : Assertion::end_text);
            case '\\': return escape(flags, start);
            default: return add_literal(re_.substr(start, 1), flags);
        }
    }

    // After `(` is seen (pos_ at it): its header, (?P<name>, (?<name>, (?flags: or (?flags).
    Result<GroupOpening> group_opening(const Flags& outer) {
        std::size_t start = pos_++;
        GroupOpening opening{.inner = outer};
        if (next_is("?P<") || next_is("?<")) {
            pos_ += next_is("?P<") ? 3 : 2;
            std::size_t end = re_.find('>', pos_);
            if (end == std::string_view::npos) return error("invalid named capture", re_.substr(start));
            std::string_view name = re_.substr(pos_, end - pos_);
            bool valid = !name.empty();
            for (unsigned char ch : name) valid = valid && is_word(ch);
            if (!valid) return error("invalid named capture", re_.substr(start, end + 1 - start));
            pos_ = end + 1;
        } else if (next_is("?")) {  // flags: (?i) for the rest of this group, (?i:...) scoped
            ++pos_;
            bool negate = false, saw_flag = false;
            for (;;) {
                if (at_end()) return error("invalid or unsupported Perl syntax", re_.substr(start));
                char f = re_[pos_++];
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

    // After `\`: a class (\d), an assertion (\b) or one character (\Q..\E is parse()'s).
    Result<int> escape(const Flags& flags, std::size_t start) {
        if (at_end()) return error("trailing backslash at end of expression", "");
        char c = peek();
        ByteSet s;
        if (perl_class(c, s)) {
            ++pos_;
            return add_set(s, flags);
        }
        switch (c) {
            case 'A': ++pos_; return add_assert(Assertion::begin_text);
            case 'z': ++pos_; return add_assert(Assertion::end_text);
            case 'b': ++pos_; return add_assert(Assertion::word_boundary);
            case 'B': ++pos_; return add_assert(Assertion::not_word_boundary);
            default: break;
        }
        CNI_TRY_ASSIGN(std::string bytes, escaped_char(start));
        return add_literal(bytes, flags);
    }

    // One escaped character after `\` (pos_ at the character after the backslash), as the
    // bytes of its UTF-8 encoding.
    Result<std::string> escaped_char(std::size_t start) {
        char c = re_[pos_++];
        auto invalid = [&] { return error("invalid escape sequence", re_.substr(start, pos_ - start)); };
        auto utf8 = [](unsigned long r) {
            std::string out;
            if (r < 0x80) {
                out += char(r);
            } else if (r < 0x800) {
                out += char(0xC0 | (r >> 6)), out += char(0x80 | (r & 0x3F));
            } else if (r < 0x10000) {
                out += char(0xE0 | (r >> 12)), out += char(0x80 | ((r >> 6) & 0x3F)), out += char(0x80 | (r & 0x3F));
            } else {
                out += char(0xF0 | (r >> 18)), out += char(0x80 | ((r >> 12) & 0x3F));
                out += char(0x80 | ((r >> 6) & 0x3F)), out += char(0x80 | (r & 0x3F));
            }
            return out;
        };
        if (c == 'p' || c == 'P')
            return fail(code::invalid_config, "error parsing regexp: Unicode classes are not supported: `" +
                                                  std::string(re_.substr(start, pos_ + 1 - start)) + "`");
        auto hex = [](char h) { return std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10); };
        switch (c) {
            case 'a': return std::string(1, '\a');
            case 'f': return std::string(1, '\f');
            case 't': return std::string(1, '\t');
            case 'n': return std::string(1, '\n');
            case 'r': return std::string(1, '\r');
            case 'v': return std::string(1, '\v');
            case 'x': {
                if (!at_end() && peek() == '{') {
                    std::size_t end = re_.find('}', pos_);
                    if (end == std::string_view::npos || end == pos_ + 1) return invalid();
                    unsigned long r = 0;
                    for (std::size_t i = pos_ + 1; i < end; ++i) {
                        if (!std::isxdigit(static_cast<unsigned char>(re_[i])) || r > 0x10FFFF) return invalid();
                        r = r * 16 + unsigned(hex(re_[i]));
                    }
                    pos_ = end + 1;
                    if (r > 0x10FFFF) return invalid();
                    return utf8(r);
                }
                if (pos_ + 2 > re_.size() || !std::isxdigit(static_cast<unsigned char>(re_[pos_])) ||
                    !std::isxdigit(static_cast<unsigned char>(re_[pos_ + 1]))) {
                    pos_ = std::min(pos_ + 2, re_.size());
                    return invalid();
                }
                unsigned long r = unsigned(hex(re_[pos_]) * 16 + hex(re_[pos_ + 1]));
                pos_ += 2;
                return utf8(r);
            }
            default: break;
        }
        if (c >= '0' && c <= '7') {
            // \1 to \7 alone would be a backreference, which Go (and RE2) refuse.
            if (c != '0' && (at_end() || peek() < '0' || peek() > '7')) return invalid();
            unsigned long r = unsigned(c - '0');
            for (int i = 0; i < 2 && !at_end() && peek() >= '0' && peek() <= '7'; ++i) r = r * 8 + unsigned(re_[pos_++] - '0');
            return utf8(r);
        }
        if (static_cast<unsigned char>(c) < 0x80 && !std::isalnum(static_cast<unsigned char>(c))) return std::string(1, c);
        return invalid();
    }

    // [...]: pos_ just past the '['.
    Result<int> char_class(const Flags& flags, std::size_t start) {
        ByteSet set;
        bool negate = !at_end() && peek() == '^';
        if (negate) ++pos_;
        bool first = true;
        while (at_end() || peek() != ']' || first) {
            if (at_end()) return error("missing closing ]", re_.substr(start));
            first = false;
            if (next_is("[:")) {
                std::size_t end = re_.find(":]", pos_ + 2);
                if (end != std::string_view::npos) {
                    std::string_view name = re_.substr(pos_ + 2, end - pos_ - 2);
                    bool negated = name.starts_with('^');
                    ByteSet named;
                    if (!named_class(negated ? name.substr(1) : name, named))
                        return error("invalid character class range", re_.substr(pos_, end + 2 - pos_));
                    set |= negated ? ~named : named;
                    pos_ = end + 2;
                    continue;
                }
            }
            std::size_t item = pos_;
            if (peek() == '\\' && pos_ + 1 < re_.size()) {
                ByteSet perl;
                if (perl_class(re_[pos_ + 1], perl)) {
                    set |= perl;
                    pos_ += 2;
                    continue;
                }
            }
            CNI_TRY_ASSIGN(int lo, class_char(item));
            int hi = lo;
            if (pos_ + 1 < re_.size() && peek() == '-' && re_[pos_ + 1] != ']') {
                ++pos_;
                CNI_TRY_ASSIGN(hi, class_char(item));
                if (hi < lo) return error("invalid character class range", re_.substr(item, pos_ - item));
            }
            set |= range_set(static_cast<unsigned char>(lo), static_cast<unsigned char>(hi));
        }
        ++pos_;
        if (flags.fold) set = folded(set);
        if (negate) set.flip();
        return add_set(set, Flags{});
    }

    // One character of a class, plain or escaped, as a byte value.
    Result<int> class_char(std::size_t item) {
        if (at_end()) return error("missing closing ]", re_.substr(item));
        std::string bytes;
        if (peek() == '\\') {
            ++pos_;
            if (at_end()) return error("trailing backslash at end of expression", "");
            CNI_TRY_ASSIGN(bytes, escaped_char(pos_ - 1));
        } else {
            bytes = std::string(1, re_[pos_++]);
        }
        if (bytes.size() != 1 || static_cast<unsigned char>(bytes[0]) >= 0x80)
            return fail(code::invalid_config, "error parsing regexp: non-ASCII characters in a class are not supported: `" +
                                                  std::string(re_.substr(item, pos_ - item)) + "`");
        return int(static_cast<unsigned char>(bytes[0]));
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
            case Node::Kind::set: add(Regexp::Op::byte, n.set); return -1;
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
                case Op::byte: list.push_back(i); break;
                case Op::jump: stack.push_back(inst.x); break;
                case Op::split: stack.push_back(inst.y), stack.push_back(inst.x); break;
                case Op::assert:
                    if (holds(Assertion(inst.x), text, at)) stack.push_back(i + 1);
                    break;
            }
        }
        return false;
    };
    for (std::size_t at = 0;; ++at) {
        ++generation;
        // The threads that consumed the previous byte are already in `current`; a new one
        // starts here too, since the match may begin anywhere.
        next.clear();
        for (int pc : current) {
            const Inst& inst = program_[std::size_t(pc)];
            if (sets_[std::size_t(inst.x)].test(static_cast<unsigned char>(text[at - 1])) && add(next, pc + 1, at)) return true;
        }
        if (add(next, 0, at)) return true;
        if (at == text.size()) return false;
        current.swap(next);
    }
}

}  // namespace cni
