// SPDX-License-Identifier: Apache-2.0
// Where an HTTP client connects (docs/design.md, The HTTP client): an http:// or https:// URL
// without a path, to an address literal or, when the caller allows it, a host name (resolved
// when connecting). The caller's rules say which schemes and forms it takes, and its errors name
// the URL as the caller calls it ("metadata URL", "etcd endpoint").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.hpp"

namespace cni::http {

struct Endpoint {
    std::string url;        // as given, without a trailing "/", for messages and to prefix paths
    bool tls = false;       // https://
    std::string host;       // the Host header: the authority as written, with its port if given
    std::string address;    // the address literal (without brackets) or the host name
    bool literal = true;    // `address` is an address literal, not a name
    std::uint16_t port = 80;
};

struct UrlRules {
    std::string_view what = "URL";  // what the caller calls the URL, in errors
    bool https = false;             // https:// is allowed
    bool names = false;             // a host name is allowed (resolved when connecting)
};

// "http[s]://<IPv4>[:port]", "http[s]://[<IPv6>][:port]" or, with rules.names,
// "http[s]://<name>[:port]", with nothing after but an optional "/". The default port is 80 for
// http and 443 for https.
Result<Endpoint> parse_url(std::string_view url, const UrlRules& rules);

}  // namespace cni::http
