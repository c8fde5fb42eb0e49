// SPDX-License-Identifier: Apache-2.0
// Common network configuration keys and the prevResult rules (see netconf.hpp).
#include "core/cni/netconf.hpp"

#include "core/cni/cni_args.hpp"

#include <map>

namespace cni {

namespace {

Status decode_valid_attachments(NetConf& c) {
    const auto* va = c.member("cni.dev/valid-attachments");
    if (!va || va->IsNull()) return {};
    auto vw = c.where.at("cni.dev/valid-attachments");
    if (!va->IsArray()) return cni::Unexpected(json::type_error(*va, vw, "[]types.GCAttachment"));
    std::vector<net::Attachment> list;
    for (const auto& e : va->GetArray()) {
        CNI_TRY(json::expect_object(e, vw, "types.GCAttachment"));
        net::Attachment a;
        CNI_TRY(json::field(e, "containerID", a.container_id, vw.in("GCAttachment")));
        CNI_TRY(json::field(e, "ifname", a.ifname, vw.in("GCAttachment")));
        list.push_back(std::move(a));
    }
    c.valid_attachments = std::move(list);
    return {};
}

Result<NetConf> parse_document(std::string_view config, std::string_view go_type, std::string_view top_go_type) {
    NetConf c;
    CNI_TRY_ASSIGN(c.doc, json::parse(config));
    c.where = json::Where{std::string(go_type), ""};
    if (!c.doc.IsObject()) return cni::Unexpected(json::type_error(c.doc, c.where, top_go_type));
    CNI_TRY(json::field(c.doc, "cniVersion", c.cni_version, c.where));
    CNI_TRY(json::field(c.doc, "name", c.name, c.where));
    return c;
}

}  // namespace

Result<NetConf> parse_netconf(std::string_view config, std::string_view go_type) {
    CNI_TRY_ASSIGN(auto c, parse_document(config, go_type, "types.NetConf"));
    const json::Where& w = c.where;
    CNI_TRY(json::field(c.doc, "type", c.type, w));
    if (const auto* ipam = c.member("ipam"); ipam && !ipam->IsNull()) {
        CNI_TRY(json::expect_object(*ipam, w.at("ipam"), "types.IPAM"));
        CNI_TRY(json::field(*ipam, "type", c.ipam_type, w.at("ipam").in("IPAM")));
    }
    if (const auto* prev = c.member("prevResult"); prev && !prev->IsNull() && !prev->IsObject())
        return cni::Unexpected(json::type_error(*prev, w.at("prevResult"), "map[string]interface {}"));
    CNI_TRY(decode_valid_attachments(c));
    return c;
}

Result<NetConf> parse_ipam_netconf(std::string_view config, std::string_view net_go_type, std::string_view ipam_go_type) {
    CNI_TRY_ASSIGN(auto c, parse_document(config, "Net", net_go_type));
    if (const auto* ipam = c.member("ipam"); ipam && !ipam->IsNull()) {
        CNI_TRY(json::expect_object(*ipam, c.where.at("ipam"), ipam_go_type));
        CNI_TRY(json::field(*ipam, "type", c.ipam_type, c.where.at("ipam").in("IPAMConfig")));
    }
    CNI_TRY(decode_valid_attachments(c));
    return c;
}

Result<std::optional<CniResult>> parse_prev_result(const NetConf& conf, PrevResultVersion missing) {
    const json::Value* prev = conf.member("prevResult");
    if (!prev || prev->IsNull()) return std::optional<CniResult>{};
    // version.ParsePrevResult: unless the map has an exact "CNIVersion" key with a value other
    // than "", it sets one to the config's version; it re-marshals (keys sorted, numbers through
    // float64) and decodes case-insensitively, so each version-ish key in sorted order overrides
    // the last, a null changing nothing.
    std::map<std::string, const json::Value*> versions;  // nullptr: the injected config version
    for (const auto& m : prev->GetObject()) {
        std::string key(m.name.GetString(), m.name.GetStringLength());
        std::string lower = key;
        for (auto& ch : lower) ch = char(std::tolower(static_cast<unsigned char>(ch)));
        if (lower == "cniversion") versions[key] = &m.value;
    }
    auto exact = versions.find("CNIVersion");
    bool inject = missing == PrevResultVersion::config_if_missing;
    if (inject && (exact == versions.end() || (exact->second->IsString() && exact->second->GetStringLength() == 0)))
        versions["CNIVersion"] = nullptr;
    std::string label;
    for (const auto& [key, v] : versions) {
        if (!v) {
            label = conf.cni_version;
        } else if (v->IsString()) {
            label.assign(v->GetString(), v->GetStringLength());
        } else if (!v->IsNull()) {
            return fail("json: cannot unmarshal " + std::string(json::kind(*v)) +
                        " into Go struct field Result.cniVersion of type string");
        }
    }
    json::Document round_trip;
    json::Value as_go_reads_it = json::go_interface_round_trip(*prev, round_trip.GetAllocator());
    CNI_TRY_ASSIGN(auto r, decode_result(as_go_reads_it, conf.cni_version.empty() ? "0.1.0" : conf.cni_version, label));
    return std::optional<CniResult>(std::move(r));
}

Result<std::optional<CniResult>> parse_prev_result(const NetConf& conf, std::string_view error_prefix,
                                                   PrevResultVersion missing) {
    auto prev = parse_prev_result(conf, missing);
    if (!prev && !error_prefix.empty()) return fail(std::string(error_prefix) + prev.error().msg);
    return prev;
}

Result<CniResult> require_prev_result(const NetConf& conf, std::string_view missing, std::string_view error_prefix,
                                      PrevResultVersion version) {
    CNI_TRY_ASSIGN(auto prev, parse_prev_result(conf, error_prefix, version));
    if (!prev) return fail(std::string(missing));
    return std::move(*prev);
}

Result<NetConf> load_netconf(std::string_view config, std::string_view go_type, std::string_view prefix) {
    auto nc = parse_netconf(config, go_type);
    if (!nc) return fail(std::string(prefix) + nc.error().msg);
    nc->where.prefix = prefix;
    const json::Where& w = nc->where;
    if (const auto* caps = nc->member("capabilities"); caps && !caps->IsNull()) {
        CNI_TRY(json::expect_object(*caps, w.at("capabilities"), "map[string]bool"));
        for (const auto& m : caps->GetObject())
            if (!m.value.IsNull() && !m.value.IsBool()) return cni::Unexpected(json::type_error(m.value, w.at("capabilities"), "bool"));
    }
    if (const auto* dns = nc->member("dns"); dns && !dns->IsNull())
        CNI_TRY(decode_dns(*dns, nc->dns, w.at("dns")));
    return nc;
}

Result<std::optional<std::string>> cni_args_mac(std::string_view cni_args) {
    std::optional<std::string> mac;
    CniArgField fields[] = {{"MAC", [&](std::string_view v) -> Status {
                                 if (!v.empty()) mac = std::string(v);
                                 return {};
                             }}};
    CNI_TRY(load_cni_args(cni_args, fields));
    return mac;
}

Result<std::optional<std::string>> runtime_config_mac(const NetConf& conf, const json::Where& w) {
    CNI_TRY_ASSIGN(auto rc, json::anonymous_struct(conf.root(), "runtimeConfig", w,
                                                   R"(struct { Mac string "json:\"mac,omitempty\"" })"));
    if (!rc.object) return std::optional<std::string>{};
    std::string mac;
    CNI_TRY(json::field(*rc.object, "mac", mac, rc.inner));
    return mac.empty() ? std::nullopt : std::optional<std::string>(mac);
}

Result<std::string> layered_mac(std::string_view cni_args, const NetConf& conf, const json::Where& w,
                                std::string config_mac) {
    CNI_TRY_ASSIGN(auto env_mac, cni_args_mac(cni_args));
    CNI_TRY_ASSIGN(auto rc_mac, runtime_config_mac(conf, w));
    return rc_mac.value_or(env_mac.value_or(std::move(config_mac)));
}

std::string network_identity(const json::Value& config) {
    auto per_call = [](std::string_view key) {
        return key == "cniVersion" || key == "prevResult" || key == "runtimeConfig" || key == "args" || key.starts_with("cni.dev/");
    };
    json::Document kept(rapidjson::kObjectType);
    auto& a = kept.GetAllocator();
    if (config.IsObject())
        for (const auto& m : config.GetObject()) {
            std::string_view key(m.name.GetString(), m.name.GetStringLength());
            if (!per_call(key)) json::set(kept, key, json::copy(m.value, a), a);
        }
    return json::write(kept, json::Style::compact, true);
}

}  // namespace cni
