// SPDX-License-Identifier: Apache-2.0
// Encoding, decoding and version conversion of CNI results (see cni_result.hpp). The three
// shapes are the Go packages types/020 (0.1.0, 0.2.0), types/040 (0.3.x, 0.4.0) and types/100
// (1.0.0, 1.1.0); conversion rules follow their convert functions.
#include "core/cni/cni_result.hpp"

#include <algorithm>

#include "core/cni/version.hpp"

namespace cni {
namespace {

enum class Family { v020, v040, v100, unknown };

constexpr std::string_view k020[] = {"", "0.1.0", "0.2.0"};
constexpr std::string_view k040[] = {"0.3.0", "0.3.1", "0.4.0"};
constexpr std::string_view k100[] = {"1.0.0", "1.1.0"};

Family family_of(std::string_view v) {
    auto in = [&](auto& list) { return std::find(std::begin(list), std::end(list), v) != std::end(list); };
    if (in(k020)) return Family::v020;
    if (in(k040)) return Family::v040;
    if (in(k100)) return Family::v100;
    return Family::unknown;
}

std::string go_list(std::span<const std::string_view> list) {  // fmt %v of []string
    std::string s = "[";
    for (std::size_t i = 0; i < list.size(); ++i) s += (i ? " " : "") + std::string(list[i]);
    return s + "]";
}

using json::Alloc;
using json::Value;

Value str_array(const std::vector<std::string>& v, Alloc& a) {
    Value arr(rapidjson::kArrayType);
    for (auto& s : v) arr.PushBack(json::str(s, a), a);
    return arr;
}

Value dns_json(const Dns& d, Alloc& a) {
    Value o(rapidjson::kObjectType);
    if (!d.nameservers.empty()) json::set(o, "nameservers", str_array(d.nameservers, a), a);
    if (!d.domain.empty()) json::set(o, "domain", json::str(d.domain, a), a);
    if (!d.search.empty()) json::set(o, "search", str_array(d.search, a), a);
    if (!d.options.empty()) json::set(o, "options", str_array(d.options, a), a);
    return o;
}

Value route_json(const Route& r, Alloc& a, bool dst_gw_only) {
    if (r.null) return Value();
    Value o(rapidjson::kObjectType);
    json::set(o, "dst", json::str(r.dst.str(), a), a);
    if (r.gw) json::set(o, "gw", json::str(r.gw->str(), a), a);
    if (dst_gw_only) return o;
    if (r.mtu) json::set(o, "mtu", Value(r.mtu), a);
    if (r.advmss) json::set(o, "advmss", Value(r.advmss), a);
    if (r.priority) json::set(o, "priority", Value(r.priority), a);
    if (r.table) json::set(o, "table", Value(*r.table), a);
    if (r.scope) json::set(o, "scope", Value(*r.scope), a);
    return o;
}

Value routes_json(const std::vector<Route>& routes, Alloc& a, bool dst_gw_only) {
    Value arr(rapidjson::kArrayType);
    for (auto& r : routes) arr.PushBack(route_json(r, a, dst_gw_only), a);
    return arr;
}

// The 0.3.x/0.4.0 (types040) and 1.x (types100) shapes differ only in a few keys: 1.x
// interfaces carry mtu/socketPath/pciID, 0.x addresses carry "version", 0.x always prints dns,
// and 1.x goes through a Go map (every key sorted, an empty dns dropped).
enum class Shape { v040, v100 };

// A Go pointer slice: a null element is printed as null (see the header).
template <class T, class Encode>
Value list_json(const std::vector<T>& items, Alloc& a, Encode encode) {
    Value arr(rapidjson::kArrayType);
    for (auto& item : items) arr.PushBack(item.null ? Value() : encode(item), a);
    return arr;
}

Value interface_json(const Interface& i, Alloc& a, bool v100) {
    Value o(rapidjson::kObjectType);
    json::set(o, "name", json::str(i.name, a), a);
    if (!i.mac.empty()) json::set(o, "mac", json::str(i.mac, a), a);
    if (v100 && i.mtu) json::set(o, "mtu", Value(i.mtu), a);
    if (!i.sandbox.empty()) json::set(o, "sandbox", json::str(i.sandbox, a), a);
    if (v100 && !i.socket_path.empty()) json::set(o, "socketPath", json::str(i.socket_path, a), a);
    if (v100 && !i.pci_id.empty()) json::set(o, "pciID", json::str(i.pci_id, a), a);
    return o;
}

// `echo_version`: a 0.x "version" as the input gave it (CniResult::echo_given_versions).
Value ip_json(const IpConfig& ip, Alloc& a, bool v100, bool echo_version) {
    Value o(rapidjson::kObjectType);
    if (!v100) {
        std::string version = ip.address.ip.is_v4() ? "4" : "6";
        if (echo_version && ip.given_version) version = *ip.given_version;
        json::set(o, "version", json::str(version, a), a);
    }
    if (ip.interface) json::set(o, "interface", Value(*ip.interface), a);
    json::set(o, "address", json::str(ip.address.str(), a), a);
    if (ip.gateway) json::set(o, "gateway", json::str(ip.gateway->str(), a), a);
    return o;
}

std::string encode_list_shape(const CniResult& r, std::string_view label, Shape shape) {
    const bool v100 = shape == Shape::v100;
    json::Document d(rapidjson::kObjectType);
    auto& a = d.GetAllocator();
    json::set(d, "cniVersion", json::str(label, a), a);
    if (!r.interfaces.empty())
        json::set(d, "interfaces", list_json(r.interfaces, a, [&](const Interface& i) { return interface_json(i, a, v100); }), a);
    if (!r.ips.empty())
        json::set(d, "ips", list_json(r.ips, a, [&](const IpConfig& ip) { return ip_json(ip, a, v100, r.echo_given_versions); }),
                  a);
    if (!r.routes.empty()) json::set(d, "routes", routes_json(r.routes, a, false), a);
    if (!v100 || !r.dns.empty()) json::set(d, "dns", dns_json(r.dns, a), a);
    return json::write(d, json::Style::indented, v100);
}

Result<std::string> encode_020(const CniResult& r, std::string_view label) {
    const IpConfig* ip4 = nullptr;
    const IpConfig* ip6 = nullptr;
    for (auto& ip : r.ips) {
        if (ip.address.is_nil()) continue;
        if (ip.address.ip.is_v4()) {
            if (!ip4) ip4 = &ip;
        } else if (!ip6) {
            ip6 = &ip;
        }
        if (ip4 && ip6) break;
    }
    if (!ip4 && !ip6) return fail("cannot convert: no valid IP addresses");
    json::Document d(rapidjson::kObjectType);
    auto& a = d.GetAllocator();
    json::set(d, "cniVersion", json::str(label, a), a);
    auto ipconf = [&](const IpConfig& ip, bool v4) {
        Value o(rapidjson::kObjectType);
        json::set(o, "ip", json::str(ip.address.str(), a), a);
        if (ip.gateway) json::set(o, "gateway", json::str(ip.gateway->str(), a), a);
        std::vector<Route> mine;
        for (auto& rt : r.routes)
            if (!rt.null && rt.dst.ip.is_v4() == v4) mine.push_back(rt);
        if (!mine.empty()) json::set(o, "routes", routes_json(mine, a, true), a);
        return o;
    };
    if (ip4) json::set(d, "ip4", ipconf(*ip4, true), a);
    if (ip6) json::set(d, "ip6", ipconf(*ip6, false), a);
    json::set(d, "dns", dns_json(r.dns, a), a);
    return json::write(d, json::Style::indented, false);
}

// ---- decoding ----------------------------------------------------------------------------------

// types.Route has its own UnmarshalJSON, which decodes into the unexported types.route: a value
// that is not an object names that type, and Go's json puts the enclosing struct's name and the
// whole path on an error inside it ("IPAMConfig.ipam.routes.dst"; Go before 1.20 dropped the
// ".dst").
Status decode_route(const Value& v, Route& out, const json::Where& w) {
    CNI_TRY(json::expect_object(v, w, "types.route"));
    const json::Where& rw = w;
    if (!json::find(v, "dst")) out.dst = net::IpNet::nil();
    CNI_TRY(json::field(v, "dst", out.dst, rw));
    CNI_TRY(json::field(v, "gw", out.gw, rw));
    CNI_TRY(json::field(v, "mtu", out.mtu, rw));
    CNI_TRY(json::field(v, "advmss", out.advmss, rw));
    CNI_TRY(json::field(v, "priority", out.priority, rw));
    CNI_TRY(json::field(v, "table", out.table, rw));
    CNI_TRY(json::field(v, "scope", out.scope, rw));
    return {};
}

// A result's IPConfig also decodes itself, through the unexported ipConfig of its version's
// package ("types100.ipConfig"): errors name the enclosing struct, as for a route.
Status decode_ip_config(const Value& v, IpConfig& out, const json::Where& w, std::string_view pkg) {
    CNI_TRY(json::expect_object(v, w, std::string(pkg) + ".ipConfig"));
    if (pkg == "types040") {
        std::string version;
        CNI_TRY(json::field(v, "version", version, w));
        out.given_version = version;
    }
    CNI_TRY(json::field(v, "interface", out.interface, w));
    if (!json::find(v, "address")) out.address = net::IpNet::nil();
    CNI_TRY(json::field(v, "address", out.address, w));
    CNI_TRY(json::field(v, "gateway", out.gateway, w));
    return {};
}

Status decode_interface(const Value& v, Interface& out, const json::Where& w, std::string_view pkg, bool full) {
    CNI_TRY(json::expect_object(v, w, std::string(pkg) + ".Interface"));
    auto iw = w.in("Interface");
    CNI_TRY(json::field(v, "name", out.name, iw));
    CNI_TRY(json::field(v, "mac", out.mac, iw));
    CNI_TRY(json::field(v, "sandbox", out.sandbox, iw));
    if (full) {
        CNI_TRY(json::field(v, "mtu", out.mtu, iw));
        CNI_TRY(json::field(v, "socketPath", out.socket_path, iw));
        CNI_TRY(json::field(v, "pciID", out.pci_id, iw));
    }
    return {};
}

// obj[key], a Go slice of type `go_type` (e.g. "[]*types100.Interface"), each element by `one`.
template <class T, class F>
Status decode_list(const Value& obj, std::string_view key, std::string_view go_type, std::vector<T>& out, const json::Where& w,
                   F&& one) {
    const Value* m = json::find(obj, key);
    if (!m || m->IsNull()) return {};
    auto kw = w.at(key);
    if (!m->IsArray()) return cni::Unexpected(json::type_error(*m, kw, go_type));
    for (const auto& e : m->GetArray()) {
        T item{};
        if (!e.IsNull()) CNI_TRY(one(e, item, kw));
        else {  // a nil pointer, or in a slice of values (0.2.0 routes) a zero value
            item.null = go_type.starts_with("[]*");
            if constexpr (requires { item.address; }) item.address = net::IpNet::nil();
            if constexpr (requires { item.dst; }) item.dst = net::IpNet::nil();
        }
        out.push_back(std::move(item));
    }
    return {};
}

// Go's conversion of a 0.3.x/0.4.0 result to 1.x dereferences every interface and address (a
// null one crashes the Go plugin); a clean error here.
Status require_convertible_from_040(const CniResult& r) {
    for (std::size_t i = 0; i < r.interfaces.size(); ++i)
        if (r.interfaces[i].null) return fail("cannot convert: interfaces[" + std::to_string(i) + "] is null");
    for (std::size_t i = 0; i < r.ips.size(); ++i)
        if (r.ips[i].null) return fail("cannot convert: ips[" + std::to_string(i) + "] is null");
    return {};
}

Status decode_020_ip(const Value& obj, std::string_view key, CniResult& r, const json::Where& w) {
    const Value* m = json::find(obj, key);
    if (!m || m->IsNull()) return {};
    auto kw = w.at(key);
    CNI_TRY(json::expect_object(*m, kw, "types020.ipConfig"));  // IPConfig decodes itself, as in 0.4.0+
    IpConfig ip;
    if (!json::find(*m, "ip")) ip.address = net::IpNet::nil();
    CNI_TRY(json::field(*m, "ip", ip.address, kw));
    CNI_TRY(json::field(*m, "gateway", ip.gateway, kw));
    r.ips.push_back(ip);
    return decode_list(*m, "routes", "[]types.Route", r.routes, kw, decode_route);
}

}  // namespace

Status decode_routes(const Value& v, std::vector<Route>& out, const json::Where& w) {
    out.clear();
    if (v.IsNull()) return {};
    if (!v.IsArray()) return cni::Unexpected(json::type_error(v, w, "[]*types.Route"));
    for (const auto& e : v.GetArray()) {
        if (e.IsNull()) continue;
        Route r;
        CNI_TRY(decode_route(e, r, w));
        out.push_back(std::move(r));
    }
    return {};
}

Status decode_dns(const Value& v, Dns& out, const json::Where& w) {
    CNI_TRY(json::expect_object(v, w, "types.DNS"));
    auto dw = w.in("DNS");
    CNI_TRY(json::field(v, "nameservers", out.nameservers, dw));
    CNI_TRY(json::field(v, "domain", out.domain, dw));
    CNI_TRY(json::field(v, "search", out.search, dw));
    CNI_TRY(json::field(v, "options", out.options, dw));
    return {};
}

Result<std::string> encode_result(const CniResult& r, std::string_view version) {
    std::string_view from = r.cni_version.empty() ? kCurrentVersion : std::string_view(r.cni_version);
    std::string_view to = version.empty() ? "0.1.0" : version;
    if (from == to) return encode_list_shape(r, to, Shape::v100);
    switch (family_of(to)) {
    case Family::v100: return encode_list_shape(r, to, Shape::v100);
    case Family::v040: return encode_list_shape(r, to, Shape::v040);
    case Family::v020: return encode_020(r, to);
    case Family::unknown: break;
    }
    return fail("no converter for CNI result version " + std::string(from) + " to " + std::string(to));
}

Result<CniResult> decode_result(const Value& v, std::string_view version, std::optional<std::string> label_override) {
    Family fam = family_of(version);
    if (fam == Family::unknown) return fail("unsupported CNI result version \"" + std::string(version) + "\"");
    json::Where w{"Result", ""};
    if (!v.IsObject()) return cni::Unexpected(json::type_error(v, w, "Result"));
    std::string label(version);
    if (label_override) label = *label_override;
    else CNI_TRY(json::field(v, "cniVersion", label, w));
    using List = std::span<const std::string_view>;
    List accepted = fam == Family::v020 ? List(k020) : fam == Family::v040 ? List(k040) : List(k100);
    if (std::find(accepted.begin(), accepted.end(), label) == accepted.end())
        return fail("result type supports " + go_list(accepted) + " but unmarshalled CNIVersion is \"" + label + "\"");

    CniResult r;  // converted to the current version, as NewResultFromResult does
    if (fam == Family::v020) {
        CNI_TRY(decode_020_ip(v, "ip4", r, w));
        CNI_TRY(decode_020_ip(v, "ip6", r, w));
    } else {
        bool full = fam == Family::v100;
        std::string pkg = full ? "types100" : "types040";
        CNI_TRY(decode_list(v, "interfaces", "[]*" + pkg + ".Interface", r.interfaces, w,
                            [&](const Value& e, Interface& i, const json::Where& iw) { return decode_interface(e, i, iw, pkg, full); }));
        CNI_TRY(decode_list(v, "ips", "[]*" + pkg + ".IPConfig", r.ips, w,
                            [&](const Value& e, IpConfig& ip, const json::Where& iw) { return decode_ip_config(e, ip, iw, pkg); }));
        CNI_TRY(decode_list(v, "routes", "[]*types.Route", r.routes, w, decode_route));
        if (!full) CNI_TRY(require_convertible_from_040(r));
    }
    if (const Value* d = json::find(v, "dns"); d && !d->IsNull()) CNI_TRY(decode_dns(*d, r.dns, w.at("dns")));
    return r;
}

Status require_ip_addresses(const CniResult& r) {
    for (std::size_t i = 0; i < r.ips.size(); ++i) {
        if (r.ips[i].null) return fail("ips[" + std::to_string(i) + "] is null");
        if (r.ips[i].address.is_nil()) return fail("invalid CIDR address: <nil>");
    }
    return {};
}

Status require_route_dsts(const std::vector<Route>& routes) {
    for (auto& r : routes)
        if (r.dst.is_nil()) return fail("invalid CIDR address: <nil>");
    return {};
}

Status require_addresses_and_routes(const CniResult& r) {
    CNI_TRY(require_ip_addresses(r));
    for (std::size_t i = 0; i < r.routes.size(); ++i) {
        if (r.routes[i].null) return fail("routes[" + std::to_string(i) + "] is null");
        if (r.routes[i].dst.is_nil()) return fail("invalid CIDR address: <nil>");
    }
    return {};
}

Result<CniResult> round_trip(const CniResult& r, std::string_view version) {
    CNI_TRY_ASSIGN(auto text, encode_result(r, version));
    CNI_TRY_ASSIGN(auto doc, json::parse(text));
    return decode_result(doc, version.empty() ? "0.1.0" : version);
}

std::string encode_error(const Error& e) {
    json::Document d(rapidjson::kObjectType);
    auto& a = d.GetAllocator();
    json::set(d, "code", Value(e.code), a);
    json::set(d, "msg", json::str(e.msg, a), a);
    if (!e.details.empty()) json::set(d, "details", json::str(e.details, a), a);
    return json::write(d, json::Style::indented, false);
}

Error decode_error(const json::Value& v) {
    Error e{0, {}, {}};
    json::Where w{"Error", ""};
    std::uint32_t c = 0;
    (void)json::field(v, "code", c, w);
    (void)json::field(v, "msg", e.msg, w);
    (void)json::field(v, "details", e.details, w);
    e.code = int(c);
    return e;
}

}  // namespace cni
