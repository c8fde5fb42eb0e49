// SPDX-License-Identifier: Apache-2.0
// What an applet is: a name, the spec versions it accepts, and its verbs (CNI spec "Operations").
// Verbs receive a Context and return values; they never print, exit, read the environment or
// keep globals (docs/design.md, principle 3), which is what lets one applet run another in-process.
// A null verb means "not implemented": the dispatcher answers it the way skel does. An applet
// may also own subcommands (`dhcp daemon`, `vpc-eni node-setup`), which main() runs instead of a
// CNI verb when one follows the applet's name; it gets the remaining arguments and a warn
// callback, and returns the exit code, or an error main() prints on stderr (exit code 1).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/cni/cni_result.hpp"
#include "core/cni/config_keys.hpp"
#include "core/cni/request.hpp"
#include "core/cni/version.hpp"
#include "core/os/netns.hpp"

namespace cni {

enum class AppletKind { main, ipam, meta };

struct Applet;
// The applet of this binary that runs plugin `type`, found in CNI_PATH at `path`, in-process; null
// to exec the file. The top level knows the applet table and its launchers, so the dispatcher
// gives the call this lookup (in_process.hpp) and delegation only asks it (ipam::invoke).
using InProcessLookup = const Applet* (*)(std::string_view type, const std::string& path);

struct Context {
    const Request& req;
    std::function<void(std::string_view)> warn;  // a diagnostic line for stderr
    // CNI_NETNS, opened once by run_verb before the verb runs (its own-namespace check used
    // this same handle), so a path recycled meanwhile cannot switch the namespace under the
    // call; null when there is none or it could not be opened (then opening by path gives the
    // error).
    std::shared_ptr<const os::Netns> netns;
    // A step taken, for the call's log at debug level (core/log/logger.hpp); empty when the call
    // is not logged at that level.
    std::function<void(std::string_view)> debug{};
    // Null: every delegate is exec'd.
    InProcessLookup in_process = nullptr;
    void step(std::string_view what) const {
        if (debug) debug(what);
    }
};

// CNI_NETNS for a verb: a new handle on the namespace run_verb opened, else opened by path.
Result<os::Netns> container_netns(const Context& ctx);
// The same, with nothing when the path does not exist (DEL must succeed then).
Result<std::optional<os::Netns>> container_netns_if_exists(const Context& ctx);

using AddVerb = Result<CniResult> (*)(const Context&);
using Verb = Status (*)(const Context&);

// A subcommand's line for stderr that is not its error (a warning, a daemon's report): main()
// prints it as "<applet> <subcommand>: <line>", so the subcommand itself never prints.
using SubcommandWarn = std::function<void(std::string_view)>;

struct Subcommand {
    std::string_view name;
    Result<int> (*run)(std::span<const std::string> args, const SubcommandWarn& warn) = nullptr;
    std::string_view usage{};  // its arguments, for --help ("[--imds [URL]] FILE"); --help lists those with a doc
    std::string_view doc{};    // what it does, for --help
};

// The keys of a file an applet or its subcommands read (vpc-eni's node file), listed by --help.
struct KeyTable {
    std::string_view title;  // "the node file (node-setup FILE; nodeFile)"
    std::span<const KeyDoc> keys;
};

struct Applet {
    std::string_view name;
    AppletKind kind;
    std::string_view summary;  // one line for --list
    std::span<const KeyDoc> keys;  // its own config keys (config_keys.hpp), listed by --help
    std::string_view help;     // what else --help says: runtime config, behaviour
    VersionList versions;
    AddVerb add = nullptr;
    Verb del = nullptr;
    Verb check = nullptr;
    Verb status = nullptr;
    Verb gc = nullptr;
    std::span<const Subcommand> subcommands{};
    std::span<const KeyTable> files{};
};

}  // namespace cni
