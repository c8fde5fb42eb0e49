// SPDX-License-Identifier: Apache-2.0
// cluster-ipam's keys (config.hpp): host-local's range sets and routes, its own keys and the
// etcd section, checked where a tenant could otherwise make root read or act as something it
// is not (docs/cluster-ipam.md, Security).
#include "applets/cluster_ipam/config.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>

#include "core/os/fs.hpp"
#include "core/strings.hpp"

namespace cni::cluster_ipam {
namespace {

constexpr std::string_view kTrustedDir = "/etc/cni/";
constexpr std::string_view kDedicatedDir = "/etc/cni/cluster-ipam/";
constexpr const char* kNodeFile = "/etc/cni/cluster-ipam/node";
constexpr const char* kPrefixFile = "/etc/cni/cluster-ipam/prefix";
constexpr const char* kEndpointsFile = "/etc/cni/cluster-ipam/endpoints";
constexpr std::size_t kPemLimit = 256 * 1024;
// The least blockGracePeriod a config may ask (docs/cluster-ipam.md, Configuration): a tenant's
// config could otherwise take a churning node's emptied blocks from under it at once.
constexpr std::int64_t kMinGrace = 30;

// The longest dialTimeout: a tenant's config could otherwise hold a DEL, which the runtime retries,
// for an hour against a silent address.
constexpr std::int64_t kMaxDialMs = 60000;

// dialTimeout: a number of seconds, or a duration string of ms, s or m ("500ms", "5s", "1m").
Status decode_timeout(const json::Value& v, std::int64_t& out, const json::Where& w) {
    auto bad = [&] {
        return fail(code::invalid_config, "cluster-ipam: " + w.path + " must be a positive number of seconds or a duration "
                                          "such as \"500ms\", \"5s\" or \"1m\", at most 1m");
    };
    double ms = 0;
    if (v.IsNumber()) {
        ms = v.GetDouble() * 1000;
    } else if (v.IsString()) {
        std::string_view s(v.GetString(), v.GetStringLength());
        double n = 0;
        auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
        std::string_view unit(p, std::size_t(s.data() + s.size() - p));
        if (ec != std::errc() || !(unit == "ms" || unit == "s" || unit == "m")) return bad();
        ms = unit == "ms" ? n : unit == "s" ? n * 1000 : n * 60000;
    } else {
        return bad();
    }
    if (!(ms >= 1 && ms <= double(kMaxDialMs))) return bad();
    out = std::int64_t(ms);
    return {};
}

constexpr std::array kEtcdKeys{
    key<&EtcdConf::endpoints>("endpoints", "etcd: the members' client URLs, https://host:port (http:// for a test cluster); "
                                           "each must be listed in /etc/cni/cluster-ipam/endpoints when root wrote that file"),
    key<&EtcdConf::ca_file>("caFile", "etcd: the CA bundle the members' certificates chain to; any config (a tenant's too) may name one, but only a file under /etc/cni/ only root writes, and it is only read"),
    key<&EtcdConf::cert_file>("certFile", "etcd: the client certificate, under /etc/cni/ as caFile"),
    key<&EtcdConf::key_file>("keyFile", "etcd: the client key, in /etc/cni/cluster-ipam/ (root-only) or readable by all under /etc/cni/"),
    key<&EtcdConf::prefix>("prefix", "etcd: the prefix of every key, ending in /, under the node's base prefix (/cni-all/, or "
                                     "root's /etc/cni/cluster-ipam/prefix); default /cni-all/ipam/"),
    key_with<&EtcdConf::dial_timeout_ms, decode_timeout>("dialTimeout", "string or number",
                                                         "etcd: how long to wait for a member, as \"5s\", \"500ms\" or seconds; default 5s, at most 1m"),
};

Status decode_etcd(const json::Value& v, EtcdConf& out, const json::Where& w) {
    CNI_TRY(json::expect_object(v, w, "EtcdConfig"));
    return read_keys(v, kEtcdKeys, out, w.in("EtcdConfig"));
}

constexpr std::array kClusterKeys{
    key<&ClusterConf::ranges>("ranges", "[]allocator.RangeSet", "range sets: [[{subnet, rangeStart, rangeEnd, gateway}]], one address from each"),
    key<&ClusterConf::exclude>("exclude", "[]string", "CIDRs never handed out"),
    key<&ClusterConf::block_size>("blockSize", "the prefix length of an IPv4 block a node claims; default 26"),
    key<&ClusterConf::block_size_v6>("blockSizeV6", "the prefix length of an IPv6 block; default 122"),
    key<&ClusterConf::node>("node", "this node's name; may only restate it (default: /etc/cni/cluster-ipam/node, else the host name)"),
    key<&ClusterConf::grace>("blockGracePeriod", "seconds an emptied block stays its node's before it returns to the pool; default 300, at least 30"),
    key_with<&ClusterConf::etcd, decode_etcd>("etcd", "EtcdConfig",
                                              "the store: {endpoints: [URL] (each listed in /etc/cni/cluster-ipam/endpoints when root wrote it), "
                                              "caFile, certFile, keyFile, prefix (default /cni-all/ipam/; under the node's base prefix, "
                                              "/cni-all/ or /etc/cni/cluster-ipam/prefix), dialTimeout (\"5s\", \"500ms\" or seconds; "
                                              "default 5s, at most 1m)}; docs/cluster-ipam.md"),
    key_with<&ClusterConf::routes, decode_routes>("routes", "[]*types.Route", "[{\"dst\": CIDR, \"gw\": IP}], copied into the result"),
};

constexpr auto kClusterKeyDocs = join(docs_of(kClusterKeys), docs_of(ipam::kRangeKeys));

Status check(ClusterConf& c) {
    auto bad = [](std::string what) { return fail(code::invalid_config, "cluster-ipam: " + what); };
    if (c.grace < kMinGrace)
        return bad("ipam.blockGracePeriod " + std::to_string(c.grace) + " is below the least a node allows, " +
                   std::to_string(kMinGrace) + " seconds (docs/cluster-ipam.md, Configuration)");
    if (c.etcd.endpoints.empty()) return bad("ipam.etcd.endpoints is missing: name at least one etcd member");
    for (const auto& e : c.etcd.endpoints)
        if (!e.starts_with("https://") && !e.starts_with("http://"))
            return bad("ipam.etcd.endpoints: \"" + e + "\" is not an http:// or https:// URL");
    if (c.etcd.prefix.empty() || c.etcd.prefix.front() != '/' || c.etcd.prefix.back() != '/')
        return bad("ipam.etcd.prefix \"" + c.etcd.prefix + "\" must start and end with /");
    if (c.etcd.prefix.find("/pools/") != std::string::npos || c.etcd.prefix.find("/handles/") != std::string::npos)
        return bad("ipam.etcd.prefix \"" + c.etcd.prefix + "\" holds /pools/ or /handles/: it would lie inside another prefix's keys");
    std::vector<net::IpNet> exclude;
    for (const auto& e : c.exclude) {
        auto n = net::IpNet::parse(e);
        if (!n) return bad("ipam.exclude: \"" + e + "\" is not a CIDR");
        exclude.push_back(n->masked());
    }
    for (const auto& set : c.pool.ranges) {
        CNI_TRY_ASSIGN(auto pools, geometry(set, int(std::clamp<std::int64_t>(c.block_size, -1, 129)),
                                            int(std::clamp<std::int64_t>(c.block_size_v6, -1, 129)), exclude));
        c.sets.push_back(SetPlan{ipam::str(set), std::move(pools)});
    }
    return {};
}

Result<ClusterConf> parse_text(const Request& req) {
    ClusterConf c;
    CNI_TRY_ASSIGN(c.pool, ipam::read_range_pool(req, [&](const json::Value& ipam, const json::Where& w) -> Result<std::vector<ipam::RangeSet>> {
        CNI_TRY(read_keys(ipam, kClusterKeys, c, w));
        return c.ranges;
    }));
    CNI_TRY(check(c));
    c.digest = network_digest(req.config);
    return c;
}

Result<std::optional<std::string>> read_credential(std::string_view key, const std::string& path) {
    if (path.empty()) return std::optional<std::string>();
    auto refused = [&] {
        return fail(code::invalid_config, "cluster-ipam: ipam.etcd." + std::string(key) + " \"" + path +
                                              "\" is not usable: a network config may name only a regular file under /etc/cni/ "
                                              "that only root may write, in /etc/cni/cluster-ipam/ or readable by all "
                                              "(docs/cluster-ipam.md, Security)");
    };
    if (!path.starts_with(kTrustedDir) || path.find("/../") != std::string::npos) return refused();
    auto text = os::read_trusted_file(path, kPemLimit, !path.starts_with(kDedicatedDir));
    if (!text || !*text) return refused();
    return text;
}

}  // namespace

Result<ClusterConf> parse_conf(const Request& req) { return parse_text(req); }

Result<ClusterConf> parse_operator_file(const std::string& text) {
    CNI_TRY_ASSIGN(auto d, json::parse(text));
    if (!d.IsObject()) return fail(code::invalid_config, "cluster-ipam: the config file is not a JSON object");
    const json::Value* found = nullptr;
    auto consider = [&](const json::Value& plugin) {
        const auto* ipam = plugin.IsObject() ? json::find(plugin, "ipam") : nullptr;
        const auto* type = ipam && ipam->IsObject() ? json::find(*ipam, "type") : nullptr;
        if (!found && type && type->IsString() && std::string_view(type->GetString()) == "cluster-ipam") found = ipam;
    };
    if (const auto* plugins = json::find(d, "plugins"); plugins && plugins->IsArray())
        for (const auto& p : plugins->GetArray()) consider(p);
    consider(d);
    if (const auto* type = json::find(d, "type"); !found && type && type->IsString() && std::string_view(type->GetString()) == "cluster-ipam")
        found = &d;
    if (!found) return fail(code::invalid_config, "cluster-ipam: the config file holds no ipam section of type cluster-ipam");
    Request req;
    req.config = "{\"cniVersion\":\"1.0.0\",\"name\":\"operator\",\"ipam\":" + json::write(*found, json::Style::compact, false) + "}";
    return parse_text(req);
}

Result<NodeStore> node_store() {
    NodeStore n;
    auto bad = [](const char* file, const std::string& what) {
        return fail(code::invalid_config, "cluster-ipam: " + std::string(file) + ": " + what);
    };
    CNI_TRY_ASSIGN(auto prefix, os::read_trusted_file(kPrefixFile, 4096));
    if (prefix && !trim_space(*prefix).empty()) {
        n.base_prefix = std::string(trim_space(*prefix));
        if (n.base_prefix.front() != '/' || n.base_prefix.back() != '/')
            return bad(kPrefixFile, "\"" + n.base_prefix + "\" must start and end with /");
    }
    CNI_TRY_ASSIGN(auto endpoints, os::read_trusted_file(kEndpointsFile, 64 * 1024));
    if (endpoints) {
        n.endpoints.emplace();
        for (auto line : split(*endpoints, '\n')) {
            line = trim_space(line);
            if (line.empty() || line.starts_with('#')) continue;
            if (!line.starts_with("https://") && !line.starts_with("http://"))
                return bad(kEndpointsFile, "\"" + std::string(line) + "\" is not an http:// or https:// URL");
            n.endpoints->emplace_back(line);
        }
    }
    return n;
}

Status check_store(const EtcdConf& e, const NodeStore& n) {
    if (!e.prefix.starts_with(n.base_prefix))
        return fail(code::invalid_config, "cluster-ipam: ipam.etcd.prefix \"" + e.prefix + "\" is not under this node's base prefix \"" +
                                              n.base_prefix + "\" (" + kPrefixFile + ", default /cni-all/; docs/cluster-ipam.md, Security)");
    for (const auto& url : e.endpoints)
        if (n.endpoints && std::ranges::find(*n.endpoints, url) == n.endpoints->end())
            return fail(code::invalid_config, "cluster-ipam: ipam.etcd.endpoints: \"" + url + "\" is not one of this node's etcd endpoints (" +
                                                  kEndpointsFile + "; docs/cluster-ipam.md, Security)");
    return {};
}

Result<EtcdSettings> etcd_settings(const EtcdConf& e) {
    CNI_TRY_ASSIGN(auto n, node_store());
    CNI_TRY(check_store(e, n));
    EtcdSettings s{e.endpoints, e.ca_file, e.cert_file, e.key_file, {}, {}, {}, e.prefix, e.dial_timeout_ms};
    CNI_TRY_ASSIGN(auto ca, read_credential("caFile", e.ca_file));
    CNI_TRY_ASSIGN(auto cert, read_credential("certFile", e.cert_file));
    CNI_TRY_ASSIGN(auto key, read_credential("keyFile", e.key_file));
    s.ca_pem = ca.value_or("");
    s.cert_pem = cert.value_or("");
    s.key_pem = key.value_or("");
    if (s.cert_pem.empty() != s.key_pem.empty())
        return fail(code::invalid_config, "cluster-ipam: ipam.etcd.certFile and keyFile go together: give both or neither");
    return s;
}

Result<std::string> node_name(const std::string& configured) {
    std::string name;
    auto file = os::read_trusted_file(kNodeFile, 256);
    if (file && *file) name = std::string(trim_space(**file));
    if (name.empty()) {
        char host[256] = {};
        if (::gethostname(host, sizeof host - 1) != 0 || !*host) return fail("cluster-ipam: cannot read the host name");
        name = host;
    }
    if (!configured.empty() && configured != name)
        return fail(code::invalid_config, "cluster-ipam: ipam.node \"" + configured + "\" is not this node's name \"" + name +
                                              "\": a network config may only restate it (docs/cluster-ipam.md, Security)");
    return name;
}

constexpr std::array<KeyDoc, kKeyDocCount> kKeyDocTable = kClusterKeyDocs;

}  // namespace cni::cluster_ipam
