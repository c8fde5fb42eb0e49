// SPDX-License-Identifier: Apache-2.0
// JSON with Go encoding/json semantics on top of RapidJSON, because configs are written for the
// Go plugins and results are compared byte for byte (docs/compatibility.md: results, Go's JSON).
// Reading: keys match case-insensitively and the last duplicate wins; null leaves a default;
// type mismatches give Go's "cannot unmarshal X into Go struct field S.path of type T" text;
// syntax errors give Go's text. Writing: MarshalIndent with 4 spaces (or the compact Encoder
// form), Go's string escaping (<, >, & as \u003c...), optionally keys sorted like a Go map.
#pragma once

#include <rapidjson/document.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/net/ip.hpp"
#include "core/result.hpp"

namespace cni::json {

using Value = rapidjson::Value;
using Document = rapidjson::Document;
using Alloc = Document::AllocatorType;

// Parse a whole document; the error message is Go's (e.g. "unexpected end of JSON input").
Result<Document> parse(std::string_view text);
// The same for a large text of many strings (a vpc-eni node file lists thousands of addresses):
// the strings are unescaped into `buffer`, a copy of `text` that must outlive the document,
// instead of each being copied into the document. Same document and errors as parse().
Result<Document> parse_large(std::string_view text, std::string& buffer);

// The member Go would decode into a field named `key`: the last one equal ignoring ASCII case.
const Value* find(const Value& obj, std::string_view key);
// Exact-name lookup, for the few places Go matches exactly (map keys).
const Value* find_exact(const Value& obj, std::string_view key);

// A deep copy of `v` allocated from `a`. Use it, not RapidJSON's copy constructor or CopyFrom,
// for anything from a config: those recurse once per level, and a document may nest 10,000
// deep. (Writing and go_interface_round_trip walk without recursion too.)
Value copy(const Value& v, Alloc& a);

// What Go's json.Marshal makes of `v` after json.Unmarshal into interface{}, as a plugin's
// prevResult goes (version.ParsePrevResult): every number through float64 (1e2 becomes 100,
// 1.5 stays a fraction, 2^63-1 becomes 9223372036854776000), each object's keys sorted
// bytewise with a repeated key's last value kept.
Value go_interface_round_trip(const Value& v, Alloc& a);

// A float64 as Go's encoding/json writes it: the shortest form that reads back the same,
// fixed-point unless the magnitude is below 1e-6 or at least 1e21 ("1e+21", "1.5e-7").
std::string go_float(double x);

// Go's name for a JSON value's kind in error messages: "string", "number", "object", ...
std::string_view kind(const Value& v);

// Where a value sits, for error messages: the innermost Go struct type and the dotted key path.
struct Where {
    std::string type;    // e.g. "IPAMConfig"
    std::string path;    // e.g. "ipam.dataDir"
    std::string prefix{};  // how the plugin wraps its json.Unmarshal error, e.g. "failed to load netconf: "
    Where at(std::string_view key) const { return {type, path.empty() ? std::string(key) : path + "." + std::string(key), prefix}; }
    Where in(std::string_view struct_type) const { return {std::string(struct_type), path, prefix}; }
};
Error type_error(const Value& v, const Where& w, std::string_view go_type);

// decode(value, out, where) for each Go field type used by the applets.
Status decode(const Value& v, std::string& out, const Where& w);
Status decode(const Value& v, bool& out, const Where& w);
// Go's int is 64 bits wide on every platform we build for, so a Go int field decodes into
// std::int64_t (named "int" in errors): a value an int32 cannot hold is still read, as Go reads
// it, and whatever uses it checks its range. A C++ int is deliberately not decodable.
Status decode(const Value& v, std::int64_t& out, const Where& w);
Status decode(const Value& v, int& out, const Where& w) = delete;
Status decode(const Value& v, std::uint32_t& out, const Where& w);
Status decode(const Value& v, std::uint64_t& out, const Where& w);
Status decode(const Value& v, net::IpAddr& out, const Where& w);  // Go net.IP
Status decode(const Value& v, net::IpNet& out, const Where& w);   // CNI types.IPNet
Status decode(const Value& v, std::optional<net::IpAddr>& out, const Where& w);  // "" stays nil
// Go map[string]string: merged into `out` (as Go decodes into an existing map); a repeated key's last value wins.
Status decode(const Value& v, std::map<std::string, std::string>& out, const Where& w);

template <class T>
Status decode(const Value& v, std::optional<T>& out, const Where& w) {
    if (v.IsNull()) return {};
    T tmp{};
    CNI_TRY(decode(v, tmp, w));
    out = std::move(tmp);
    return {};
}

// A decoded type of another layer names its Go type by specialising GoName (e.g. ipam's Range:
// "allocator.Range"); a std::vector of it may name its own (Go's named slice "allocator.RangeSet").
template <class T>
struct GoName;

// The Go name of a decoded type, for "of type []string" in errors.
template <class T>
std::string go_type_name() {
    if constexpr (requires { GoName<T>::value; }) return std::string(GoName<T>::value);
    else if constexpr (std::is_same_v<T, std::string>) return "string";
    else if constexpr (std::is_same_v<T, bool>) return "bool";
    else if constexpr (std::is_same_v<T, std::int64_t>) return "int";
    else if constexpr (std::is_same_v<T, std::uint32_t>) return "uint32";
    else if constexpr (std::is_same_v<T, std::uint64_t>) return "uint64";
    else if constexpr (std::is_same_v<T, net::IpAddr>) return "net.IP";
    else return "";
}

template <class T>
Status decode(const Value& v, std::vector<T>& out, const Where& w) {
    out.clear();
    if (v.IsNull()) return {};
    if (!v.IsArray()) {
        std::string go_type = go_type_name<std::vector<T>>();
        return cni::Unexpected(type_error(v, w, go_type.empty() ? "[]" + go_type_name<T>() : go_type));
    }
    out.reserve(v.Size());
    for (const auto& e : v.GetArray()) {
        T item{};
        CNI_TRY(decode(e, item, w));
        out.push_back(std::move(item));
    }
    return {};
}

// Go leaves a field alone for null, except a CNI types.IPNet: its UnmarshalJSON still runs and
// refuses the empty string it reads from null.
template <class T>
inline constexpr bool kNullIsBadCidr = std::is_same_v<T, net::IpNet> || std::is_same_v<T, std::optional<net::IpNet>>;

// Decode obj[key] into out if present and not null; out keeps its default otherwise.
template <class T>
Status field(const Value& obj, std::string_view key, T& out, const Where& w) {
    const Value* m = find(obj, key);
    if (!m) return {};
    if (m->IsNull()) {
        if constexpr (kNullIsBadCidr<T>) return fail("invalid CIDR address: ");
        return {};
    }
    return decode(*m, out, w.at(key));
}

// An object member must be an object (or null/absent): Go's error when it is not.
Status expect_object(const Value& v, const Where& w, std::string_view go_type);

// obj[key] declared in Go as an anonymous struct (every plugin's runtimeConfig): the object, or
// nullptr when absent or null; any other value is Go's error naming the struct's type. Errors in
// its own fields name no struct ("Go struct field .runtimeConfig.mac"), as Go's json does for a
// type without a name: decode them with `inner`.
struct AnonymousStruct {
    const Value* object = nullptr;
    Where inner;
};
Result<AnonymousStruct> anonymous_struct(const Value& obj, std::string_view key, const Where& w, std::string_view go_type);

// (*obj)[key] declared as a named Go struct, or a pointer to one, of type `go_type`
// ("main.IPAMArgs"): the object, or nullptr when `obj` is nullptr or the member is absent or
// null; any other value is Go's error naming the type. Decode its fields with
// w.at(key).in(<the type's name>).
Result<const Value*> struct_member(const Value* obj, std::string_view key, const Where& w, std::string_view go_type);

// Output.
enum class Style { indented, compact };
std::string write(const Value& v, Style style, bool sort_keys);
// A string as Go's encoding/json writes it, quotes included (<, > and & escaped, invalid UTF-8
// as U+FFFD): for files written field by field in Go's layout.
std::string quote(std::string_view s);

// Helpers to build values.
inline Value str(std::string_view s, Alloc& a) { return Value(s.data(), rapidjson::SizeType(s.size()), a); }
void set(Value& obj, std::string_view key, Value v, Alloc& a);  // append a member (no lookup)

}  // namespace cni::json
