// SPDX-License-Identifier: Apache-2.0
// portmap (docs/compatibility.md: portmap): forwards host ports to the container, chained after a
// main plugin. runtimeConfig.portMappings [{hostPort, containerPort, protocol, hostIP}] apply to
// the first IPv4 and the first IPv6 address of CNI_IFNAME in prevResult. Two backends, the
// drivers of host_ports.hpp, chosen as the reference chooses: iptables (one commit per table in
// the node's variant, no iptables processes) and nftables (one nf_tables transaction); the
// keys are kPortmapKeys. After a mapping is set up or torn down, UDP flows already tracked to
// its host port are forgotten, so they reach the new container at once (on DEL too: beyond the
// reference, which forgets them on ADD only). route_localnet,
// which 127.0.0.1:hostPort needs, is turned on only when some IPv4 mapping is reachable
// through localhost, and then with the guard rule kube-proxy uses. Without mappings, ADD passes
// prevResult through and DEL does nothing, as the reference. A failed ADD removes what it
// added; DEL removes both backends' rules; GC removes the iptables chains of attachments that
// are gone (the nft rules carry only the container ID, not the network, so GC cannot tell
// whose they are, and the reference has no GC for them either).
#include <netinet/in.h>

#include <algorithm>
#include <cctype>

#include "applets/portmap/host_ports.hpp"
#include "core/applet.hpp"
#include "core/cni/netconf.hpp"
#include "core/fw/driver.hpp"
#include "core/nl/conntrack.hpp"
#include "core/nl/link.hpp"
#include "core/nl/route.hpp"
#include "core/os/sysctl.hpp"
#include "core/rollback.hpp"

