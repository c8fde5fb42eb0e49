// SPDX-License-Identifier: Apache-2.0
// What an applet is: a name, the spec versions it accepts, and its verbs (CNI spec "Operations").
// Verbs receive a Context and return values; they never print, exit, read the environment or
// keep globals (design principle 3), which is what lets one applet run another in-process.
// A null verb means "not implemented": the dispatcher answers it the way skel does. An applet
// may also own one long-running subcommand (`dhcp daemon`), which main() runs instead of a CNI
// verb when it follows the applet's name; it gets the remaining arguments and returns the exit
// code.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "core/cni/cni_result.hpp"
#include "core/cni/request.hpp"
#include "core/cni/version.hpp"

namespace cni {

enum class AppletKind { main, ipam, meta };

struct Context {
    const Request& req;
    std::function<void(std::string_view)> warn;  // a diagnostic line for stderr
};

using AddVerb = Result<CniResult> (*)(const Context&);
using Verb = Status (*)(const Context&);

struct Subcommand {
    std::string_view name;
    int (*run)(std::span<const std::string> args) = nullptr;
};

struct Applet {
    std::string_view name;
    AppletKind kind;
    std::string_view summary;  // one line for --list
    std::string_view help;     // keys and behaviour, for --help
    VersionList versions;
    AddVerb add = nullptr;
    Verb del = nullptr;
    Verb check = nullptr;
    Verb status = nullptr;
    Verb gc = nullptr;
    Subcommand subcommand{};
};

}  // namespace cni
