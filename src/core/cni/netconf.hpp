// SPDX-License-Identifier: Apache-2.0
// The network configuration every applet receives on stdin (CNI spec "Network configuration"):
// the parsed document plus the common keys of Go types.NetConf (cniVersion, name, type,
// ipam.type, prevResult, cni.dev/valid-attachments; capabilities and dns for the plugins whose
// struct embeds types.NetConf, see load_netconf). Applets read their own keys from `root()`
// with the json helpers. prevResult is decoded with the reference's CNIVersion quirk (1.5).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/cni/cni_result.hpp"
#include "core/cni/json.hpp"
#include "core/net/attachment.hpp"

namespace cni {

struct NetConf {
    json::Document doc;
    std::string cni_version;  // as written; "" when absent
    std::string name;
    std::string type;
    std::string ipam_type;
    std::optional<std::vector<net::Attachment>> valid_attachments;  // GC only; nullopt when absent
    Dns dns;  // the top-level "dns" (load_netconf only)
    // Where the applet's own keys sit, for their type errors: its Go struct, and the wording its
    // reference wraps the one json.Unmarshal in (load_netconf's prefix).
    json::Where where{"NetConf", ""};

    const json::Value& root() const { return doc; }
    const json::Value* member(std::string_view key) const { return json::find(doc, key); }
};

// Parse stdin into a NetConf. `go_type` names the applet's Go struct for type errors.
Result<NetConf> parse_netconf(std::string_view config, std::string_view go_type = "NetConf");

// The top-level struct of host-local and static (Go's `Net`, named `net_go_type` when the whole
// config has the wrong type), which does not embed types.NetConf: only cniVersion, name, ipam
// (an object of `ipam_go_type`, with a string "type") and, for GC, cni.dev/valid-attachments are
// read; "type", "prevResult" and other keys are not looked at, as Go's decoding ignores them.
Result<NetConf> parse_ipam_netconf(std::string_view config, std::string_view net_go_type, std::string_view ipam_go_type);

// The wordings the reference plugins wrap their configuration's json.Unmarshal in.
inline constexpr std::string_view kLoadNetconf = "failed to load netconf: ";            // most plugins
inline constexpr std::string_view kParseNetworkConf = "failed to parse network configuration: ";  // bandwidth, sbr, portmap

// parse_netconf with a plugin's wording: "<prefix><why>", for the common keys here and (through
// `where`) for the applet's own keys. For the plugins whose Go struct embeds types.NetConf, so
// also its "capabilities" (map[string]bool) and "dns" (types.DNS) are checked, and dns decoded.
Result<NetConf> load_netconf(std::string_view config, std::string_view go_type = "NetConf",
                             std::string_view prefix = kLoadNetconf);

// The container MAC as two runtime channels give it: CNI_ARGS "MAC=..." (1.8) and the "mac"
// capability in runtimeConfig (1.6). nullopt when the channel is silent or empty; each applet
// layers them over its own keys in its reference's order. `w` names the plugin's Go struct for
// type errors.
Result<std::optional<std::string>> cni_args_mac(std::string_view cni_args);
Result<std::optional<std::string>> runtime_config_mac(const NetConf& conf, const json::Where& w);
// `config_mac` (the plugin's own key) overridden by CNI_ARGS MAC, then by runtimeConfig mac: the
// order of macvlan, tap and tuning (tuning then lets args.cni.mac win; bridge puts it between).
Result<std::string> layered_mac(std::string_view cni_args, const NetConf& conf, const json::Where& w,
                                std::string config_mac);

// Which cniVersion a prevResult without one of its own (or with "") is read as: the config's, as
// version.ParsePrevResult injects it (most plugins), or none, as sbr's own parser reads it ("" is
// a 0.1.0/0.2.0 result's version only, so at later versions the prevResult is refused).
enum class PrevResultVersion { config_if_missing, as_given };

// The prevResult, if any, decoded for conf.cni_version and converted to the current version.
// Errors carry no prefix; applets wrap them with their reference's wording.
Result<std::optional<CniResult>> parse_prev_result(const NetConf& conf,
                                                   PrevResultVersion missing = PrevResultVersion::config_if_missing);

// The same with a decoding error worded `error_prefix` + the error, as an applet's reference
// words it ("": the error as it is).
Result<std::optional<CniResult>> parse_prev_result(const NetConf& conf, std::string_view error_prefix,
                                                   PrevResultVersion missing = PrevResultVersion::config_if_missing);

// The prevResult a verb needs; without one, an error worded `missing`, and a decoding error
// prefixed by `error_prefix` (each reference plugin words them its own way).
Result<CniResult> require_prev_result(const NetConf& conf, std::string_view missing, std::string_view error_prefix = "",
                                      PrevResultVersion version = PrevResultVersion::config_if_missing);

// Which network a config describes among networks of one name, as text (docs/dhcp.md, Networks
// of one name): its keys sorted, compact, without those a runtime sets per call (cniVersion,
// prevResult, runtimeConfig, args, cni.dev/...), so that an ADD's config and its GC's agree.
// Applets keep a digest of it with what an ADD made (dhcp's leases, cluster-ipam's handles).
std::string network_identity(const json::Value& config);

}  // namespace cni
