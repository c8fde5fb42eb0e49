// SPDX-License-Identifier: Apache-2.0
// `cni-all vpc-eni node-setup --imds [URL] [--imds-v1] [--interval SECONDS] FILE` (docs/vpc-eni.md,
// The node from the instance metadata service): the node file's ENIs, primary interface and VPC
// CIDRs learned from the metadata service (imds.hpp), each ENI's interface the link with its
// MAC, the file's other keys kept as root wrote them. Before the node changes, the new file is
// known to fit (kNodeFileLimit) and is written in full under a temporary name in its folder
// (made 0755 when missing, reached through no symbolic link); the node is then set up as it
// says, and only then the file renamed into place (keeping its mode), so a concurrent ADD reads
// the old file or the new one. When the setup fails partway or the rename fails, what the setup
// changed is undone (setup_node_or_undo), so a failed round leaves the file and the node as they
// were (the file is synced before its rename, so a crash leaves the old file or the new one, and
// a temporary that a killed round left is removed by the next). With --interval it runs again
// every so many seconds, reporting a failed round and carrying on.
#include <sys/stat.h>

#include <algorithm>
#include <thread>

#include "applets/vpc_eni/imds.hpp"
#include "applets/vpc_eni/node.hpp"
#include "applets/vpc_eni/node_file.hpp"
#include "core/nl/link.hpp"
#include "core/os/fs.hpp"

namespace cni::vpc_eni {
namespace {

struct Options {
    ImdsOptions imds;
    std::string file;
    std::string name;  // the file's name in its folder
    std::optional<std::chrono::seconds> interval;
};

cni::Unexpected<Error> usage(std::string_view why) {
    return fail(std::string(why) + "; usage: cni-all vpc-eni node-setup --imds [URL] [--imds-v1] [--interval SECONDS] FILE");
}

Result<Options> parse_options(std::span<const std::string> args) {
    Options o;
    std::optional<std::string> url;
    bool imds = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--imds" || a.starts_with("--imds=")) {
            imds = true;
            if (a.starts_with("--imds=")) url = a.substr(7);
            else if (i + 1 < args.size() && args[i + 1].find("://") != std::string::npos) url = args[++i];
        } else if (a == "--imds-v1") {
            o.imds.allow_v1 = true;
        } else if (a == "--interval" || a.starts_with("--interval=")) {
            std::string v = a.starts_with("--interval=") ? a.substr(11) : (i + 1 < args.size() ? args[++i] : "");
            if (v.empty() || v.size() > 5 || v.find_first_not_of("0123456789") != std::string::npos || std::stoi(v) < 1 ||
                std::stoi(v) > 86400)
                return usage("--interval \"" + v + "\" is not a number of seconds within 1..86400");
            o.interval = std::chrono::seconds(std::stoi(v));
        } else if (a.starts_with("-")) {
            return usage("unknown option \"" + a + "\"");
        } else if (!o.file.empty()) {
            return usage("one node file, not \"" + o.file + "\" and \"" + a + "\"");
        } else {
            o.file = a;
        }
    }
    if (!imds) return usage("--imds-v1 and --interval go with --imds");
    if (o.file.empty()) return usage("no node file");
    // Its name in its folder, which the new file is renamed to: checked before the node changes.
    o.name = o.file.substr(o.file.rfind('/') + 1);
    if (o.name.empty() || o.name == "." || o.name == "..")
        return fail(code::invalid_config, "node file \"" + o.file + "\" names a folder, not a file in one");
    CNI_TRY_ASSIGN(o.imds.endpoint, parse_imds_url(url.value_or(std::string(kDefaultImdsUrl))));
    return o;
}

// `settings` with the ENIs, primary interface and VPC CIDRs of `m`.
Result<NodeFile> learned_node(const InstanceMetadata& m, NodeFile settings, const nl::Socket& sock) {
    settings.enis.clear();
    settings.vpc_cidrs.clear();
    for (auto& me : m.enis) {
        CNI_TRY_ASSIGN(auto link, nl::find_link_by_mac(sock, me.mac));
        if (!link)
            return fail("ENI " + me.id + " (device number " + std::to_string(me.device_number) + ", MAC " + me.mac +
                        "): no link on the node has its MAC");
        Eni e;
        e.interface = link->name;
        e.device_number = me.device_number;
        e.subnet = me.subnet;
        e.primary_ip = me.addresses.front();
        e.secondary_ips.assign(me.addresses.begin() + 1, me.addresses.end());
        e.ipv4_prefixes = me.prefixes;
        if (me.mac == m.primary_mac) settings.primary_interface = link->name;
        for (auto& c : me.vpc_cidrs)
            if (std::ranges::find(settings.vpc_cidrs, c) == settings.vpc_cidrs.end()) settings.vpc_cidrs.push_back(c);
        settings.enis.push_back(std::move(e));
    }
    if (auto st = validate_node_file(settings); !st)
        return fail("the node as the metadata service describes it: " + st.error().msg);
    return settings;
}

