// SPDX-License-Identifier: Apache-2.0
// The CNI Result (spec "Success" section) held once, in its 1.1.0 shape, and converted at the
// edges exactly as the Go types packages do (docs/compatibility.md: results): encode to any version
// (0.1.0/0.2.0 "ip4/ip6", 0.3.x/0.4.0 with "version", 1.x with every key sorted), decode a
// prevResult or a delegate's output by the family of the config version, and the error JSON.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/cni/json.hpp"
#include "core/net/ip.hpp"
#include "core/result.hpp"

namespace cni {

// Go's results hold their interfaces, ips and routes as pointer slices: a JSON null element stays
// a nil pointer, is printed back as null and keeps the indexes of the elements after it. Such an
// element here is a default one with `null` set (an IpConfig's address and a Route's dst nil).

struct Interface {
    std::string name;
    std::string mac;
    std::int64_t mtu = 0;  // Go's int, as every integer below
    std::string sandbox;
    std::string socket_path;
    std::string pci_id;
    bool null = false;
    bool operator==(const Interface&) const = default;
};

struct IpConfig {
    std::optional<std::int64_t> interface;  // index into interfaces
    net::IpNet address;                 // keeps host bits
    std::optional<net::IpAddr> gateway;
    bool null = false;
    // A 0.3.x/0.4.0 input's "version" as it was written ("" when absent); printed back only by
    // a result with echo_given_versions, otherwise computed from the address.
    std::optional<std::string> given_version = std::nullopt;
    bool operator==(const IpConfig&) const = default;
};

struct Route {
    net::IpNet dst;
    std::optional<net::IpAddr> gw;
    std::int64_t mtu = 0;
    std::int64_t advmss = 0;
    std::int64_t priority = 0;
    std::optional<std::int64_t> table;
    std::optional<std::int64_t> scope;
    bool null = false;
    bool operator==(const Route&) const = default;
};

struct Dns {
    std::vector<std::string> nameservers;
    std::string domain;
    std::vector<std::string> search;
    std::vector<std::string> options;
    bool empty() const { return nameservers.empty() && domain.empty() && search.empty() && options.empty(); }
    bool operator==(const Dns&) const = default;
};

struct CniResult {
    // The version label of this value. Plugins build results labelled kCurrentVersion; printing
    // at the label's own version keeps the 1.x shape (Go's "same version" shortcut, which is
    // what gives loopback its quirk).
    std::string cni_version = "1.1.0";
    std::vector<Interface> interfaces;
    std::vector<IpConfig> ips;
    std::vector<Route> routes;
    Dns dns;
    // Set by the plugins whose Go original prints a 0.3.x/0.4.0 prevResult as it decoded it
    // (tuning, portmap) rather than converted to 1.x and back (which recomputes "version").
    bool echo_given_versions = false;
    bool operator==(const CniResult&) const = default;
};

// Go types.PrintResult(result, version): convert, then MarshalIndent with 4 spaces.
Result<std::string> encode_result(const CniResult& r, std::string_view version);

// Go create.Create(version, json) followed by conversion to 1.1.0: parse a result object in the
// shape of `version`'s family; its own cniVersion must belong to that family. The label is the
// object's cniVersion, or `version` when it has none (as invoke does for delegates), unless the
// caller determined it otherwise (the prevResult quirk, netconf.cpp).
Result<CniResult> decode_result(const json::Value& v, std::string_view version,
                                std::optional<std::string> label = std::nullopt);

// Go's round trip of a result through a version: what a caller sees after the result is
// printed at `version` and parsed back (used for in-process delegation).
Result<CniResult> round_trip(const CniResult& r, std::string_view version);

// {"code": N, "msg": "...", "details": "..."} as the Go plugins print it, and back (missing
// or mistyped fields stay empty, as Go's decoding of types.Error leaves them).
std::string encode_error(const Error& e);
Error decode_error(const json::Value& v);

// For a plugin that acts on a result's addresses (and routes): fails on a nil address (dst),
// i.e. a key the result left out, and on a null ips (routes) element, which Go's plugins use as
// they are, crashing or installing rules for "<nil>". A null interface has no name, so it is
// never the interface an address belongs to, and passes.
Status require_ip_addresses(const CniResult& r);
Status require_addresses_and_routes(const CniResult& r);

// The routes and DNS of a config, which several applets copy into their result verbatim. A
// route without "dst" keeps Go's nil IPNet: only ADD refuses it (require_route_dsts), so a DEL
// of such a config still releases what it can, as Go's does.
Status decode_routes(const json::Value& v, std::vector<Route>& out, const json::Where& w);

// A config's routes an IPAM ADD is about to return: Go's IPAM plugins print a route without
// "dst" as "<nil>", which every main plugin refuses with this error after the address was
// allocated; refused before allocating.
Status require_route_dsts(const std::vector<Route>& routes);
Status decode_dns(const json::Value& v, Dns& out, const json::Where& w);

}  // namespace cni
