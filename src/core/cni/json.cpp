// SPDX-License-Identifier: Apache-2.0
// Go-compatible JSON reading and writing (see json.hpp).
#include "core/cni/json.hpp"

#include "core/cni/json_syntax.hpp"
#include "core/strings.hpp"

#include <rapidjson/error/error.h>
#include <rapidjson/reader.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

namespace cni::json {
namespace {

bool equal_fold(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z') x = char(x - 'A' + 'a');
        if (y >= 'A' && y <= 'Z') y = char(y - 'A' + 'a');
        if (x != y) return false;
    }
    return true;
}

std::string_view name_of(const Value& v) { return {v.GetString(), v.GetStringLength()}; }

}  // namespace

namespace {

// The document's own SAX handler, stopping the parse where nesting passes Go's 10,000 levels.
class DepthLimited {
public:
    explicit DepthLimited(Document& d) : d_(d) {}
    bool Null() { return d_.Null(); }
    bool Bool(bool b) { return d_.Bool(b); }
    bool Int(int i) { return d_.Int(i); }
    bool Uint(unsigned u) { return d_.Uint(u); }
    bool Int64(std::int64_t i) { return d_.Int64(i); }
    bool Uint64(std::uint64_t u) { return d_.Uint64(u); }
    bool Double(double x) { return d_.Double(x); }
    // Every number arrives as its text (kParseNumbersAsStringsFlag) and is converted here as Go's
    // strconv converts it, an integer by from_chars and a float by strtod: RapidJSON's
    // full-precision conversion read some literals wrong (0e90 as -6.6e268, 30 zero decimals as
    // 9.6e-240) and indexed past its table of powers on others (docs/fuzzing.md). An integer
    // that fits 64 bits stays one, as RapidJSON would keep it.
    bool RawNumber(const char* s, rapidjson::SizeType n, bool) {
        const char* end = s + n;
        if (std::find_if(s, end, [](char c) { return c == '.' || c == 'e' || c == 'E'; }) == end) {
            if (*s == '-') {
                std::int64_t i = 0;
                if (auto r = std::from_chars(s, end, i); r.ec == std::errc() && r.ptr == end) return d_.Int64(i);
            } else {
                std::uint64_t u = 0;
                if (auto r = std::from_chars(s, end, u); r.ec == std::errc() && r.ptr == end) return d_.Uint64(u);
            }
        }
        // RapidJSON hands the literal over NUL-terminated; strtod rounds correctly, as Go does, in
        // the C locale every plugin runs in. Past a double's range it gives an infinity (kept as
        // the largest double, as for the exponents RapidJSON refuses) or a zero.
        double x = std::strtod(s, nullptr);
        if (std::isinf(x)) x = std::copysign(std::numeric_limits<double>::max(), x);
        return d_.Double(x);
    }
    bool String(const char* s, rapidjson::SizeType n, bool copy) { return d_.String(s, n, copy); }
    bool Key(const char* s, rapidjson::SizeType n, bool copy) { return d_.Key(s, n, copy); }
    bool StartObject() { return ++depth_ <= kGoMaxDepth && d_.StartObject(); }
    bool EndObject(rapidjson::SizeType n) { --depth_; return d_.EndObject(n); }
    bool StartArray() { return ++depth_ <= kGoMaxDepth && d_.StartArray(); }
    bool EndArray(rapidjson::SizeType n) { --depth_; return d_.EndArray(n); }

private:
    static constexpr unsigned kGoMaxDepth = 10000;
    Document& d_;
    unsigned depth_ = 0;
};

// RapidJSON's input stream over the text (rapidjson::MemoryStream's reading part), each byte read
// inline: the shipped binary is built for size, which left RapidJSON's own streams two calls a
// byte, most of the time a large config (a vpc-eni node file) takes to parse.
class TextStream {
public:
    using Ch = char;
    explicit TextStream(std::string_view text) : begin_(text.data()), cur_(begin_), end_(begin_ + text.size()) {}
    [[gnu::always_inline]] Ch Peek() const { return cur_ == end_ ? '\0' : *cur_; }
    [[gnu::always_inline]] Ch Take() { return cur_ == end_ ? '\0' : *cur_++; }
    std::size_t Tell() const { return std::size_t(cur_ - begin_); }
    // Writing, which RapidJSON asks only of in-situ parsing: never done here.
    Ch* PutBegin() { return nullptr; }
    void Put(Ch) {}
    void Flush() {}
    std::size_t PutEnd(Ch*) { return 0; }

private:
    const char* begin_;
    const char* cur_;
    const char* end_;
};

// The same over a NUL-terminated text that RapidJSON may change (rapidjson::InsituStringStream):
// each string is unescaped where it lies and the document points into the text.
class InsituText {
public:
    using Ch = char;
    explicit InsituText(char* text) : begin_(text), src_(text), dst_(nullptr) {}
    [[gnu::always_inline]] Ch Peek() const { return *src_; }
    [[gnu::always_inline]] Ch Take() { return *src_++; }
    std::size_t Tell() const { return std::size_t(src_ - begin_); }
    Ch* PutBegin() { return dst_ = src_; }
    [[gnu::always_inline]] void Put(Ch c) { *dst_++ = c; }
    void Flush() {}
    std::size_t PutEnd(Ch* begin) { return std::size_t(dst_ - begin); }

private:
    char* begin_;
    char* src_;
    char* dst_;
};

}  // namespace
}  // namespace cni::json

