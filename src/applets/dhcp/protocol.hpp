// SPDX-License-Identifier: Apache-2.0
// The dhcp applet <-> daemon protocol. Both ends are cni-all, so it is ours and small (the
// reference speaks Go net/rpc + gob, which only Go can read; mixing our applet with the Go
// daemon or the reverse is therefore not supported, see docs/dhcp.md).
//
// One request per connection on the unix socket: the client writes ONE JSON object and shuts
// down its write side; the daemon answers with ONE JSON object and closes.
//   request:  {"op": "add"|"del"|"check"|"gc"|"status", "containerID", "netns", "ifName",
//              "args", "path", "config"}   (strings; config is the plugin's stdin verbatim)
//   response: {"result": "<CNI 1.1.0 result JSON>"}  for add
//             {}                                    for the other ops when they succeed
//             {"error": {"code": N, "msg": "...", "details": "..."}}
// Requests are bounded to 16 MiB like a plugin's stdin.
#pragma once

#include <optional>
#include <string>

#include "core/cni/cni_result.hpp"

namespace cni::dhcp {

enum class Op { add, del, check, gc, status };

struct DaemonRequest {
    Op op = Op::add;
    std::string container_id, netns, ifname, args, path, config;
};

std::string encode_request(const DaemonRequest& r);
Result<DaemonRequest> decode_request(std::string_view text);

using DaemonReply = Result<std::optional<CniResult>>;
std::string encode_reply(const DaemonReply& r);
DaemonReply decode_reply(std::string_view text);

// The client side: one request over `socket_path`. A daemon that cannot be reached is the
// reference's "error dialing DHCP daemon: ..." with code `unreachable_code`.
DaemonReply call_daemon(const std::string& socket_path, const DaemonRequest& r, int unreachable_code);

}  // namespace cni::dhcp
