// SPDX-License-Identifier: Apache-2.0
// The dhcp IPAM configuration (docs/compatibility.md: dhcp) and what it turns into on the wire:
// `daemonSocketPath`, `request` (extra Parameter Request List entries; any skipDefault drops
// the defaults), `provide` (options sent to the server, a literal `value` or the CNI_ARGS key
// named by `fromArg`), `priority` (route metric). The client applet parses it to fail early
// with a clear error; the daemon parses the same text to build its messages.
#pragma once

#include <string>
#include <vector>

#include "applets/dhcp/message.hpp"
#include "core/cni/config_keys.hpp"
#include "core/result.hpp"
#include "core/strings.hpp"

namespace cni::dhcp {

inline constexpr std::string_view kDefaultSocketPath = "/run/cni/dhcp.sock";

// Which protocols lease the attachment's addresses (the `protocol` key, docs/dhcp.md: DHCPv6).
enum class Protocol { ipv4, ipv6, dual };
inline bool wants_v4(Protocol p) { return p != Protocol::ipv6; }
inline bool wants_v6(Protocol p) { return p != Protocol::ipv4; }
inline std::string_view protocol_name(Protocol p) { return p == Protocol::ipv4 ? "ipv4" : p == Protocol::ipv6 ? "ipv6" : "dual"; }

struct DhcpConf {
    std::string name;  // the network name (part of the lease key)
    std::string network_digest;  // network_digest() of the config: which network of that name
    std::string socket_path{kDefaultSocketPath};
    Bytes request_list;           // option 55
    std::vector<Option> provide;  // sent in DISCOVER/REQUEST; a provided client id replaces ours
    std::int64_t priority = 0;  // a Go int: the metric of the routes (configure_iface checks it)
    Protocol protocol = Protocol::ipv4;
};

// The "request" and "provide" entries as written (Go's main.RequestOption and main.ProvideOption).
struct RequestOption {
    std::string option;
    bool skip_default = false;
};
struct ProvideOption {
    std::string option, value, from_arg;
};
Status decode(const json::Value& v, RequestOption& out, const json::Where& w);
Status decode(const json::Value& v, ProvideOption& out, const json::Where& w);

}  // namespace cni::dhcp

template <>
struct cni::json::GoName<std::vector<cni::dhcp::RequestOption>> {
    static constexpr std::string_view value = "[]main.RequestOption";
};
template <>
struct cni::json::GoName<std::vector<cni::dhcp::ProvideOption>> {
    static constexpr std::string_view value = "[]main.ProvideOption";
};

namespace cni::dhcp {

// The ipam keys as written, which parse_dhcp_conf turns into a DhcpConf.
struct DhcpKeys {
    std::string socket_path;
    std::int64_t priority = 0;
    std::vector<RequestOption> request;
    std::vector<ProvideOption> provide;
    std::string protocol;
};

inline constexpr std::array kDhcpKeys{
    key<&DhcpKeys::socket_path>("daemonSocketPath", "the daemon's socket; default /run/cni/dhcp.sock"),
    key<&DhcpKeys::priority>("priority", "the metric of the routes the lease gives"),
    key<&DhcpKeys::request>("request", "DHCPv4 options to ask for: [{\"option\": a name or code 0-255, \"skipDefault\": bool}]; not with \"ipv6\""),
    key<&DhcpKeys::provide>("provide", "DHCPv4 options to send: [{\"option\", \"value\" or \"fromArg\" (a CNI_ARGS key)}]; not with \"ipv6\""),
    key<&DhcpKeys::protocol>("protocol", "\"ipv4\" (DHCPv4, the default), \"ipv6\" (DHCPv6) or \"dual\" (both, one result)"),
};

// `config` is the plugin's stdin, `cni_args` CNI_ARGS (for fromArg).
Result<DhcpConf> parse_dhcp_conf(std::string_view config, std::string_view cni_args);

// Which network a config describes, among networks of one name (docs/dhcp.md: Networks of one
// name): 32 hex digits of the SHA-512 of its keys, sorted, but those a runtime sets per call
// (cniVersion, prevResult, runtimeConfig, args, cni.dev/...), so an ADD's config and its GC's agree.
std::string network_digest(const json::Value& config);

// A name someone else chose (a network's, a pod namespace's, a lease key) as the daemon's log
// lines and refusals show it: cut past kShownBytes with "...[truncated N bytes]" (docs/dhcp.md,
// Limits), so a name of megabytes costs a short line.
inline constexpr std::size_t kShownBytes = 128;
inline std::string shown(std::string_view name) { return cut_text(name, kShownBytes); }

// An option name of the reference's table, or a decimal code 0-255.
std::optional<std::uint8_t> option_code(std::string_view name);

// A lease's key, "containerID/netName/ifName", whole: the reference cuts it to 254 bytes, so two
// attachments sharing that prefix shared one lease. The client id (option 61, at most 255 bytes)
// is a 0 byte (no hardware type) followed by the key, as the reference sends it, when it fits;
// a longer key sends its first 221 bytes, '#' and 32 hex digits of its SHA-512, so such
// attachments stay apart at the server too.
inline constexpr std::size_t kMaxClientIdText = 254;
std::string lease_key(std::string_view container_id, std::string_view net_name, std::string_view ifname);
Bytes client_id_for(std::string_view key);

}  // namespace cni::dhcp