// Both streams are cheap to copy, as RapidJSON's own are: it reads a number through a local copy
// (and so, in situ, finds the number's start where the original still stands).
template <>
struct rapidjson::StreamTraits<cni::json::TextStream> {
    enum { copyOptimization = 1 };
};
template <>
struct rapidjson::StreamTraits<cni::json::InsituText> {
    enum { copyOptimization = 1 };
};

namespace cni::json {
namespace {

// RapidJSON's parse, iterative (no recursion however deep the text) and depth-limited.
template <unsigned Flags = 0, class Stream>
bool parse_into(Document& d, Stream in, rapidjson::ParseResult& result) {
    auto generate = [&](Document& handler) {
        DepthLimited limited(handler);
        rapidjson::Reader reader;
        result = reader.Parse<Flags | rapidjson::kParseNumbersAsStringsFlag | rapidjson::kParseIterativeFlag>(in, limited);
        return !result.IsError();
    };
    d.Populate(generate);
    return !result.IsError();
}

// Where RapidJSON's verdict is Go's: no surrogate escape (RapidJSON refuses a lone high one and
// keeps a lone low one), no NUL (where it stops), valid UTF-8, and no byte of a UTF-8 byte order
// mark first, which Go refuses and RapidJSON's own UTF-8 streams drop, each on its own (so
// "\xBF2" would read as 2).
bool plain(std::string_view text) {
    return text.find("\\ud") == std::string_view::npos && text.find("\\uD") == std::string_view::npos &&
           (text.empty() || (text[0] != '\xEF' && text[0] != '\xBB' && text[0] != '\xBF')) &&
           text.find('\0') == std::string_view::npos && replace_invalid_utf8(text).empty();
}

}  // namespace

Result<Document> parse(std::string_view text) {
    Document d;
    rapidjson::ParseResult result;
    // The common case, valid JSON, costs one RapidJSON parse. Where RapidJSON's verdict may not
    // be Go's (plain() says where) or it fails, Go's syntax check decides and words the error.
    if (plain(text) && parse_into(d, TextStream(text), result)) return d;
    if (auto error = go_syntax_error(text)) return fail(code::decoding_failure, *error);
    // Valid JSON is read as Go reads it: each byte that starts no valid UTF-8 sequence as U+FFFD
    // (keys sort and match as Go's do, while errors quote the bytes as given); unpaired surrogate
    // escapes as U+FFFD (RapidJSON refuses a lone high one and keeps a lone low one as invalid
    // UTF-8); a number beyond a double's range accepted until a field needs its value (then the
    // type error names the largest double instead).
    const std::string valid = replace_invalid_utf8(text);
    if (!valid.empty()) text = valid;
    bool surrogate_escapes = text.find("\\ud") != std::string_view::npos || text.find("\\uD") != std::string_view::npos;
    std::string rewritten = surrogate_escapes ? replace_lone_surrogates(text) : std::string();
    while (true) {
        std::string_view in = rewritten.empty() ? text : rewritten;
        if (parse_into(d, TextStream(in), result)) return d;
        if (result.Code() != rapidjson::kParseErrorNumberTooBig)
            return fail(code::decoding_failure, "invalid JSON at offset " + std::to_string(result.Offset()));
        rewritten = clamp_number_at(in, result.Offset());
    }
}

Result<Document> parse_large(std::string_view text, std::string& buffer) {
    if (plain(text)) {
        buffer.assign(text);
        Document d;
        rapidjson::ParseResult result;
        if (parse_into<rapidjson::kParseInsituFlag>(d, InsituText(buffer.data()), result)) return d;
    }
    return parse(text);
}

std::string go_float(double x) {
    // The shortest digits that read back as x, as "d.ddde±XX"; Go writes those same digits in
    // fixed-point, padded with zeros (2^63 is 9223372036854776000, not the exact ...808).
    char buf[64];
    std::string sci(buf, std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific).ptr);
    if (!std::isfinite(x)) return sci;  // Go refuses to marshal these; parsed JSON never holds one
    double magnitude = std::fabs(x);
    if (magnitude != 0 && (magnitude < 1e-6 || magnitude >= 1e21)) {
        // Go trims a negative exponent's leading zero ("e-07" to "e-7"), not a positive one's.
        if (auto n = sci.size(); n >= 4 && sci[n - 4] == 'e' && sci[n - 3] == '-' && sci[n - 2] == '0') sci.erase(n - 2, 1);
        return sci;
    }
    bool negative = sci[0] == '-';
    auto e = sci.find('e');
    std::string digits;
    for (char c : sci.substr(negative, e - negative))
        if (c != '.') digits += c;
    int exponent = std::stoi(sci.substr(e + 1));
    std::string out = negative ? "-" : "";
    if (exponent < 0) return out + "0." + std::string(std::size_t(-exponent - 1), '0') + digits;
    auto whole = std::size_t(exponent) + 1;
    if (digits.size() <= whole) return out + digits + std::string(whole - digits.size(), '0');
    return out + digits.substr(0, whole) + "." + digits.substr(whole);
}

