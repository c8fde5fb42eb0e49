// SPDX-License-Identifier: Apache-2.0
// cni-all entry point: busybox-style dispatch on basename(argv[0]) (an applet's name, which its
// launcher passes), or `cni-all <applet>`, plus the multi-call commands --list, --help,
// --version and install. Everything CNI happens in run_cni (dispatch.cpp).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/cni/version.hpp"
#include "core/libnl/netfilter_close.hpp"
#include "core/nl/detached_delete.hpp"
#include "dispatch.hpp"
#include "exec_command.hpp"
#include "install.hpp"
#include "registry.hpp"

extern char** environ;

namespace {

std::string_view kind_name(cni::AppletKind k) {
    switch (k) {
    case cni::AppletKind::main: return "main";
    case cni::AppletKind::ipam: return "ipam";
    case cni::AppletKind::meta: return "meta";
    }
    return "";
}

void print_list(std::FILE* f) {
    for (const cni::Applet* a : cni::all_applets())
        std::fprintf(f, "%-12.*s %-5.*s %.*s\n", int(a->name.size()), a->name.data(), int(kind_name(a->kind).size()),
                     kind_name(a->kind).data(), int(a->summary.size()), a->summary.data());
}

void print_usage(std::FILE* f) {
    std::fputs("usage: cni-all <applet>          run an applet as a CNI plugin (CNI_COMMAND etc. in the environment)\n"
               "       <applet>                  the same through the applet's launcher (cni-all install) or a link\n"
               "       cni-all --list            list the applets\n"
               "       cni-all <applet> --help   describe an applet's configuration\n"
               "       cni-all exec add|check|del NETWORK NETNS [options]\n"
               "       cni-all exec gc|status NETWORK [options]\n"
               "                                 run a network from /etc/cni/net.d as a container runtime does\n"
               "       cni-all dhcp daemon [flags]\n"
               "                                 run the DHCP lease daemon the dhcp IPAM talks to\n"
               "       cni-all --version\n"
               "       cni-all install DIR [--applets a,b] [--skip x,y] [--force]\n"
               "                                 install cni-all and one launcher per applet into DIR\n"
               "                                 (cni-all install --help says more)\n",
               f);
}

// `text` wrapped at 100 columns, keeping its own line breaks.
void print_wrapped(std::string_view text) {
    while (!text.empty()) {
        auto line = text.substr(0, text.find('\n'));
        text.remove_prefix(std::min(text.size(), line.size() + 1));
        while (line.size() > 100) {
            auto cut = line.rfind(' ', 100);
            if (cut == std::string_view::npos || cut == 0) break;
            std::printf("%.*s\n", int(cut), line.data());
            line.remove_prefix(cut + 1);
        }
        std::printf("%.*s\n", int(line.size()), line.data());
    }
}

// A key table: "<title>:" and a row per key, its columns aligned.
void print_keys(std::string_view title, std::span<const cni::KeyDoc> keys) {
    std::printf("\n%.*s:\n", int(title.size()), title.data());
    std::size_t key_width = 0, type_width = 0;
    for (const auto& k : keys) {
        key_width = std::max(key_width, k.key.size());
        type_width = std::max(type_width, k.type.size());
    }
    for (const auto& k : keys)
        std::printf("  %-*.*s  %-*.*s  %.*s\n", int(key_width), int(k.key.size()), k.key.data(), int(type_width),
                    int(k.type.size()), k.type.data(), int(k.doc.size()), k.doc.data());
}

// "Commands:", each documented subcommand's line and its description, indented.
void print_commands(const cni::Applet& a) {
    if (std::ranges::none_of(a.subcommands, [](const cni::Subcommand& c) { return !c.doc.empty(); })) return;
    std::printf("\nCommands:\n");
    for (const auto& c : a.subcommands) {
        if (c.doc.empty()) continue;
        std::printf("  cni-all %.*s %.*s %.*s\n", int(a.name.size()), a.name.data(), int(c.name.size()), c.name.data(),
                    int(c.usage.size()), c.usage.data());
        std::string_view text = c.doc;
        while (!text.empty()) {  // wrapped at 100 columns, 6 of them the indent
            auto line = text.size() <= 94 ? text : text.substr(0, std::max<std::size_t>(text.rfind(' ', 94), 1));
            std::printf("      %.*s\n", int(line.size()), line.data());
            text.remove_prefix(std::min(text.size(), line.size() + 1));
        }
    }
}

void print_applet_help(const cni::Applet& a) {
    std::printf("%.*s (%.*s): %.*s\n", int(a.name.size()), a.name.data(), int(kind_name(a.kind).size()),
                kind_name(a.kind).data(), int(a.summary.size()), a.summary.data());
    std::string versions;
    for (auto v : a.versions) versions += (versions.empty() ? "" : ", ") + std::string(v);
    std::printf("CNI versions: %s\n", versions.c_str());
    // logLevel, the call's log level (docs/logging.md), is read from every network's config.
    if (!a.keys.empty())
        print_keys(a.kind == cni::AppletKind::ipam ? "Keys of the \"ipam\" object (besides type)"
                                                   : "Keys (besides cniVersion, name, type, ipam, dns, runtimeConfig, prevResult, logLevel)",
                   a.keys);
    print_commands(a);
    for (const auto& f : a.files) print_keys("Keys of " + std::string(f.title), f.keys);
    if (!a.help.empty()) {
        std::printf("\n");
        print_wrapped(a.help);
    }
}

int unknown_applet(std::string_view name) {
    std::fprintf(stderr, "cni-all: unknown applet '%.*s'; the applets are:\n", int(name.size()), name.data());
    print_list(stderr);
    return 2;
}

// `<applet> <subcommand> args...` (dhcp daemon, vpc-eni node-setup); nullopt when argv is not
// that. An error is printed on stderr, and the exit code is then 1.
std::optional<int> run_subcommand(const cni::Applet& a, int argc, char** argv, int at) {
    if (at >= argc) return std::nullopt;
    for (const auto& sub : a.subcommands) {
        if (sub.name != argv[at]) continue;
        std::vector<std::string> args(argv + at + 1, argv + argc);
        const std::string who = std::string(a.name) + " " + argv[at];
        auto rc = sub.run(args, [&](std::string_view line) {
            std::fprintf(stderr, "%s: %.*s\n", who.c_str(), int(line.size()), line.data());
        });
        if (rc) return *rc;
        std::fprintf(stderr, "%s: %s\n", who.c_str(), rc.error().msg.c_str());
        return 1;
    }
    return std::nullopt;
}

int run_applet(const cni::Applet& a) {
    // A plugin call leaves the kernel's waits to children: its netfilter sockets' closes
    // (core/libnl/netfilter_close.hpp), and its link deletions, which answer when the link is gone
    // rather than when the kernel has freed it (core/nl/detached_delete.hpp). Subcommands (the
    // dhcp daemon) do their own waiting.
    cni::libnl::LateNetfilterClose late_close;
    cni::nl::DetachedLinkDeletes detached_deletes;
    std::vector<std::string> env;
    for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
    return cni::run_cni(a, env, STDIN_FILENO, stdout, stderr);
}

}  // namespace