namespace cni::portmap {
namespace {

struct PortmapConf {
    NetConf net;
    std::vector<PortMapping> mappings;
    bool snat = true;
    bool masq_all = false;
    int mark_bit = 13;
    std::optional<std::string> external_setmark_chain;
    fw::Driver driver = fw::Driver::iptables;  // host_ports().choose, for ADD and CHECK
    Conditions cond4, cond6;    // iptables
    fw::nft::Exprs nft_cond4, nft_cond6;
    // The keys as written that the above are made of.
    std::optional<bool> snat_key;
    std::optional<std::int64_t> mark_bit_key;  // a Go int
    std::optional<std::vector<std::string>> cond4_key, cond6_key;
    std::string backend_name;
    // Why ADD could not set this up (a mapping's protocol or hostIP, a condition): refused by ADD
    // and CHECK, but not by DEL and GC, which do not use them (the Go plugin fails only when it
    // hands them to iptables).
    std::optional<Error> unusable;
};

constexpr std::array kPortmapKeys{
    key<&PortmapConf::snat_key>("snat", "masquerade hairpin and localhost traffic to the container; default true"),
    key<&PortmapConf::masq_all>("masqAll", "masquerade all traffic to the mapped ports"),
    key<&PortmapConf::mark_bit_key>("markMasqBit", "the mark bit for traffic to masquerade, 0..31; default 13"),
    key<&PortmapConf::external_setmark_chain>("externalSetMarkChain", "an existing chain that marks instead (iptables)"),
    key<&PortmapConf::cond4_key>("conditionsV4", "what IPv4 traffic is forwarded: [!] -s/-d/-i/-o, -m addrtype/iprange/mark; "
                                                 "or nft ip saddr/daddr, iifname/oifname"),
    key<&PortmapConf::cond6_key>("conditionsV6", "the same for IPv6"),
    key<&PortmapConf::backend_name>("backend", "iptables or nftables; default: iptables unless only nf_tables is usable"),
};

bool iptables_syntax(const std::vector<std::string>& tokens) {
    return !tokens.empty() && (tokens[0].starts_with("-") || tokens[0] == "!");
}

// The backend, as the reference chooses it: the configured one, or iptables unless the legacy
// nat table is unusable here and nf_tables answers; options of the other backend are an error.
Status choose_backend(PortmapConf& c) {
    const std::string& backend = c.backend_name;
    std::optional<fw::Driver> configured = fw::driver_named(backend);
    if ((!backend.empty() && !configured) || configured == fw::Driver::firewalld)
        return fail("unknown portmap backend \"" + backend + "\"");
    std::vector<std::string> iptables_only, nftables_only;
    if (c.external_setmark_chain) iptables_only.push_back("externalSetMarkChain");
    for (auto& [key, cond] : {std::pair{"conditionsV4", &c.cond4_key}, std::pair{"conditionsV6", &c.cond6_key}})
        if (*cond && !(*cond)->empty()) (iptables_syntax(**cond) ? iptables_only : nftables_only).push_back(key);
    c.driver = host_ports().choose(configured);
    const bool nftables = c.driver == fw::Driver::nftables;
    auto& wrong = nftables ? iptables_only : nftables_only;
    if (!wrong.empty()) {
        std::string keys;
        for (auto& k : wrong) keys += (keys.empty() ? "" : " ") + k;
        return fail(std::string(nftables ? "nftables" : "iptables") + " backend was requested but configuration contains " +
                    (nftables ? "iptables" : "nftables") + "-specific options [" + keys + "]");
    }
    return {};
}

// One runtimeConfig mapping; a port, protocol or hostIP that cannot be set up is noted in `unusable`.
Result<PortMapping> parse_mapping(const json::Value& v, const json::Where& w, std::optional<Error>& unusable) {
    CNI_TRY(json::expect_object(v, w, "main.PortMapEntry"));
    PortMapping m;
    std::int64_t host_port = 0, container_port = 0;  // Go ints
    std::string proto, host_ip;
    json::Where e = w.in("PortMapEntry");
    CNI_TRY(json::field(v, "hostPort", host_port, e));
    CNI_TRY(json::field(v, "containerPort", container_port, e));
    CNI_TRY(json::field(v, "protocol", proto, e));
    CNI_TRY(json::field(v, "hostIP", host_ip, e));
    // The reference refuses ports below 1 for every command; a port above 65535 fails only its
    // ADD (in iptables), so here it fails ADD and CHECK and leaves DEL to clean up. Such a port
    // is kept as 0: nothing reads it then.
    if (container_port <= 0) return fail("Invalid container port number: " + std::to_string(container_port));
    if (host_port <= 0) return fail("Invalid host port number: " + std::to_string(host_port));
    for (auto [port, what] : {std::pair{container_port, "container"}, std::pair{host_port, "host"}})
        if (port > 65535 && !unusable)
            unusable = Error{code::internal, std::string("Invalid ") + what + " port number: " + std::to_string(port), {}};
    m.host_port = host_port <= 65535 ? int(host_port) : 0;
    m.container_port = container_port <= 65535 ? int(container_port) : 0;
    std::transform(proto.begin(), proto.end(), proto.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    if (proto.empty()) proto = "tcp";
    m.proto = proto == "tcp" ? IPPROTO_TCP : proto == "udp" ? IPPROTO_UDP : proto == "sctp" ? IPPROTO_SCTP : 0;
    if (!m.proto && !unusable)
        unusable = Error{code::internal, "invalid protocol \"" + proto + "\" in portMappings: only tcp, udp and sctp are forwarded", {}};
    m.proto_name = proto;
    if (!host_ip.empty()) {
        auto ip = net::IpAddr::parse(host_ip);
        if (!ip && !unusable) unusable = Error{code::internal, "invalid hostIP \"" + host_ip + "\" in portMappings", {}};
        if (ip) {
            m.host_family = ip->is_v4() ? 4 : 6;  // a hostIP of the other family skips the address
            if (!ip->is_unspecified()) m.host_ip = *ip;
        }
    }
    return m;
}

Result<PortmapConf> read_portmap_conf(const Request& req) {
    CNI_TRY_ASSIGN(auto c, load_config(req.config, kPortmapKeys, "PortMapConf", kParseNetworkConf));
    const json::Where& w = c.net.where;
    if (c.snat_key) c.snat = *c.snat_key;
    if (c.mark_bit_key && c.external_setmark_chain) return fail("Cannot specify externalSetMarkChain and markMasqBit");
    if (c.mark_bit_key && (*c.mark_bit_key < 0 || *c.mark_bit_key > 31)) return fail("MasqMarkBit must be between 0 and 31");
    if (c.mark_bit_key) c.mark_bit = int(*c.mark_bit_key);
    CNI_TRY(choose_backend(c));
    auto note = [&c](auto parsed, auto& into) {
        if (parsed) into = std::move(*parsed);
        else if (!c.unusable) c.unusable = std::move(parsed).error();
    };
    if (c.driver == fw::Driver::nftables) {
        if (c.cond4_key) note(nftables_conditions(*c.cond4_key, "conditionsV4"), c.nft_cond4);
        if (c.cond6_key) note(nftables_conditions(*c.cond6_key, "conditionsV6"), c.nft_cond6);
    } else {
        if (c.cond4_key) note(iptables_conditions(*c.cond4_key, "conditionsV4"), c.cond4);
        if (c.cond6_key) note(iptables_conditions(*c.cond6_key, "conditionsV6"), c.cond6);
    }
    CNI_TRY_ASSIGN(auto rc, json::anonymous_struct(c.net.root(), "runtimeConfig", w,
                                                   R"(struct { PortMaps []main.PortMapEntry "json:\"portMappings,omitempty\"" })"));
    if (const auto* pm = rc.object ? json::find(*rc.object, "portMappings") : nullptr; pm && !pm->IsNull()) {
        json::Where wp = rc.inner.at("portMappings");
        if (!pm->IsArray()) return cni::Unexpected(json::type_error(*pm, wp, "[]main.PortMapEntry"));
        for (const auto& e : pm->GetArray()) {
            CNI_TRY_ASSIGN(auto m, parse_mapping(e, wp, c.unusable));
            c.mappings.push_back(std::move(m));
        }
    }
    return c;
}

// Every configuration error carries the reference's "failed to parse config: " prefix.
Result<PortmapConf> parse_portmap_conf(const Request& req) {
    auto c = read_portmap_conf(req);
    if (!c) return fail(c.error().code, "failed to parse config: " + c.error().msg);
    return c;
}

// The configuration for ADD and CHECK, which set up and look for every mapping.
Result<PortmapConf> parse_usable_portmap_conf(const Request& req) {
    CNI_TRY_ASSIGN(auto c, parse_portmap_conf(req));
    if (c.unusable) return fail(c.unusable->code, "failed to parse config: " + c.unusable->msg);
    return c;
}

// The first IPv4 and first IPv6 address of CNI_IFNAME (an address naming no interface counts;
// one naming an interface counts if that is CNI_IFNAME inside a sandbox).
std::vector<net::IpNet> container_addresses(const CniResult& prev, const std::string& ifname) {
    std::optional<net::IpNet> v4, v6;
    for (auto& ip : prev.ips) {
        if (ip.interface) {
            std::int64_t i = *ip.interface;
            if (i >= 0 && i < std::int64_t(prev.interfaces.size()) && (prev.interfaces[i].name != ifname || prev.interfaces[i].sandbox.empty()))
                continue;
        }
        if (ip.address.is_nil()) continue;
        auto& slot = ip.address.ip.is_v4() ? v4 : v6;
        if (!slot) slot = ip.address;
    }
    std::vector<net::IpNet> out;
    if (v4) out.push_back(*v4);
    if (v6) out.push_back(*v6);
    return out;
}

HostPortSpec spec_for(const PortmapConf& c, const Request& r, const net::IpNet& addr) {
    HostPortSpec s;
    s.network = c.net.name;
    s.container_id = r.container_id;
    s.container = addr;
    for (auto& m : c.mappings)
        if (!m.host_family || (m.host_family == 4) == addr.ip.is_v4()) s.mappings.push_back(m);
    s.snat = c.snat;
    s.masq_all = c.masq_all;
    s.mark_bit = c.mark_bit;
    s.external_setmark_chain = c.external_setmark_chain;
    s.conditions = addr.ip.is_v4() ? c.cond4 : c.cond6;
    s.nft_conditions = addr.ip.is_v4() ? c.nft_cond4 : c.nft_cond6;
    return s;
}

// The host link the kernel routes `ip` through (the bridge, or a ptp veth), if any: a route
// lookup, as the reference's RouteGet, so a node's many routes are not listed.
Result<std::optional<std::string>> link_towards(const net::IpAddr& ip) {
    CNI_TRY_ASSIGN(auto s, nl::Socket::open());
    auto oif = nl::route_get_link(s, ip);
    if (!oif) return std::optional<std::string>{};
    CNI_TRY_ASSIGN(auto link, nl::find_link(s, *oif));
    return link ? std::optional<std::string>(link->name) : std::nullopt;
}

// 127.0.0.1:hostPort reaches the container only with route_localnet on the way there (IPv4): the
// link that is turned on for, when some mapping is reachable through localhost; then the rules
// come with the guard (HostPortSpec::localnet_guard).
Result<std::optional<std::string>> localhost_access_link(const HostPortSpec& s) {
    bool via_localhost = std::any_of(s.mappings.begin(), s.mappings.end(), [](const PortMapping& m) {
        return !m.host_ip || m.host_ip->is_loopback();
    });
    if (!s.container.ip.is_v4() || !s.snat || !via_localhost) return std::optional<std::string>{};
    return link_towards(s.container.ip);
}

// The spec DEL and GC go by: the attachment's identity alone.
HostPortSpec attachment_of(const PortmapConf& c, const std::string& container_id) {
    HostPortSpec s;
    s.network = c.net.name;
    s.container_id = container_id;
    return s;
}

// Conntrack forgets the UDP flows to the host ports of `mappings` of IP `family` (4 or 6), so
// that their next datagrams are DNAT'ed anew (to the container just set up, or, after DEL, to
// whoever maps the port next) instead of following an entry to an address that may be gone. A
// failure is only warned about: the mapping itself stands.
void forget_udp_flows(const Context& ctx, int family, const std::vector<PortMapping>& mappings) {
    std::vector<std::uint16_t> udp_ports;
    for (auto& m : mappings)
        if (m.proto == IPPROTO_UDP && m.host_port && (!m.host_family || m.host_family == family))
            udp_ports.push_back(std::uint16_t(m.host_port));
    if (udp_ports.empty()) return;
    if (auto gone = nl::delete_udp_flows_to(family == 4 ? AF_INET : AF_INET6, udp_ports); !gone)
        ctx.warn("portmap: could not forget the UDP flows to the mapped ports: " + gone.error().msg);
}

Result<CniResult> portmap_add(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_usable_portmap_conf(ctx.req));
    const Request& r = ctx.req;
    CNI_TRY_ASSIGN(auto prev, require_prev_result(c.net, "must be called as chained plugin", "failed to parse prevResult: "));
    prev.echo_given_versions = true;  // Go prints the prevResult as it decoded it
    if (c.mappings.empty()) return prev;
    CNI_TRY(require_ip_addresses(prev));
    auto addrs = container_addresses(prev, r.ifname);
    if (addrs.empty()) {
        // Go's portmap then forwards nothing and succeeds, so a pod whose main plugin returns no
        // address (no IPAM, DHCP from inside the pod) still starts; said on stderr here.
        ctx.warn("portmap: prevResult has no address of " + r.ifname + ", no ports forwarded");
        return prev;
    }

    Rollback undo;
    for (auto& addr : addrs) {
        auto spec = spec_for(c, r, addr);
        if (spec.mappings.empty()) continue;
        CNI_TRY_ASSIGN(auto localnet_link, localhost_access_link(spec));
        spec.localnet_guard = localnet_link.has_value();
        if (auto st = host_ports().setup(c.driver, spec, undo); !st) return fail("portmap: " + st.error().msg);
        forget_udp_flows(ctx, addr.ip.is_v4() ? 4 : 6, spec.mappings);
        if (localnet_link)
            if (auto st = os::sysctl_set("net/ipv4/conf/" + *localnet_link + "/route_localnet", "1"); !st)
                return fail("unable to enable route_localnet: " + st.error().msg);
    }
    undo.dismiss();
    return prev;
}

Status portmap_del(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_portmap_conf(ctx.req));
    if (c.mappings.empty()) return {};
    if (auto st = host_ports().teardown_all(attachment_of(c, ctx.req.container_id)); !st)
        return fail("portmap: " + st.error().msg);
    for (int family : {4, 6}) forget_udp_flows(ctx, family, c.mappings);
    return {};
}

Status portmap_check(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_usable_portmap_conf(ctx.req));
    const Request& r = ctx.req;
    CNI_TRY_ASSIGN(auto prev, require_prev_result(c.net, "must be called as chained plugin", "failed to parse prevResult: "));
    if (c.mappings.empty()) return {};
    CNI_TRY(require_ip_addresses(prev));
    for (auto& addr : container_addresses(prev, r.ifname)) {
        auto spec = spec_for(c, r, addr);
        if (!spec.mappings.empty()) CNI_TRY(host_ports().check(c.driver, spec));
    }
    return {};
}

// Code 50 when the backend ADD would use cannot work here.
Status portmap_status(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_portmap_conf(ctx.req));
    return fw::driver_status(c.driver);
}

Status portmap_gc(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_portmap_conf(ctx.req));
    if (!c.net.valid_attachments) return {};
    return host_ports().gc_all(c.net.name, *c.net.valid_attachments);
}

constexpr auto kPortmapKeyDocs = docs_of(kPortmapKeys);

}  // namespace

extern const Applet portmap_applet{
    .name = "portmap",
    .kind = AppletKind::meta,
    .summary = "forward host ports to the container (chained; iptables, or nftables)",
    .keys = kPortmapKeyDocs,
    .help = "runtimeConfig portMappings [{hostPort, containerPort, protocol, hostIP}]. Needs prevResult.",
    .versions = kAllVersions,
    .add = portmap_add,
    .del = portmap_del,
    .check = portmap_check,
    .status = portmap_status,
    .gc = portmap_gc,
};

}  // namespace cni::portmap