namespace {

// A container's children in the order a walk visits them: (name, value) for an object's
// members, (nullptr, value) for an array's elements.
using Children = std::vector<std::pair<const Value*, const Value*>>;

enum class MemberOrder {
    as_written,
    sorted,  // bytewise by name, a repeated name kept each time (MarshalIndent of our maps)
    go_map,  // bytewise by name, only a repeated name's last value (a Go map's view)
};

Children children_of(const Value& v, MemberOrder order) {
    Children out;
    if (v.IsArray()) {
        for (const auto& e : v.GetArray()) out.emplace_back(nullptr, &e);
        return out;
    }
    if (order == MemberOrder::go_map) {
        std::map<std::string_view, const Value::Member*> last;
        for (const auto& m : v.GetObject()) last[name_of(m.name)] = &m;
        for (const auto& [name, m] : last) out.emplace_back(&m->name, &m->value);
        return out;
    }
    for (const auto& m : v.GetObject()) out.emplace_back(&m.name, &m.value);
    if (order == MemberOrder::sorted)
        std::stable_sort(out.begin(), out.end(), [](auto& x, auto& y) { return name_of(*x.first) < name_of(*y.first); });
    return out;
}

bool is_container(const Value& v) { return v.IsArray() || v.IsObject(); }

// A number as it comes back from float64: an integer while it prints as one, else a double.
Value through_float64(const Value& v) {
    std::string text = go_float(v.GetDouble());
    const char* first = text.data();
    const char* last = first + text.size();
    if (text.find_first_of(".e") == std::string::npos) {
        std::int64_t i;
        if (auto r = std::from_chars(first, last, i); r.ec == std::errc() && r.ptr == last) return Value(i);
        std::uint64_t u;
        if (auto r = std::from_chars(first, last, u); r.ec == std::errc() && r.ptr == last) return Value(u);
    }
    return Value(v.GetDouble());
}

// A deep copy of `root` allocated from `a`, walked with an explicit stack (a document may
// nest 10,000 deep, which recursion would pay for in call stack); with go_round_trip the
// copy is what Go's interface{} round trip makes of it.
Value rebuild(const Value& root, Alloc& a, bool go_round_trip) {
    auto leaf = [&](const Value& v) { return go_round_trip && v.IsNumber() ? through_float64(v) : Value(v, a); };
    struct Open {
        Children children;
        std::size_t next = 0;
        Value copy;
    };
    auto open = [&](const Value& v) {
        return Open{children_of(v, go_round_trip ? MemberOrder::go_map : MemberOrder::as_written), 0, Value(v.GetType())};
    };
    auto attach = [&](Open& parent, Value child) {
        const Value* name = parent.children[parent.next++].first;
        if (name) parent.copy.AddMember(Value(*name, a), child, a);
        else parent.copy.PushBack(child, a);
    };
    if (!is_container(root)) return leaf(root);
    std::vector<Open> stack;
    stack.push_back(open(root));
    for (;;) {
        Open& top = stack.back();
        if (top.next < top.children.size()) {
            const Value& child = *top.children[top.next].second;
            if (is_container(child)) stack.push_back(open(child));
            else attach(top, leaf(child));
            continue;
        }
        Value done = std::move(top.copy);
        stack.pop_back();
        if (stack.empty()) return done;
        attach(stack.back(), std::move(done));
    }
}

}  // namespace

