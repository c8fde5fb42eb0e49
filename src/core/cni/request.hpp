// SPDX-License-Identifier: Apache-2.0
// One plugin invocation as the CNI spec defines it ("Parameters"): the CNI_* environment and the
// configuration on stdin, read and validated exactly as the reference skel does
// (docs/compatibility.md: protocol): required variables per command,
// containerID/ifname/network-name rules and error texts, stdin bounded to 16 MiB. The whole
// environment is kept so an exec'd delegate inherits it.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace cni {

enum class Command { add, del, check, status, gc, version, unknown };

std::optional<Command> command_from_name(std::string_view s);
std::string_view command_name(Command c);

inline constexpr std::size_t kMaxConfigBytes = 16u << 20;

struct Request {
    Command command = Command::unknown;
    std::string command_text;  // CNI_COMMAND as given
    std::string container_id;
    std::string netns;
    std::string ifname;
    std::string args;
    std::string path;
    std::string netns_override;
    std::string config;                // stdin
    std::vector<std::string> environ;  // KEY=VALUE, as inherited

    std::string getenv(std::string_view key) const;
    // The same request for another command (delegation): CNI_COMMAND replaced in environ too.
    Request with_command(Command c) const;
};


// Reads a bounded stdin; returns false on a read error.
using StdinReader = std::function<Result<std::string>(std::size_t limit)>;

// What went wrong before any command ran; `about` is true when CNI_COMMAND is unset (the
// dispatcher then prints the plugin's about text and exits 0, like skel).
struct RequestError {
    Error error;
    bool about = false;
};

cni::Expected<Request, RequestError> read_request(std::span<const std::string> environ, const StdinReader& stdin_reader);

// ^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$: a container ID or a network name as skel allows them; never "."
// or "..", never a "/", so also one plain folder name.
bool valid_id(std::string_view s);

// The validations, exposed for unit tests.
Status validate_container_id(std::string_view id);
Status validate_ifname(std::string_view name);
Status validate_network_name(std::string_view config);  // skel validateConfig on raw stdin

}  // namespace cni