// The mode the node file keeps: the one it has (but never writable by others than root), else
// 0644, readable by all as a node file outside /etc/cni/vpc-eni/ must be (docs/vpc-eni.md).
mode_t mode_of(const os::Dir& folder, const std::string& name) {
    auto st = folder.stat(name);
    return st && S_ISREG(st->st_mode) ? st->st_mode & 0755 : 0644;
}

// The node file's folder, each missing folder on its way made 0755 (/etc/cni/vpc-eni/ on a fresh
// node), every one reached from "/" through no symbolic link and changeable by root alone
// (os::Dir::open_trusted).
Result<os::Dir> node_file_folder(const std::string& file) {
    const std::string absolute = os::absolute_path(file);
    const std::string folder = absolute.substr(0, absolute.rfind('/'));
    return os::Dir::make_trusted(folder.empty() ? "/" : folder, 0755, 0755);
}

// The temporaries of `name` in `folder` (".<name>.<random>.tmp") that a round killed between
// writing and renaming one left: removed under node.lock, which every round writes its own under.
void remove_temporaries(const os::Dir& folder, const std::string& name) {
    const std::string prefix = "." + name + ".";
    for (auto& entry : folder.names())
        if (entry.starts_with(prefix) && entry.ends_with(".tmp") && entry.size() > prefix.size() + 4) folder.remove(entry);
}

// The settings a round keeps (the keys it does not learn): the node file's; when it is missing,
// those of the node file the node was set up by, which the default stateDir keeps, with a
// warning naming it; the defaults on a node no setup recorded there.
Result<NodeFile> settings_of(const Options& o, const SubcommandWarn& warn) {
    CNI_TRY_ASSIGN(auto settings, load_node_settings(o.file));
    if (settings) return std::move(*settings);
    const std::string state_dir = NodeFile{}.state_dir;
    auto kept = kept_node_file(state_dir);
    if (!kept)
        return fail(kept.error().code, "node file " + o.file + " does not exist, and its settings cannot be taken from " + state_dir +
                                           ": " + kept.error().msg);
    if (!*kept) return NodeFile{};
    warn("node file " + o.file + " does not exist: its settings taken from " + state_dir + "/node-applied.json, the node file the node was set up by");
    return std::move(**kept);
}

// One round: true when the node file changed.
Result<bool> learn_and_set_up(const Options& o, const SubcommandWarn& warn) {
    CNI_TRY_ASSIGN(auto base, settings_of(o, warn));
    base.path = o.file;
    CNI_TRY_ASSIGN(auto metadata, read_instance_metadata(o.imds));
    CNI_TRY_ASSIGN(auto sock, nl::Socket::open());
    CNI_TRY_ASSIGN(auto node, learned_node(metadata, std::move(base), sock));
    const std::string text = encode_node_file(node);
    if (text.size() > kNodeFileLimit)
        return fail("the node as the metadata service describes it: its node file would take " + std::to_string(text.size()) +
                    " bytes, more than the " + std::to_string(kNodeFileLimit >> 20) + " MiB a node file may hold (" +
                    std::to_string(node.address_count()) + " addresses on " + std::to_string(node.enis.size()) + " ENIs)");
    CNI_TRY_ASSIGN(auto lock, lock_node(node.state_dir));
    CNI_TRY_ASSIGN(auto folder, node_file_folder(o.file));
    remove_temporaries(folder, o.name);
    CNI_TRY_ASSIGN(auto old, folder.read_if_exists(o.name, kNodeFileLimit));
    if (old && *old == text) {
        CNI_TRY(setup_node_or_undo(std::move(node), [] { return Status{}; }));
        return false;
    }
    CNI_TRY_ASSIGN(auto pending, folder.write_pending(o.name, text, mode_of(folder, o.name), true));
    CNI_TRY(setup_node_or_undo(std::move(node), [&] { return pending.commit(); }));
    return true;
}

}  // namespace

Result<int> node_setup_from_metadata(std::span<const std::string> args, const SubcommandWarn& warn) {
    CNI_TRY_ASSIGN(auto o, parse_options(args));
    if (!o.interval) {
        CNI_TRY(learn_and_set_up(o, warn));
        return 0;
    }
    for (;;) {  // a daemon: a failed round is reported and the next one tried
        auto changed = learn_and_set_up(o, warn);
        if (!changed) warn(changed.error().msg);
        else if (*changed) warn(o.file + " written from " + o.imds.endpoint.url);
        std::this_thread::sleep_for(*o.interval);
    }
}

}  // namespace cni::vpc_eni