Value copy(const Value& v, Alloc& a) { return rebuild(v, a, false); }

Value go_interface_round_trip(const Value& v, Alloc& a) { return rebuild(v, a, true); }

const Value* find(const Value& obj, std::string_view key) {
    if (!obj.IsObject()) return nullptr;
    const Value* hit = nullptr;
    for (const auto& m : obj.GetObject())
        if (equal_fold(name_of(m.name), key)) hit = &m.value;
    return hit;
}

const Value* find_exact(const Value& obj, std::string_view key) {
    if (!obj.IsObject()) return nullptr;
    const Value* hit = nullptr;
    for (const auto& m : obj.GetObject())
        if (name_of(m.name) == key) hit = &m.value;
    return hit;
}

std::string_view kind(const Value& v) {
    switch (v.GetType()) {
    case rapidjson::kNullType: return "null";
    case rapidjson::kFalseType:
    case rapidjson::kTrueType: return "bool";
    case rapidjson::kObjectType: return "object";
    case rapidjson::kArrayType: return "array";
    case rapidjson::kStringType: return "string";
    case rapidjson::kNumberType: return "number";
    }
    return "value";
}

Error type_error(const Value& v, const Where& w, std::string_view go_type) {
    std::string what(kind(v));
    if (w.path.empty())
        return Error{code::internal, w.prefix + "json: cannot unmarshal " + what + " into Go value of type " + std::string(go_type), {}};
    return Error{code::internal,
                 w.prefix + "json: cannot unmarshal " + what + " into Go struct field " + w.type + "." + w.path + " of type " +
                     std::string(go_type),
                 {}};
}

Status expect_object(const Value& v, const Where& w, std::string_view go_type) {
    if (v.IsNull() || v.IsObject()) return {};
    return cni::Unexpected(type_error(v, w, go_type));
}

Result<AnonymousStruct> anonymous_struct(const Value& obj, std::string_view key, const Where& w, std::string_view go_type) {
    AnonymousStruct out{nullptr, w.at(key).in("")};
    const Value* v = find(obj, key);
    if (!v) return out;
    CNI_TRY(expect_object(*v, w.at(key), go_type));
    if (v->IsObject()) out.object = v;
    return out;
}

Result<const Value*> struct_member(const Value* obj, std::string_view key, const Where& w, std::string_view go_type) {
    const Value* v = obj ? find(*obj, key) : nullptr;
    if (!v) return nullptr;
    CNI_TRY(expect_object(*v, w.at(key), go_type));
    return v->IsObject() ? v : nullptr;
}

