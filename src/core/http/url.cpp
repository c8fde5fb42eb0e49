// SPDX-License-Identifier: Apache-2.0
// URLs of HTTP endpoints (see url.hpp): the scheme, the authority split into address or name and
// port, every other form refused with the reason.
#include "core/http/url.hpp"

#include <optional>

#include "core/net/ip.hpp"

namespace cni::http {
namespace {

std::optional<std::uint16_t> parse_port(std::string_view s) {
    if (s.empty() || s.size() > 5) return std::nullopt;
    unsigned v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return std::nullopt;
        v = v * 10 + unsigned(c - '0');
    }
    if (v == 0 || v > 65535) return std::nullopt;
    return std::uint16_t(v);
}

// A DNS host name: labels of letters, digits and '-', not starting or ending with '-', dot separated.
bool is_host_name(std::string_view s) {
    if (s.empty() || s.size() > 253) return false;
    std::size_t label = 0;
    for (std::size_t i = 0; i <= s.size(); ++i) {
        const char c = i < s.size() ? s[i] : '.';
        if (c == '.') {
            if (label == 0 || label > 63 || s[i - 1] == '-') return false;
            label = 0;
        } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || (c == '-' && label > 0)) {
            ++label;
        } else {
            return false;
        }
    }
    return true;
}

}  // namespace

Result<Endpoint> parse_url(std::string_view url, const UrlRules& rules) {
    const std::string shown(url);
    const std::string scheme = rules.https ? "http[s]://" : "http://";
    const std::string forms = rules.names
        ? "(" + scheme + "<host name or IPv4 address>[:port] or " + scheme + "[<IPv6 address>][:port])"
        : "(" + scheme + "<IPv4 address>[:port] or " + scheme + "[<IPv6 address>][:port])";
    auto bad = [&](std::string_view why) {
        return fail(std::string(rules.what) + " \"" + shown + "\": " + std::string(why) + " " + forms);
    };
    Endpoint e;
    std::string_view rest;
    if (url.starts_with("http://")) {
        rest = url.substr(7);
    } else if (rules.https && url.starts_with("https://")) {
        rest = url.substr(8);
        e.tls = true;
        e.port = 443;
    } else {
        return bad(rules.https ? "not an http:// or https:// URL" : "not an http:// URL");
    }
    if (rest.ends_with('/')) rest.remove_suffix(1);
    std::string_view address, port;
    if (rest.starts_with('[')) {
        const std::size_t close = rest.find(']');
        if (close == std::string_view::npos) return bad("no ] after the IPv6 address");
        address = rest.substr(1, close - 1);
        std::string_view after = rest.substr(close + 1);
        if (!after.empty() && !after.starts_with(':')) return bad("a path or more after the address");
        if (!after.empty()) port = after.substr(1);
        if (!after.empty() && port.empty()) return bad("an empty port");
        if (address.find(':') == std::string_view::npos) return bad("not an IPv6 address in brackets");
    } else {
        const std::size_t colon = rest.find(':');
        address = rest.substr(0, colon);
        if (colon != std::string_view::npos) {
            port = rest.substr(colon + 1);
            if (port.empty()) return bad("an empty port");
        }
        if (address.find_first_of("/?#@") != std::string_view::npos || port.find_first_of("/?#@") != std::string_view::npos)
            return bad("a path or more after the address");
        if (address.find_first_not_of("0123456789.") != std::string_view::npos) {
            if (!rules.names) return bad("not an address literal (no name is resolved)");
            if (!is_host_name(address)) return bad("not a host name or address");
            e.literal = false;
        }
    }
    if (e.literal) {
        auto ip = net::IpAddr::parse(address);
        if (!ip || address.find('%') != std::string_view::npos) {
            if (!rules.names) return bad("not an address literal (no name is resolved)");
            return bad("not a host name or address");
        }
    }
    if (!port.empty()) {
        auto p = parse_port(port);
        if (!p) return bad("port \"" + std::string(port) + "\" is not within 1..65535");
        e.port = *p;
    }
    e.address = std::string(address);
    e.url = std::string(url.substr(0, e.tls ? 8 : 7)) + std::string(rest);
    e.host = std::string(rest);
    return e;
}

}  // namespace cni::http
