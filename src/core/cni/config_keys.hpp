// SPDX-License-Identifier: Apache-2.0
// An applet's own configuration keys, declared once (docs/design.md, principle 14): each names
// the JSON key, the member of the applet's config struct it decodes into (with Go's json
// semantics, json.hpp) and one line for `cni-all <applet> --help`. read_keys decodes a list,
// load_config opens a plugin config with it, and docs_of gives the list the help table is printed
// from, so the keys a parser reads and the keys the help names cannot drift apart.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/cni/json.hpp"
#include "core/cni/netconf.hpp"

namespace cni {

// One key as `--help` shows it.
struct KeyDoc {
    std::string_view key;
    std::string_view type;  // as Go's type errors name it: string, bool, int, []string, net.IP, ...
    std::string_view doc;   // what it does, with its default
};

template <class Conf>
struct ConfigKey {
    KeyDoc doc;
    Status (*read)(const json::Value& obj, std::string_view key, Conf& conf, const json::Where& w);
};

namespace keys_detail {

template <class T>
struct MemberOf;
template <class C, class T>
struct MemberOf<T C::*> {
    using Conf = C;
    using Type = T;
};

template <class T>
constexpr std::string_view type_name() {
    if constexpr (requires { json::GoName<T>::value; }) return json::GoName<T>::value;
    else if constexpr (std::is_same_v<T, std::string>) return "string";
    else if constexpr (std::is_same_v<T, bool>) return "bool";
    else if constexpr (std::is_same_v<T, std::int64_t>) return "int";
    else if constexpr (std::is_same_v<T, std::uint32_t>) return "uint32";
    else if constexpr (std::is_same_v<T, std::uint64_t>) return "uint64";
    else if constexpr (std::is_same_v<T, net::IpAddr> || std::is_same_v<T, std::optional<net::IpAddr>>) return "net.IP";
    else if constexpr (std::is_same_v<T, net::IpNet>) return "string";  // a CIDR: types.IPNet decodes from a string
    else if constexpr (std::is_same_v<T, std::vector<std::string>>) return "[]string";
    else if constexpr (std::is_same_v<T, std::map<std::string, std::string>>) return "map[string]string";
    else return "object";
}

template <class T>
struct Unwrap {
    using Type = T;
};
template <class T>
struct Unwrap<std::optional<T>> {
    using Type = T;
};

}  // namespace keys_detail

// The key `name`, decoded into the config member `Member` (a pointer to a data member); `type`
// names it for the help where its C++ type does not say (a nested struct).
template <auto Member>
constexpr auto key(std::string_view name, std::string_view type, std::string_view doc) {
    using Conf = typename keys_detail::MemberOf<decltype(Member)>::Conf;
    return ConfigKey<Conf>{{name, type, doc}, [](const json::Value& obj, std::string_view k, Conf& c, const json::Where& w) {
                               return json::field(obj, k, c.*Member, w);
                           }};
}
template <auto Member>
constexpr auto key(std::string_view name, std::string_view doc) {
    using M = keys_detail::MemberOf<decltype(Member)>;
    return key<Member>(name, keys_detail::type_name<typename keys_detail::Unwrap<typename M::Type>::Type>(), doc);
}

// The key `name`, present and not null, decoded into `Member` by `Decode` (a function
// `Status(const json::Value&, T&, const json::Where&)`) for a type json.hpp does not know;
// `type` names it for the help.
template <auto Member, auto Decode>
constexpr auto key_with(std::string_view name, std::string_view type, std::string_view doc) {
    using Conf = typename keys_detail::MemberOf<decltype(Member)>::Conf;
    return ConfigKey<Conf>{{name, type, doc}, [](const json::Value& obj, std::string_view k, Conf& c, const json::Where& w) {
                               const json::Value* m = json::find(obj, k);
                               return m && !m->IsNull() ? Decode(*m, c.*Member, w.at(k)) : Status{};
                           }};
}

// Decodes every key of `keys` present in `obj` into `conf`, in the list's order.
template <class Conf, std::size_t N>
Status read_keys(const json::Value& obj, const std::array<ConfigKey<Conf>, N>& keys, Conf& conf, const json::Where& w) {
    for (const auto& k : keys) CNI_TRY(k.read(obj, k.doc.key, conf, w));
    return {};
}

// A plugin config (load_netconf, with the wording and Go struct given) with `keys` read into a
// Conf whose `net` member then holds the common keys.
template <class Conf, std::size_t N>
Result<Conf> load_config(std::string_view config, const std::array<ConfigKey<Conf>, N>& keys,
                         std::string_view go_type = "NetConf", std::string_view prefix = kLoadNetconf) {
    CNI_TRY_ASSIGN(auto nc, load_netconf(config, go_type, prefix));
    Conf c;
    c.net = std::move(nc);
    CNI_TRY(read_keys(c.net.root(), keys, c, c.net.where));
    return c;
}

// The help lines of `keys`, for Applet::keys.
template <class Conf, std::size_t N>
constexpr std::array<KeyDoc, N> docs_of(const std::array<ConfigKey<Conf>, N>& keys) {
    std::array<KeyDoc, N> out{};
    for (std::size_t i = 0; i < N; ++i) out[i] = keys[i].doc;
    return out;
}

// Two lists of help lines as one (an applet whose keys are decoded into two structs).
template <std::size_t N, std::size_t M>
constexpr std::array<KeyDoc, N + M> join(const std::array<KeyDoc, N>& a, const std::array<KeyDoc, M>& b) {
    std::array<KeyDoc, N + M> out{};
    for (std::size_t i = 0; i < N; ++i) out[i] = a[i];
    for (std::size_t i = 0; i < M; ++i) out[N + i] = b[i];
    return out;
}

}  // namespace cni