Status decode(const Value& v, std::string& out, const Where& w) {
    if (v.IsNull()) return {};
    if (!v.IsString()) return cni::Unexpected(type_error(v, w, "string"));
    out.assign(v.GetString(), v.GetStringLength());
    return {};
}

Status decode(const Value& v, std::map<std::string, std::string>& out, const Where& w) {
    if (v.IsNull()) return {};
    if (!v.IsObject()) return cni::Unexpected(type_error(v, w, "map[string]string"));
    for (const auto& m : v.GetObject()) {
        std::string key(m.name.GetString(), m.name.GetStringLength());
        std::string value;
        if (!m.value.IsNull()) CNI_TRY(decode(m.value, value, w));  // Go names the map field, not the key
        out[key] = std::move(value);
    }
    return {};
}

Status decode(const Value& v, bool& out, const Where& w) {
    if (v.IsNull()) return {};
    if (!v.IsBool()) return cni::Unexpected(type_error(v, w, "bool"));
    out = v.GetBool();
    return {};
}

namespace {
// Integers: Go rejects fractions and exponents ("number 1.5") and out-of-range values.
template <class T>
Status decode_int(const Value& v, T& out, const Where& w, std::string_view go_type) {
    if (v.IsNull()) return {};
    if (!v.IsNumber()) return cni::Unexpected(type_error(v, w, go_type));
    auto range_error = [&](std::string literal) {
        return cni::Unexpected(Error{code::internal,
                                     w.prefix + "json: cannot unmarshal number " + literal + " into Go struct field " + w.type +
                                         "." + w.path + " of type " + std::string(go_type),
                                     {}});
    };
    if (v.IsDouble()) return range_error(go_float(v.GetDouble()));
    if (v.IsInt64()) {
        auto x = v.GetInt64();
        if (x < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
            (x > 0 && static_cast<std::uint64_t>(x) > static_cast<std::uint64_t>(std::numeric_limits<T>::max())))
            return range_error(std::to_string(x));
        out = static_cast<T>(x);
        return {};
    }
    auto x = v.GetUint64();
    if (x > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) return range_error(std::to_string(x));
    out = static_cast<T>(x);
    return {};
}
}  // namespace

Status decode(const Value& v, std::int64_t& out, const Where& w) { return decode_int(v, out, w, "int"); }
Status decode(const Value& v, std::uint32_t& out, const Where& w) { return decode_int(v, out, w, "uint32"); }
Status decode(const Value& v, std::uint64_t& out, const Where& w) { return decode_int(v, out, w, "uint64"); }

Status decode(const Value& v, net::IpAddr& out, const Where& w) {
    if (v.IsNull()) return {};
    if (!v.IsString()) return cni::Unexpected(type_error(v, w, "net.IP"));
    std::string_view s(v.GetString(), v.GetStringLength());
    if (s.empty()) return {};  // Go: an empty string leaves a nil net.IP
    auto ip = net::IpAddr::parse(s);
    if (!ip) return fail("invalid IP address: " + std::string(s));
    out = *ip;
    return {};
}

Status decode(const Value& v, std::optional<net::IpAddr>& out, const Where& w) {
    if (v.IsString() && v.GetStringLength() == 0) return {};
    net::IpAddr ip;
    CNI_TRY(decode(v, ip, w));
    if (!v.IsNull()) out = ip;
    return {};
}

Status decode(const Value& v, net::IpNet& out, const Where& w) {
    if (v.IsNull()) return {};
    if (!v.IsString()) return cni::Unexpected(type_error(v, w, "string"));
    std::string_view s(v.GetString(), v.GetStringLength());
    auto n = net::IpNet::parse(s);
    if (!n) return fail("invalid CIDR address: " + std::string(s));
    out = *n;
    return {};
}

void set(Value& obj, std::string_view key, Value v, Alloc& a) { obj.AddMember(str(key, a), v, a); }