int main(int argc, char** argv) {
    std::string_view self = argc > 0 ? argv[0] : "cni-all";
    if (auto slash = self.rfind('/'); slash != std::string_view::npos) self.remove_prefix(slash + 1);

    if (const cni::Applet* a = cni::find_applet(self)) {
        if (argc > 1 && std::strcmp(argv[1], "--help") == 0) {
            print_applet_help(*a);
            return 0;
        }
        if (auto rc = run_subcommand(*a, argc, argv, 1)) return *rc;
        return run_applet(*a);
    }
    // Anything not called cni-all* is the launcher or a link of an applet this build does not have.
    if (!self.starts_with("cni-all")) return unknown_applet(self);
    if (argc < 2) {
        print_usage(stderr);
        return 2;
    }
    std::string_view cmd = argv[1];
    if (cmd == "--list") {
        print_list(stdout);
        return 0;
    }
    if (cmd == "--help" || cmd == "-h") {
        print_usage(stdout);
        std::puts("\napplets:");
        print_list(stdout);
        return 0;
    }
    if (cmd == "--version") {
        const std::string text = "cni-all " + std::string(cni::cni_all_version()) + "\nfollows " +
                                 std::string(cni::kReferenceRelease) + "; CNI spec " + std::string(cni::kCurrentVersion) +
                                 " (configs and results " + std::string(cni::kAllVersions[0]) + " to " +
                                 std::string(std::end(cni::kAllVersions)[-1]) + ")\n";
        std::fputs(text.c_str(), stdout);
        return 0;
    }
    if (cmd == "exec") {
        std::vector<std::string> args(argv + 2, argv + argc);
        std::vector<std::string> env;
        for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
        return cni::exec_command(args, env, stdout, stderr);
    }
    if (cmd == "install") {
        std::vector<std::string> args(argv + 2, argv + argc);
        auto opts = cni::parse_install_args(args);
        if (!opts || opts->help) {
            if (!opts) std::fprintf(stderr, "cni-all install: %s\n", opts.error().msg.c_str());
            std::fputs(cni::kInstallUsage, opts ? stdout : stderr);
            return opts ? 0 : 2;
        }
        return cni::install_applets(*opts, stdout, stderr);
    }
    const cni::Applet* a = cni::find_applet(cmd);
    if (!a) return unknown_applet(cmd);
    if (argc > 2 && std::strcmp(argv[2], "--help") == 0) {
        print_applet_help(*a);
        return 0;
    }
    if (auto rc = run_subcommand(*a, argc, argv, 2)) return *rc;
    return run_applet(*a);
}
