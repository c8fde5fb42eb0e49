// SPDX-License-Identifier: Apache-2.0
// The moved-routes record (moved_routes.hpp): {"network": …, "routes": […]}, each route one
// string of `key=value` fields (dst, gw, src, scope, metric, mtu, advmss, type, protocol), which
// decode back into the route as the main table held it.
#include "applets/sbr/moved_routes.hpp"

#include <charconv>
#include <limits>

#include "core/cni/json.hpp"
#include "core/strings.hpp"

namespace cni::sbr {
namespace {

std::string encode_route(const nl::RouteSpec& r) {
    std::string out = "dst=" + r.dst.str();
    if (r.gw) out += " gw=" + r.gw->str();
    if (r.src) out += " src=" + r.src->str();
    for (auto [name, value] : {std::pair<const char*, std::uint32_t>{"scope", r.scope}, {"metric", r.metric}, {"mtu", r.mtu},
                               {"advmss", r.advmss}, {"type", r.type}, {"protocol", r.protocol}})
        out += std::string(" ") + name + "=" + std::to_string(value);
    return out;
}

std::optional<std::uint32_t> number(std::string_view text, std::uint32_t max) {
    std::uint32_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc{} || end != text.data() + text.size() || v > max) return std::nullopt;
    return v;
}

// One field into `r`; false for an unknown key or a value out of its range.
bool decode_field(std::string_view key, std::string_view value, nl::RouteSpec& r) {
    auto small = [&](int& slot) {
        auto v = number(value, 255);
        return v && (slot = int(*v), true);
    };
    auto big = [&](std::uint32_t& slot) {
        auto v = number(value, std::numeric_limits<std::uint32_t>::max());
        return v && (slot = *v, true);
    };
    if (key == "dst") {
        auto dst = net::IpNet::parse(value);
        return dst && (r.dst = dst->masked(), true);
    }
    if (key == "gw" || key == "src") {
        auto ip = net::IpAddr::parse(value);
        return ip && ((key == "gw" ? r.gw : r.src) = *ip, true);
    }
    if (key == "scope") return small(r.scope);
    if (key == "type") return small(r.type);
    if (key == "protocol") return small(r.protocol);
    if (key == "metric") return big(r.metric);
    if (key == "mtu") return big(r.mtu);
    if (key == "advmss") return big(r.advmss);
    return false;
}

Result<nl::RouteSpec> decode_route(std::string_view text) {
    nl::RouteSpec r;
    bool has_dst = false;
    for (auto field : fields(text)) {
        auto eq = field.find('=');
        if (eq == std::string_view::npos || !decode_field(field.substr(0, eq), field.substr(eq + 1), r))
            return fail("bad route field " + go_quote(field));
        has_dst = has_dst || field.starts_with("dst=");
    }
    if (!has_dst) return fail("route " + go_quote(text) + " has no dst");
    if ((r.gw && r.gw->is_v4() != r.dst.ip.is_v4()) || (r.src && r.src->is_v4() != r.dst.ip.is_v4()))
        return fail("route " + go_quote(text) + " mixes address families");
    return r;
}

}  // namespace

Status save_moved_routes(const os::Dir& records, const std::string& name, const MovedRoutes& moved) {
    std::string text = "{\"network\": " + json::quote(moved.network) + ", \"routes\": [";
    for (std::size_t i = 0; i < moved.routes.size(); ++i) text += (i ? ", " : "") + json::quote(encode_route(moved.routes[i]));
    return records.write_atomic(name, text + "]}\n", 0600);
}

Result<std::optional<MovedRoutes>> load_moved_routes(const os::Dir& records, const std::string& name) {
    CNI_TRY_ASSIGN(auto text, records.read_if_exists(name));
    if (!text) return std::nullopt;
    auto bad = [&](const std::string& why) { return fail("sbr: record " + records.path_of(name) + ": " + why); };
    auto doc = json::parse(*text);
    if (!doc || !doc->IsObject()) return bad("not a JSON object");
    MovedRoutes out;
    auto network = json::find(*doc, "network");
    auto routes = json::find(*doc, "routes");
    if (!network || !network->IsString() || !routes || !routes->IsArray()) return bad("no network or routes");
    if (routes->Size() > kMaxMovedRoutes) return bad("more than " + std::to_string(kMaxMovedRoutes) + " routes");
    out.network = network->GetString();
    for (auto& r : routes->GetArray()) {
        if (!r.IsString()) return bad("a route that is not a string");
        auto route = decode_route(r.GetString());
        if (!route) return bad(route.error().msg);
        out.routes.push_back(*route);
    }
    return std::optional<MovedRoutes>(std::move(out));
}

}  // namespace cni::sbr