// ---- output ----------------------------------------------------------------------------------
namespace {

void write_string(std::string& out, std::string_view s) {
    static const char* hex = "0123456789abcdef";
    out += '"';
    for (std::size_t i = 0; i < s.size(); ++i) {
        auto c = static_cast<unsigned char>(s[i]);
        switch (c) {
        case '"': out += "\\\""; continue;
        case '\\': out += "\\\\"; continue;
        case '\n': out += "\\n"; continue;
        case '\r': out += "\\r"; continue;
        case '\t': out += "\\t"; continue;
        case '\b': out += "\\b"; continue;
        case '\f': out += "\\f"; continue;
        case '<':
        case '>':
        case '&':
            out += "\\u00";
            out += hex[c >> 4];
            out += hex[c & 15];
            continue;
        default: break;
        }
        if (c < 0x20) {
            out += "\\u00";
            out += hex[c >> 4];
            out += hex[c & 15];
            continue;
        }
        // U+2028 and U+2029 are escaped by Go (e2 80 a8 / e2 80 a9).
        if (c == 0xe2 && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
            (static_cast<unsigned char>(s[i + 2]) == 0xa8 || static_cast<unsigned char>(s[i + 2]) == 0xa9)) {
            out += static_cast<unsigned char>(s[i + 2]) == 0xa8 ? "\\u2028" : "\\u2029";
            i += 2;
            continue;
        }
        if (c < 0x80) {
            out += static_cast<char>(c);
            continue;
        }
        // Go's decoder turns each byte that does not start a valid UTF-8 sequence into U+FFFD
        // (lone surrogates included), so its output never carries invalid UTF-8; neither does ours.
        auto [rune, n] = decode_rune(s, i);
        if (rune == kReplacementRune && n == 1) {
            out += "\xEF\xBF\xBD";
            continue;
        }
        out.append(s.substr(i, n));
        i += n - 1;
    }
    out += '"';
}

void write_scalar(std::string& out, const Value& v) {
    switch (v.GetType()) {
    case rapidjson::kNullType: out += "null"; return;
    case rapidjson::kFalseType: out += "false"; return;
    case rapidjson::kTrueType: out += "true"; return;
    case rapidjson::kStringType: write_string(out, {v.GetString(), v.GetStringLength()}); return;
    case rapidjson::kNumberType:
        if (v.IsInt64()) out += std::to_string(v.GetInt64());
        else if (v.IsUint64()) out += std::to_string(v.GetUint64());
        else out += go_float(v.GetDouble());
        return;
    case rapidjson::kArrayType: out += "[]"; return;   // only ever called for an empty one
    case rapidjson::kObjectType: out += "{}"; return;
    }
}

}  // namespace

std::string quote(std::string_view s) {
    std::string out;
    write_string(out, s);
    return out;
}

std::string write(const Value& root, Style style, bool sort_keys) {
    std::string out;
    // The containers open around the value being written, innermost last (no recursion: a
    // document may nest 10,000 deep).
    struct Open {
        Children children;
        std::size_t next = 0;
        bool array;
    };
    std::vector<Open> stack;
    auto newline = [&] {
        if (style == Style::compact) return;
        out += '\n';
        out.append(stack.size() * 4, ' ');
    };
    auto begin = [&](const Value& v) {
        if (v.IsArray() ? v.Empty() : !v.IsObject() || v.ObjectEmpty()) return write_scalar(out, v);
        out += v.IsArray() ? '[' : '{';
        stack.push_back({children_of(v, sort_keys ? MemberOrder::sorted : MemberOrder::as_written), 0, v.IsArray()});
    };
    begin(root);
    while (!stack.empty()) {
        Open& top = stack.back();
        if (top.next == top.children.size()) {
            char close = top.array ? ']' : '}';
            stack.pop_back();
            newline();
            out += close;
            continue;
        }
        auto [name, value] = top.children[top.next++];
        if (top.next > 1) out += ',';
        newline();
        if (name) {
            write_string(out, name_of(*name));
            out += style == Style::compact ? ":" : ": ";
        }
        begin(*value);
    }
    return out;
}

}  // namespace cni::json
