// SPDX-License-Identifier: Apache-2.0
// subnet.env parsing and delegate construction for flannel (see flannel.hpp).
#include "applets/flannel/delegate_config.hpp"

#include <charconv>

#include "core/strings.hpp"

namespace cni::flannel {
namespace {

Result<net::IpNet> network_of(std::string_view key, std::string_view text) {
    auto net = net::IpNet::parse(trim_space(text));
    if (!net) return fail(std::string(key) + ": invalid CIDR address: " + std::string(text));
    return net->masked();
}

Result<std::vector<net::IpNet>> network_list(std::string_view key, std::string_view text) {
    std::vector<net::IpNet> out;
    for (auto part : split(text, ',')) {
        if (trim_space(part).empty()) continue;
        CNI_TRY_ASSIGN(auto net, network_of(key, part));
        bool seen = false;
        for (auto& n : out) seen = seen || n == net;
        if (!seen) out.push_back(net);
    }
    return out;
}

// obj[key] = value, replacing an existing member of that exact name.
void put(json::Value& obj, std::string_view key, json::Value value, json::Alloc& a) {
    if (auto it = obj.FindMember(json::str(key, a)); it != obj.MemberEnd()) it->value = std::move(value);
    else json::set(obj, key, std::move(value), a);
}

bool has(const json::Value& obj, std::string_view key) { return obj.FindMember(std::string(key).c_str()) != obj.MemberEnd(); }

}  // namespace

Result<SubnetEnv> parse_subnet_env(std::string_view text, std::string_view path) {
    SubnetEnv env;
    bool have_networks = false, have_ipv6_networks = false;
    for (auto line : split(text, '\n')) {
        auto eq = line.find('=');
        if (eq == std::string_view::npos) continue;
        auto key = trim_space(line.substr(0, eq));
        auto value = trim_space(line.substr(eq + 1));
        if (key == "FLANNEL_NETWORK") {
            CNI_TRY_ASSIGN(env.networks, network_list(key, value));
            have_networks = true;
        } else if (key == "FLANNEL_IPV6_NETWORK") {
            CNI_TRY_ASSIGN(env.ipv6_networks, network_list(key, value));
            have_ipv6_networks = true;
        } else if (key == "FLANNEL_SUBNET") {
            CNI_TRY_ASSIGN(env.subnet, network_of(key, value));
        } else if (key == "FLANNEL_IPV6_SUBNET") {
            CNI_TRY_ASSIGN(env.ipv6_subnet, network_of(key, value));
        } else if (key == "FLANNEL_MTU") {
            unsigned mtu = 0;
            auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), mtu);
            if (ec != std::errc() || p != value.data() + value.size()) return fail("FLANNEL_MTU: invalid value " + std::string(value));
            env.mtu = mtu;
        } else if (key == "FLANNEL_IPMASQ") {
            env.ipmasq = value == "true";
        }
    }
    std::vector<std::string> missing;
    if (!have_networks && !have_ipv6_networks) missing.insert(missing.end(), {"FLANNEL_NETWORK", "FLANNEL_IPV6_NETWORK"});
    if (!env.subnet && !env.ipv6_subnet) missing.insert(missing.end(), {"FLANNEL_SUBNET", "FLANNEL_IPV6_SUBNET"});
    if (!env.mtu) missing.push_back("FLANNEL_MTU");
    if (!env.ipmasq) missing.push_back("FLANNEL_IPMASQ");
    if (!missing.empty()) {
        std::string list;
        for (auto& m : missing) list += (list.empty() ? "" : ", ") + m;
        return fail(std::string(path) + " is missing " + list);
    }
    return env;
}

std::string delegate_type(const json::Value& delegate_conf) {
    if (const auto* t = json::find_exact(delegate_conf, "type"); t && t->IsString()) return t->GetString();
    return "bridge";
}

Result<std::string> delegate_config(const json::Value& conf, const SubnetEnv& env) {
    json::Document d;
    auto& a = d.GetAllocator();
    d.SetObject();
    if (const auto* given = json::find(conf, "delegate"); given && !given->IsNull()) {
        if (!given->IsObject()) return fail("\"delegate\" must be an object");
        static_cast<json::Value&>(d) = json::copy(*given, a);
    }
    if (has(d, "name")) return fail("\"delegate\" must not have \"name\" field");
    if (has(d, "ipam")) return fail("\"delegate\" must not have \"ipam\" field");
    if (const auto* t = json::find_exact(d, "type"); t && !t->IsString()) return fail("\"delegate\" field \"type\" must be a string");
    if (const auto* name = json::find(conf, "name"); name && name->IsString()) put(d, "name", json::copy(*name, a), a);
    if (!has(d, "type")) put(d, "type", json::str("bridge", a), a);
    if (!has(d, "ipMasq")) put(d, "ipMasq", json::Value(!*env.ipmasq), a);
    if (!has(d, "mtu")) put(d, "mtu", json::Value(*env.mtu), a);
    if (delegate_type(d) == "bridge" && !has(d, "isGateway")) put(d, "isGateway", json::Value(true), a);
    if (const auto* v = json::find(conf, "cniVersion"); v && v->IsString() && v->GetStringLength())
        put(d, "cniVersion", json::copy(*v, a), a);

    json::Value ipam(rapidjson::kObjectType);
    if (const auto* base = json::find(conf, "ipam"); base && base->IsObject()) ipam = json::copy(*base, a);
    if (!has(ipam, "type")) put(ipam, "type", json::str("host-local", a), a);
    json::Value ranges(rapidjson::kArrayType);
    for (const auto& sn : {env.subnet, env.ipv6_subnet}) {
        if (!sn) continue;
        json::Value range(rapidjson::kObjectType);
        json::set(range, "subnet", json::str(sn->str(), a), a);
        json::Value set(rapidjson::kArrayType);
        set.PushBack(range, a);
        ranges.PushBack(set, a);
    }
    put(ipam, "ranges", std::move(ranges), a);
    json::Value routes(rapidjson::kArrayType);
    if (auto it = ipam.FindMember("routes"); it != ipam.MemberEnd() && it->value.IsArray())
        for (auto& r : it->value.GetArray()) routes.PushBack(json::copy(r, a), a);
    for (const auto* list : {&env.networks, &env.ipv6_networks})
        for (auto& n : *list) {
            json::Value route(rapidjson::kObjectType);
            json::set(route, "dst", json::str(n.str(), a), a);
            routes.PushBack(route, a);
        }
    put(ipam, "routes", std::move(routes), a);
    put(d, "ipam", std::move(ipam), a);
    if (const auto* rc = json::find(conf, "runtimeConfig"); rc && !rc->IsNull()) put(d, "runtimeConfig", json::copy(*rc, a), a);
    // Go's flannel holds the delegate, ipam and runtimeConfig as interface{} maps: what it
    // marshals has every number through float64 (a delegate "mtu": 1400.0 arrives as 1400).
    json::Document out;
    return json::write(json::go_interface_round_trip(d, out.GetAllocator()), json::Style::compact, true);
}

}  // namespace cni::flannel
