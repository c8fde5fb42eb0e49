// SPDX-License-Identifier: Apache-2.0
// `cni-all exec` (see exec_command.hpp).
#include "exec_command.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include "core/cni/request.hpp"
#include "core/fw/sha512.hpp"
#include "core/os/fs.hpp"
#include "core/os/netns.hpp"
#include "core/os/self_exe.hpp"
#include "core/runtime/runtime.hpp"
#include "core/strings.hpp"
#include "in_process.hpp"

namespace cni {
namespace {

constexpr std::string_view kUsage =
    "usage: cni-all exec add|check|del NETWORK NETNS [-i|--ifname eth0] [--container-id ID] [--args K=V;...]\n"
    "                    [--capability-args JSON] [--conf-dir DIR] [--cache-dir DIR] [--cni-path PATH]\n"
    "       cni-all exec gc|status NETWORK [NETNS] [--conf-dir DIR] [--cache-dir DIR] [--cni-path PATH]\n"
    "Runs the network NETWORK from the conf dir as a container runtime does (libcni), as cnitool does.\n"
    "Options take their value as the next argument or after '=' (--ifname=eth1). The environment\n"
    "gives the defaults, as for cnitool: NETCONFPATH (default /etc/cni/net.d), CNI_PATH (default\n"
    "this binary's directory), CNI_IFNAME (default eth0), CNI_ARGS, CAP_ARGS. The container id\n"
    "defaults to cnitool's (cnitool- and 20 hex digits of the SHA-512 of NETNS).\n";

struct Invocation {
    Command command = Command::unknown;
    std::string network, netns, container_id;
    std::string conf_dir = "/etc/cni/net.d";
    runtime::RuntimeConf rt;
};

Result<std::vector<std::pair<std::string, std::string>>> parse_args(std::string_view text) {
    std::vector<std::pair<std::string, std::string>> out;
    for (auto pair : split(text, ';')) {
        if (pair.empty()) continue;
        auto eq = pair.find('=');
        if (eq == std::string_view::npos) return fail(code::invalid_config, "invalid CNI_ARGS pair \"" + std::string(pair) + "\"");
        out.emplace_back(std::string(pair.substr(0, eq)), std::string(pair.substr(eq + 1)));
    }
    return out;
}

Result<Invocation> parse(std::span<const std::string> args, std::span<const std::string> environ) {
    Invocation inv;
    if (args.empty()) return fail(code::invalid_config, "missing command");
    static const std::map<std::string, Command> kCommands = {
        {"add", Command::add}, {"check", Command::check}, {"del", Command::del}, {"gc", Command::gc}, {"status", Command::status}};
    auto it = kCommands.find(args[0]);
    if (it == kCommands.end()) return fail(code::invalid_config, "unknown command \"" + args[0] + "\"");
    inv.command = it->second;
    bool per_attachment = inv.command == Command::add || inv.command == Command::check || inv.command == Command::del;

    if (auto v = env_value(environ, "NETCONFPATH"); !v.empty()) inv.conf_dir = v;
    inv.rt.cni_path = env_value(environ, "CNI_PATH");
    if (inv.rt.cni_path.empty()) inv.rt.cni_path = os::self_exe_dir();
    if (auto v = env_value(environ, "CNI_IFNAME"); !v.empty()) inv.rt.ifname = v;
    inv.rt.capability_args = env_value(environ, "CAP_ARGS");
    std::string cni_args = env_value(environ, "CNI_ARGS");
    for (const auto& kv : environ) inv.rt.environ.push_back(kv);
    inv.rt.in_process = in_process_applet;

    std::vector<std::string> positional;
    for (std::size_t i = 1; i < args.size(); ++i) {
        std::string a = args[i];
        if (!a.starts_with("-") || a == "-") {
            positional.push_back(a);
            continue;
        }
        std::string v;
        if (auto eq = a.find('='); a.starts_with("--") && eq != std::string::npos) {
            v = a.substr(eq + 1);
            a.resize(eq);
        } else if (i + 1 < args.size()) {
            v = args[++i];
        } else {
            return fail(code::invalid_config, "option " + a + " needs a value");
        }
        if (a == "--ifname" || a == "-i") inv.rt.ifname = v;
        else if (a == "--container-id") inv.container_id = v;
        else if (a == "--args") cni_args = v;
        else if (a == "--capability-args") inv.rt.capability_args = v;
        else if (a == "--conf-dir") inv.conf_dir = v;
        else if (a == "--cache-dir") inv.rt.cache_dir = v;
        else if (a == "--cni-path") inv.rt.cni_path = v;
        else return fail(code::invalid_config, "unknown option " + a);
    }
    // add, check and del take NETWORK NETNS; gc and status NETWORK and, as cnitool, an unused NETNS.
    const bool counted = per_attachment ? positional.size() == 2 : positional.size() == 1 || positional.size() == 2;
    if (!counted) return fail(code::invalid_config, "wrong number of arguments");
    inv.network = positional[0];
    if (positional.size() == 2) inv.netns = os::absolute_path(positional[1]);  // as cnitool does
    CNI_TRY_ASSIGN(inv.rt.args, parse_args(cni_args));
    if (!inv.rt.capability_args.empty()) {
        auto caps = json::parse(inv.rt.capability_args);
        if (!caps || !caps->IsObject()) return fail(code::invalid_config, "capability args are not a JSON object: " + inv.rt.capability_args);
    }
    inv.rt.netns = inv.netns;
    // cnitool's container id, so both tools address the same attachment.
    inv.rt.container_id = !inv.container_id.empty() ? inv.container_id : "cnitool-" + fw::sha512_hex(inv.netns).substr(0, 20);
    return inv;
}

// gc: the cached attachments whose namespace still exists are the valid ones.
std::vector<net::Attachment> live_attachments(const Invocation& inv) {
    std::vector<net::Attachment> valid;
    for (auto& c : runtime::cached_attachments(inv.rt.cache_dir, inv.network)) {
        auto ns = c.netns.empty() ? Result<std::optional<os::Netns>>(std::optional<os::Netns>{}) : os::Netns::open_if_exists(c.netns);
        if (ns && *ns) valid.push_back(net::Attachment{c.container_id, c.ifname});
    }
    return valid;
}

Status run(const Invocation& inv, std::FILE* out, const runtime::Warn& warn) {
    CNI_TRY_ASSIGN(auto list, runtime::load_network(inv.conf_dir, inv.network));
    switch (inv.command) {
    case Command::add: {
        CNI_TRY_ASSIGN(auto result, runtime::add_network_list(list, inv.rt, warn));
        CNI_TRY_ASSIGN(auto text, runtime::list_result_text(list, result));
        std::fprintf(out, "%s\n", text.c_str());
        return {};
    }
    case Command::check: return runtime::check_network_list(list, inv.rt, warn);
    case Command::del: return runtime::del_network_list(list, inv.rt, warn);
    case Command::gc: return runtime::gc_network_list(list, inv.rt, live_attachments(inv), warn);
    case Command::status: return runtime::status_network_list(list, inv.rt, warn);
    default: return fail("unsupported command");
    }
}

}  // namespace

int exec_command(std::span<const std::string> args, std::span<const std::string> environ, std::FILE* out, std::FILE* err) {
    if (std::ranges::any_of(args, [](const std::string& a) { return a == "-h" || a == "--help"; })) {
        std::fwrite(kUsage.data(), 1, kUsage.size(), out);
        return 0;
    }
    auto inv = parse(args, environ);
    if (!inv) {
        std::fprintf(err, "cni-all exec: %s\n%.*s", inv.error().msg.c_str(), int(kUsage.size()), kUsage.data());
        return 2;
    }
    auto warn = [&](std::string_view line) { std::fprintf(err, "%.*s\n", int(line.size()), line.data()); };
    if (auto st = run(*inv, out, warn); !st) {
        std::fprintf(err, "%s\n", encode_error(st.error()).c_str());
        return 1;
    }
    return 0;
}

}  // namespace cni
