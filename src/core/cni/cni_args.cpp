// SPDX-License-Identifier: Apache-2.0
// CNI_ARGS parsing (see cni_args.hpp).
#include "core/cni/cni_args.hpp"

#include <cstdio>
#include <vector>

#include "core/strings.hpp"

namespace cni {


namespace {

Result<bool> parse_go_bool(std::string_view v) {  // types.UnmarshallableBool
    std::string lower(v);
    for (auto& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
    if (lower == "1" || lower == "true") return true;
    if (lower == "0" || lower == "false") return false;
    return fail("boolean unmarshal error: invalid input " + lower);
}

}  // namespace

Result<net::IpAddr> parse_arg_ip(std::string_view value) {
    std::optional<net::IpAddr> ip;
    if (value.find('/') != std::string_view::npos) {
        if (auto n = net::IpNet::parse(value)) ip = n->ip;
    } else {
        ip = net::IpAddr::parse(value);
    }
    if (!ip) return fail("invalid IP address " + std::string(value));
    return *ip;
}

Status load_cni_args(std::string_view args, std::span<const CniArgField> fields) {
    if (args.empty()) return {};
    std::vector<std::string_view> unknown;
    bool ignore_unknown = false;
    for (auto pair : split(args, ';')) {
        auto kv = split(pair, '=');
        if (kv.size() != 2) return fail("ARGS: invalid pair " + go_quote(pair));
        auto wrap = [&](const Error& e) {
            return fail("ARGS: error parsing value of pair " + go_quote(pair) + ": " + e.msg);
        };
        if (kv[0] == "IgnoreUnknown") {
            auto b = parse_go_bool(kv[1]);
            if (!b) return wrap(b.error());
            ignore_unknown = *b;
            continue;
        }
        const CniArgField* f = nullptr;
        for (auto& cand : fields)
            if (cand.name == kv[0]) f = &cand;
        if (!f) {
            unknown.push_back(pair);
            continue;
        }
        if (auto st = f->set(kv[1]); !st) return wrap(st.error());
    }
    if (!unknown.empty() && !ignore_unknown) {
        std::string list = "[";
        for (std::size_t i = 0; i < unknown.size(); ++i) list += (i ? " " : "") + go_quote(unknown[i]);
        return fail("ARGS: unknown args " + list + "]");
    }
    return {};
}

std::optional<std::string> cni_arg(std::string_view args, std::string_view key) {
    for (auto pair : split(args, ';')) {
        auto eq = pair.find('=');
        if (eq != std::string_view::npos && pair.substr(0, eq) == key) return std::string(pair.substr(eq + 1));
    }
    return std::nullopt;
}

}  // namespace cni
