// SPDX-License-Identifier: Apache-2.0
// Parsing of the dhcp IPAM keys (see config.hpp).
#include "applets/dhcp/config.hpp"

#include <algorithm>
#include <charconv>

#include "core/cni/cni_args.hpp"
#include "core/cni/netconf.hpp"
#include "core/fw/sha512.hpp"
#include "core/strings.hpp"

namespace cni::dhcp {
namespace {

struct NamedOption {
    std::string_view name;
    std::uint8_t code;
};
constexpr NamedOption kOptionNames[] = {
    {"dhcp-client-identifier", opt::client_id}, {"subnet-mask", opt::subnet_mask},
    {"routers", opt::routers},                  {"host-name", opt::host_name},
    {"user-class", opt::user_class},            {"vendor-class-identifier", opt::vendor_class},
};

// The defaults of the Parameter Request List. 121 is asked for too: without it a server that
// has classless routes does not send them, and the result's routes would be wrong.
constexpr std::uint8_t kDefaultRequests[] = {opt::subnet_mask, opt::routers, opt::classless_routes, opt::static_routes};

}  // namespace

Status decode(const json::Value& v, RequestOption& out, const json::Where& w) {
    CNI_TRY(json::expect_object(v, w, "main.RequestOption"));
    CNI_TRY(json::field(v, "option", out.option, w));
    return json::field(v, "skipDefault", out.skip_default, w);
}

Status decode(const json::Value& v, ProvideOption& out, const json::Where& w) {
    CNI_TRY(json::expect_object(v, w, "main.ProvideOption"));
    CNI_TRY(json::field(v, "option", out.option, w));
    CNI_TRY(json::field(v, "value", out.value, w));
    return json::field(v, "fromArg", out.from_arg, w);
}

namespace {

Result<std::uint8_t> option_named(std::string_view name, const json::Where& w) {
    auto c = option_code(name);
    if (!c) return fail(code::invalid_config, "unknown DHCP option " + std::string(w.path) + ".option \"" + std::string(name) +
                                                  "\" (a name like \"host-name\" or a code 0-255)");
    return *c;
}

}  // namespace

std::string network_digest(const json::Value& config) { return fw::sha512_hex(network_identity(config)).substr(0, 32); }

std::optional<std::uint8_t> option_code(std::string_view name) {
    for (auto& n : kOptionNames)
        if (n.name == name) return n.code;
    unsigned v = 0;
    auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), v);
    if (name.empty() || ec != std::errc() || end != name.data() + name.size() || v > 255) return std::nullopt;
    return std::uint8_t(v);
}

std::string lease_key(std::string_view container_id, std::string_view net_name, std::string_view ifname) {
    return std::string(container_id) + "/" + std::string(net_name) + "/" + std::string(ifname);
}

Bytes client_id_for(std::string_view key) {
    std::string text(key);
    if (text.size() > kMaxClientIdText) text = text.substr(0, kMaxClientIdText - 33) + "#" + fw::sha512_hex(key).substr(0, 32);
    Bytes id(text.size() + 1, 0);  // id[0] = 0: no hardware type
    std::copy(text.begin(), text.end(), id.begin() + 1);
    return id;
}

Result<DhcpConf> parse_dhcp_conf(std::string_view config, std::string_view cni_args) {
    CNI_TRY_ASSIGN(auto nc, parse_netconf(config));
    DhcpConf c;
    c.name = nc.name;
    c.network_digest = network_digest(nc.doc);
    const json::Value* ipam = nc.member("ipam");
    if (!ipam || !ipam->IsObject()) return fail(code::invalid_config, "IPAM config missing 'ipam' key");
    json::Where w{"NetConf", "ipam"};
    DhcpKeys keys;
    CNI_TRY(read_keys(*ipam, kDhcpKeys, keys, w));
    if (!keys.socket_path.empty()) c.socket_path = keys.socket_path;
    c.priority = keys.priority;
    if (keys.protocol == "ipv6") c.protocol = Protocol::ipv6;
    else if (keys.protocol == "dual") c.protocol = Protocol::dual;
    else if (!keys.protocol.empty() && keys.protocol != "ipv4")
        return fail(code::invalid_config, "invalid ipam.protocol \"" + shown(keys.protocol) + "\": must be \"ipv4\", \"ipv6\" or \"dual\"");
    if (c.protocol == Protocol::ipv6 && (!keys.request.empty() || !keys.provide.empty()))  // DHCPv4 options: nothing would send them
        return fail(code::invalid_config, std::string("ipam.") + (keys.request.empty() ? "provide" : "request") +
                                              " names DHCPv4 options, and ipam.protocol \"ipv6\" leases by DHCPv6 only");

    bool skip_default = false;
    Bytes extra;
    for (const auto& r : keys.request) {
        CNI_TRY_ASSIGN(auto code, option_named(r.option, w.at("request")));
        skip_default = skip_default || r.skip_default;
        extra.push_back(code);
    }
    if (!skip_default) c.request_list.assign(std::begin(kDefaultRequests), std::end(kDefaultRequests));
    for (auto code : extra)
        if (std::find(c.request_list.begin(), c.request_list.end(), code) == c.request_list.end()) c.request_list.push_back(code);

    for (const auto& p : keys.provide) {
        CNI_TRY_ASSIGN(auto code, option_named(p.option, w.at("provide")));
        std::string value = p.value;
        if (!p.from_arg.empty())
            if (auto v = cni_arg(cni_args, p.from_arg)) value = *v;
        if (value.empty()) continue;  // nothing to send (e.g. fromArg absent from CNI_ARGS)
        if (value.size() > 255)
            return fail(code::invalid_config, "DHCP option " + std::to_string(code) + " value is " +
                                                  std::to_string(value.size()) + " bytes, at most 255 are allowed");
        c.provide.push_back(Option{code, Bytes(value.begin(), value.end())});
    }
    return c;
}

}  // namespace cni::dhcp
