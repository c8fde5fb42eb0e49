// SPDX-License-Identifier: Apache-2.0
// vpc-eni's node setup and teardown (see node.hpp and docs/vpc-eni.md). What setup changes is
// first written to <stateDir>/node-backup.json (a second setup keeps the first record, adding
// only ENIs attached since): the primary interface and its rp_filter, each ENI's MTU, link state
// and IPv4 addresses, whether the local table's rule sat at priority 0, and which iptables-nft
// tables and built-in chains the SNAT rules will make. Teardown removes what setup added and
// restores that record (removing those tables and chains when they hold nothing), then deletes
// it; the NodePort rule and rp_filter it restores are the recorded primary interface's, whatever
// the node file says now. A setup that fails partway can be undone from the record as well.
// Beside the record, <stateDir>/node-applied.json keeps the node file the node is set up by, so
// that teardown, and a round of --imds that must go back, can go by it when the node file itself
// is gone or no longer loads. Both are synced to disk before they are renamed into place. stateDir
// is opened as a folder of root's (reached through no link, written by no one else), and both
// files are read through it and refused unless they are root's and 0600, then re-checked.
#include "applets/vpc_eni/node.hpp"

#include <linux/rtnetlink.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>

#include "applets/vpc_eni/node_file.hpp"
#include "applets/vpc_eni/reservations.hpp"
#include "applets/vpc_eni/snat.hpp"
#include "core/cni/json.hpp"
#include "core/cni/request.hpp"
#include "core/nl/addr.hpp"
#include "core/nl/link.hpp"
#include "core/nl/route.hpp"
#include "core/nl/rule.hpp"
#include "core/os/errno_error.hpp"
#include "core/os/fs.hpp"
#include "core/os/node_folder.hpp"
#include "core/os/sysctl.hpp"
#include "core/os/unique_fd.hpp"

namespace cni::vpc_eni {
namespace {

constexpr std::uint32_t kFwmarkPriority = 1024;
constexpr std::uint32_t kLocalPriorityPodEni = 20;
constexpr const char* kBackupName = "node-backup.json";
constexpr const char* kAppliedName = "node-applied.json";
constexpr std::size_t kMaxLinks = 251;  // ENIs: device numbers 0..250
constexpr std::size_t kMaxLinkAddresses = 256;  // a link's addresses before setup, as recorded
constexpr const char* kDocumentedNodeFile = "/etc/cni/vpc-eni/node.json";  // docs/vpc-eni.md

struct LinkBackup {
    std::string name;
    std::int64_t mtu = 0;
    bool up = false;
    std::vector<net::IpNet> addresses;
};
struct Backup {
    std::string primary_interface;  // the one setup marked NodePort connections on and set rp_filter of
    std::string rp_filter;
    bool local_rule_at_0 = true;
    std::vector<LinkBackup> links;
    std::vector<std::string> nft_made;  // SnatSpec::nft_made
};

inline constexpr std::array kLinkBackupKeys{
    key<&LinkBackup::name>("name", ""), key<&LinkBackup::mtu>("mtu", ""), key<&LinkBackup::up>("up", ""),
    key<&LinkBackup::addresses>("addresses", "[]string", ""),
};

Status decode(const json::Value& v, LinkBackup& out, const json::Where& w) {
    CNI_TRY(json::expect_object(v, w, "vpc.LinkBackup"));
    return read_keys(v, kLinkBackupKeys, out, w);
}

inline constexpr std::array kBackupKeys{
    key<&Backup::primary_interface>("primaryInterface", ""),
    key<&Backup::rp_filter>("rpFilter", ""),
    key<&Backup::local_rule_at_0>("localRuleAt0", ""),
    key<&Backup::links>("links", "[]vpc.LinkBackup", ""),
    key<&Backup::nft_made>("iptablesNftMade", "[]string", ""),
};

std::string encode(const Backup& b) {
    json::Document d;
    d.SetObject();
    auto& a = d.GetAllocator();
    json::set(d, "primaryInterface", json::str(b.primary_interface, a), a);
    json::set(d, "rpFilter", json::str(b.rp_filter, a), a);
    json::set(d, "localRuleAt0", json::Value(b.local_rule_at_0), a);
    json::Value links(rapidjson::kArrayType);
    for (auto& l : b.links) {
        json::Value o(rapidjson::kObjectType);
        json::set(o, "name", json::str(l.name, a), a);
        json::set(o, "mtu", json::Value(std::int64_t(l.mtu)), a);
        json::set(o, "up", json::Value(l.up), a);
        json::Value addrs(rapidjson::kArrayType);
        for (auto& n : l.addresses) addrs.PushBack(json::str(n.str(), a), a);
        json::set(o, "addresses", std::move(addrs), a);
        links.PushBack(std::move(o), a);
    }
    json::set(d, "links", std::move(links), a);
    json::Value made(rapidjson::kArrayType);
    for (auto& m : b.nft_made) made.PushBack(json::str(m, a), a);
    json::set(d, "iptablesNftMade", std::move(made), a);
    return json::write(d, json::Style::indented, false) + "\n";
}

struct Node {
    NodeFile file;
    nl::Socket sock;
    os::Dir state;
};

// stateDir, a folder of root's: made (its missing parents 0755) when missing.
Result<os::Dir> open_state(const std::string& state_dir) { return os::Dir::make_trusted(state_dir, 0755, 0700); }

Result<Node> open_node(NodeFile file) {
    CNI_TRY_ASSIGN(auto sock, nl::Socket::open());
    CNI_TRY_ASSIGN(auto state, open_state(file.state_dir));
    return Node{std::move(file), std::move(sock), std::move(state)};
}

// A file of stateDir's (the record, the kept node file), as node-setup writes it: a regular file,
// never through a link, root's and 0600; nothing when it is missing.
Result<std::optional<std::string>> read_own(const os::Dir& state, const char* name, std::size_t limit) {
    os::UniqueFd fd = state.open_regular(name, O_RDONLY);
    if (!fd && errno == ENOENT) return std::optional<std::string>{};
    if (!fd) return state.open_failed(name, errno);
    struct stat st{};
    if (::fstat(fd.get(), &st) != 0) return os::sys_fail("stat", state.path_of(name));
    if (st.st_uid != 0 || (st.st_mode & 07777) != 0600) {
        char mode[8];
        std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
        return fail("vpc-eni: " + state.path_of(name) + ": refused: owned by uid " + std::to_string(st.st_uid) + " with mode " + mode +
                    ", not root's with mode 0600 as node-setup writes it");
    }
    CNI_TRY_ASSIGN(auto text, os::read_all(fd.get(), limit, state.path_of(name)));
    return std::optional<std::string>{std::move(text)};
}

std::string rp_filter_name(const std::string& interface) { return "net/ipv4/conf/" + interface + "/rp_filter"; }

// The link a node file's key names, or an error naming the key, the file and the link.
Result<nl::LinkInfo> node_link(const Node& n, const std::string& name, const std::string& key) {
    CNI_TRY_ASSIGN(auto link, nl::find_link(n.sock, name));
    if (!link) return fail("vpc-eni: node file " + n.file.path + ": " + key + " " + name + ": no such link in this network namespace");
    return *link;
}

std::string eni_key(const NodeFile& f, const Eni& eni) {
    return eni.device_number == 0 ? "primaryInterface" : "enis[" + std::to_string(&eni - f.enis.data()) + "].interface";
}

int family_of(const Eni& eni) { return eni.subnet->ip.is_v4() ? AF_INET : AF_INET6; }

net::IpNet eni_address(const Eni& eni) { return net::IpNet{*eni.primary_ip, eni.subnet->prefix, eni.subnet->ip.bits()}; }

// An ENI's addresses of its subnet's family, but not the link-local ones the kernel manages.
Result<std::vector<net::IpNet>> eni_addresses(const Node& n, const Eni& eni, int index) {
    CNI_TRY_ASSIGN(auto addrs, nl::list_addrs(n.sock, index, family_of(eni)));
    std::vector<net::IpNet> out;
    for (auto& a : addrs)
        if (a.scope != RT_SCOPE_LINK) out.push_back(a.local);
    return out;
}

// Adds to `b` the ENIs it does not hold yet: each link as it is before setup changes it.
Status snapshot_links(const Node& n, Backup& b) {
    for (auto& eni : n.file.enis) {
        if (std::ranges::any_of(b.links, [&](const LinkBackup& l) { return l.name == eni.interface; })) continue;
        CNI_TRY_ASSIGN(auto link, node_link(n, eni.interface, eni_key(n.file, eni)));
        LinkBackup l{eni.interface, link.mtu, link.up(), {}};
        CNI_TRY_ASSIGN(l.addresses, eni_addresses(n, eni, link.index));
        b.links.push_back(std::move(l));
    }
    return {};
}

// The record of what setup will change, taken before it changes anything.
Result<Backup> snapshot(const Node& n, fw::Driver driver) {
    Backup b;
    CNI_TRY(node_link(n, n.file.primary_interface, "primaryInterface"));
    b.primary_interface = n.file.primary_interface;
    CNI_TRY_ASSIGN(b.rp_filter, os::sysctl_get(rp_filter_name(b.primary_interface)));
    CNI_TRY_ASSIGN(auto rules, nl::list_rules(n.sock, AF_INET));
    b.local_rule_at_0 = std::ranges::any_of(rules, [](const nl::RuleSpec& r) { return r.table == RT_TABLE_LOCAL && r.priority == 0u; });
    CNI_TRY(snapshot_links(n, b));
    if (driver == fw::Driver::iptables && n.file.primary().primary_ip->is_v4()) CNI_TRY_ASSIGN(b.nft_made, iptables_nft_absent());
    return b;
}

// The record's links, which teardown writes back to the node: each an interface name, an MTU a
// link can have, at most 251 of them, each with at most 256 addresses, of its ENI's family when
// the node file has it (a record in stateDir is re-checked, as any state file).
Status check_links(const Node& n, const std::vector<LinkBackup>& links) {
    const std::string in = "vpc-eni: " + n.state.path_of(kBackupName) + ": ";
    if (links.size() > kMaxLinks) return fail(in + "links: more than " + std::to_string(kMaxLinks));
    for (std::size_t i = 0; i < links.size(); ++i) {
        const std::string at = in + "links[" + std::to_string(i) + "].";
        if (auto st = validate_ifname(links[i].name); !st) return fail(at + "name: " + st.error().msg);
        if (links[i].mtu < 68 || links[i].mtu > 65535) return fail(at + "mtu " + std::to_string(links[i].mtu) + " is not within 68..65535");
        if (links[i].addresses.size() > kMaxLinkAddresses) return fail(at + "addresses: more than " + std::to_string(kMaxLinkAddresses));
        auto eni = std::ranges::find(n.file.enis, links[i].name, &Eni::interface);
        if (eni == n.file.enis.end()) continue;
        for (auto& a : links[i].addresses)
            if (a.ip.is_v4() != eni->subnet->ip.is_v4())
                return fail(at + "addresses: " + a.str() + " is not of the family of " + eni->interface + "'s subnet " + eni->subnet->str());
    }
    return {};
}

Result<std::optional<Backup>> read_backup(const Node& n) {
    CNI_TRY_ASSIGN(auto text, read_own(n.state, kBackupName, os::kStateFileLimit));
    if (!text) return std::optional<Backup>{};
    CNI_TRY_ASSIGN(auto doc, json::parse(*text));
    Backup b;
    json::Where w{"Backup", "", "vpc-eni: " + n.state.path_of(kBackupName) + ": "};
    CNI_TRY(json::expect_object(doc, w, "vpc.Backup"));
    CNI_TRY(read_keys(doc, kBackupKeys, b, w));
    // Named in a firewall rule and a /proc/sys path: an interface name, or none (an older record's).
    if (!b.primary_interface.empty())
        if (auto st = validate_ifname(b.primary_interface); !st)
            return fail("vpc-eni: " + n.state.path_of(kBackupName) + ": primaryInterface: " + st.error().msg);
    // Written back to the primary interface's rp_filter by teardown: one of its three values.
    if (b.rp_filter != "0" && b.rp_filter != "1" && b.rp_filter != "2")
        return fail("vpc-eni: " + n.state.path_of(kBackupName) + ": rpFilter is not \"0\", \"1\" or \"2\"");
    CNI_TRY(check_links(n, b.links));
    return std::optional<Backup>{std::move(b)};
}

// Setup's record, written so that a crash leaves the old one or the new one.
Status write_backup(const Node& n, const Backup& b) { return n.state.write_atomic(kBackupName, encode(b), 0600, true); }

// The node file the node is set up by, kept in stateDir (when it changed, or is not as
// node-setup writes it) before setup changes anything, so that what setup may have done is
// always known.
Status keep_applied(const Node& n) {
    const std::string text = encode_node_file(n.file);
    if (auto kept = read_own(n.state, kAppliedName, kNodeFileLimit); kept && *kept && **kept == text) return {};
    return n.state.write_atomic(kAppliedName, text, 0600, true);
}

// The node file keep_applied kept in `state` (the stateDir `state_dir`), checked as any node file
// is; nothing when there is none.
Result<std::optional<NodeFile>> load_applied(const os::Dir& state, const std::string& state_dir) {
    CNI_TRY_ASSIGN(auto text, read_own(state, kAppliedName, kNodeFileLimit));
    if (!text) return std::optional<NodeFile>{};
    CNI_TRY_ASSIGN(auto file, parse_node_file(state.path_of(kAppliedName), *text));
    file.state_dir = state_dir;  // the record beside it, wherever the copy says it is
    return std::optional<NodeFile>{std::move(file)};
}

// "<record> records a setup, but <copy>, the node file it was set up by, is missing".
std::string copy_missing(const os::Dir& state) {
    return state.path_of(kBackupName) + " records a setup, but " + state.path_of(kAppliedName) +
           ", the node file it was set up by, is missing";
}

nl::RuleSpec fwmark_rule() {
    nl::RuleSpec r;
    r.family = AF_INET;
    r.mark = kOutboundMark;
    r.mark_mask = kOutboundMark;
    r.priority = kFwmarkPriority;
    r.table = RT_TABLE_MAIN;
    return r;
}
nl::RuleSpec local_rule(std::uint32_t priority) {
    nl::RuleSpec r;
    r.family = AF_INET;
    r.priority = priority;
    r.table = RT_TABLE_LOCAL;
    return r;
}

bool has_rule(const std::vector<nl::RuleSpec>& rules, const nl::RuleSpec& want) {
    return std::ranges::any_of(rules, [&](const nl::RuleSpec& r) { return r.table == want.table && r.priority == want.priority; });
}

nl::RouteSpec gateway_route(const Eni& eni, int index) {
    const int bits = eni.subnet->ip.bits();
    nl::RouteSpec r;
    r.dst = net::IpNet{eni.gateway(), bits, bits};
    r.oif = index;
    r.scope = RT_SCOPE_LINK;
    r.table = eni.table();
    return r;
}
nl::RouteSpec default_route(const Eni& eni, int index) {
    nl::RouteSpec r;
    r.dst = net::IpNet{*net::IpAddr::parse(eni.subnet->ip.is_v4() ? "0.0.0.0" : "::"), 0, eni.subnet->ip.bits()};
    r.gw = eni.gateway();
    r.oif = index;
    r.table = eni.table();
    return r;
}
// A secondary ENI: its MTU, up, its address alone on it, its table, and no main-table route of
// its subnet (the kernel's prefix route would send the VPC's replies out of it).
Status setup_eni(const Node& n, const Eni& eni) {
    CNI_TRY_ASSIGN(auto link, node_link(n, eni.interface, eni_key(n.file, eni)));
    CNI_TRY(nl::set_mtu(n.sock, link, n.file.mtu));
    CNI_TRY(nl::set_link_up(n.sock, link, true));
    CNI_TRY_ASSIGN(auto addrs, eni_addresses(n, eni, link.index));
    bool have = false;
    for (auto& a : addrs) {
        if (a == eni_address(eni)) have = true;
        else CNI_TRY(nl::del_addr(n.sock, link.index, link.name, a));
    }
    const bool v4 = eni.subnet->ip.is_v4();
    if (!have) CNI_TRY(nl::add_addr(n.sock, link.index, link.name, eni_address(eni), v4 ? 0 : IFA_F_NODAD));
    CNI_TRY(nl::replace_route(n.sock, gateway_route(eni, link.index)));
    CNI_TRY(nl::replace_route(n.sock, default_route(eni, link.index)));
    nl::RouteSpec prefix;  // the kernel's: IPv4 with the address as source, IPv6 at metric 256
    prefix.dst = eni.subnet->masked();
    prefix.oif = link.index;
    if (v4) prefix.src = eni.primary_ip;
    else prefix.metric = 256;
    CNI_TRY(nl::del_route(n.sock, prefix));
    return {};
}

// The SNAT of IPv4 traffic leaving the VPC through the primary address, and the NodePort
// connmark; none when the primary ENI is IPv6 (the VPC has no NAT for it). `recorded`: what
// setup recorded, for teardown.
std::optional<SnatSpec> snat_spec(const NodeFile& f, const std::optional<Backup>& recorded = std::nullopt) {
    if (!f.primary().primary_ip->is_v4()) return std::nullopt;
    SnatSpec s{{}, *f.primary().primary_ip, f.veth_prefix, f.primary_interface, f.node_port_support, {}};
    // Only what setup can record (iptables_nft_absent): a record in stateDir naming any other
    // table or chain (filter's INPUT, say) is not acted on.
    static constexpr std::array<std::string_view, 4> kSetupMakes{"nat", "nat/POSTROUTING", "mangle", "mangle/PREROUTING"};
    if (recorded)
        for (auto& m : recorded->nft_made)
            if (std::ranges::find(kSetupMakes, m) != kSetupMakes.end()) s.nft_made.push_back(m);
    for (auto& c : f.vpc_cidrs)
        if (c.ip.is_v4()) s.vpc_cidrs.push_back(c);
    return s;
}

Result<fw::Driver> firewall_driver(const NodeFile& f) {
    std::optional<fw::Driver> configured;
    if (!f.firewall_backend.empty()) {
        configured = fw::driver_named(f.firewall_backend);
        if (!configured || *configured == fw::Driver::firewalld)
            return fail("vpc-eni: node file " + f.path + ": firewallBackend \"" + f.firewall_backend + "\" is not iptables or nftables");
    }
    return snat().choose(configured);
}

// An ENI back as setup found it (`was`, its record; none: only the routes setup added).
Status restore_eni(const Node& n, const Eni& eni, const LinkBackup* was) {
    CNI_TRY_ASSIGN(auto link, nl::find_link(n.sock, eni.interface));
    if (!link) return {};
    if (eni.device_number > 0) {
        CNI_TRY(nl::del_route(n.sock, default_route(eni, link->index)));
        CNI_TRY(nl::del_route(n.sock, gateway_route(eni, link->index)));
        if (was) {
            CNI_TRY_ASSIGN(auto addrs, eni_addresses(n, eni, link->index));
            for (auto& a : addrs)
                if (std::ranges::find(was->addresses, a) == was->addresses.end()) CNI_TRY(nl::del_addr(n.sock, link->index, link->name, a));
            for (auto& a : was->addresses)
                if (std::ranges::find(addrs, a) == addrs.end()) CNI_TRY(nl::add_addr(n.sock, link->index, link->name, a));
            CNI_TRY(nl::set_link_up(n.sock, *link, was->up));
        }
    }
    if (was) CNI_TRY(nl::set_mtu(n.sock, *link, was->mtu));
    return {};
}

const LinkBackup* recorded_link(const std::optional<Backup>& recorded, const std::string& name) {
    if (recorded)
        for (auto& l : recorded->links)
            if (l.name == name) return &l;
    return nullptr;
}

// Removes what setup added and restores `recorded`, then deletes it. The NodePort rule and
// rp_filter are the recorded primary interface's (the node file's may have changed since); a
// NodePort rule of the file's, when it names another, goes too.
Status teardown(const Node& n, const std::optional<Backup>& recorded) {
    const NodeFile& f = n.file;
    const std::string primary_name = recorded && !recorded->primary_interface.empty() ? recorded->primary_interface : f.primary_interface;
    if (auto spec = snat_spec(f, recorded)) {
        if (primary_name != f.primary_interface) {
            SnatSpec current = *spec;
            current.nft_made.clear();
            CNI_TRY(snat().teardown_all(current));
        }
        spec->primary_interface = primary_name;
        CNI_TRY(snat().teardown_all(*spec));
    }
    CNI_TRY(nl::del_rules(n.sock, fwmark_rule()));
    CNI_TRY_ASSIGN(auto rules, nl::list_rules(n.sock, AF_INET));
    if (f.pod_eni_support) {
        if ((!recorded || recorded->local_rule_at_0) && !has_rule(rules, local_rule(0))) CNI_TRY(nl::add_rule(n.sock, local_rule(0)));
        CNI_TRY(nl::del_rules(n.sock, local_rule(kLocalPriorityPodEni)));
    }
    for (auto& eni : f.enis) CNI_TRY(restore_eni(n, eni, recorded_link(recorded, eni.interface)));
    // A primary interface that is gone took its rp_filter with it: nothing to restore.
    CNI_TRY_ASSIGN(auto primary, nl::find_link(n.sock, primary_name));
    if (recorded && primary) CNI_TRY(os::sysctl_set(rp_filter_name(primary_name), recorded->rp_filter));
    n.state.remove(kBackupName);
    n.state.remove(kAppliedName);
    return {};
}

// Whether `f` has `eni`'s interface with its device number and subnet: the same table and routes.
bool routed_alike(const NodeFile& f, const Eni& eni) {
    return std::ranges::any_of(f.enis, [&](const Eni& e) {
        return e.interface == eni.interface && e.device_number == eni.device_number && e.subnet == eni.subnet;
    });
}

// The routes of the table `previous` gave an ENI that `file` routes otherwise (its device number
// or subnet changed): setup_node made the new table's, and the old one's go before the new file
// is committed (an undo sets `previous` up again, and with it them).
Status drop_moved_routes(const NodeFile& file, const NodeFile& previous) {
    CNI_TRY_ASSIGN(auto n, open_node(file));
    for (auto& was : previous.enis)
        if (std::ranges::any_of(file.enis, [&](const Eni& e) { return e.interface == was.interface; }) &&
            !routed_alike(file, was))
            CNI_TRY(restore_eni(n, was, nullptr));
    return {};
}

// What a setup of `file` changed, undone (it failed partway, or what was to follow it did):
// nothing when it recorded nothing (the record comes before any change), but on a fresh node
// the node file it kept (which comes before the record) removed; on a node no setup had
// recorded (`before`), all of it, as teardown does; else (`previous` is there: setup_node_or_undo
// made sure) the ENIs it recorded first go back as they were, an ENI recorded before loses the
// routes of its table when the node file the node was set up by (`previous`) routes it otherwise
// (its device number changed), the record is as it was, and `previous` is set up again.
Status undo_setup(NodeFile file, const std::optional<Backup>& before, const std::optional<NodeFile>& previous) {
    CNI_TRY_ASSIGN(auto n, open_node(std::move(file)));
    CNI_TRY_ASSIGN(auto after, read_backup(n));
    if (!after) {
        if (!before) n.state.remove(kAppliedName);
        return {};
    }
    if (!before) return teardown(n, after);
    for (auto& eni : n.file.enis) {
        if (!recorded_link(before, eni.interface)) {
            if (auto* was = recorded_link(after, eni.interface)) CNI_TRY(restore_eni(n, eni, was));
        } else if (!routed_alike(*previous, eni)) {
            CNI_TRY(restore_eni(n, eni, nullptr));
        }
    }
    CNI_TRY(write_backup(n, *before));
    return setup_node(*previous);
}

// What a failed round goes back to on a node set up before: the node file the node is set up by,
// as stateDir keeps it, else (a record of an earlier version, which kept none, or a copy that
// does not load) the node file at `path` when that loads. The error says what to do.
Result<NodeFile> set_up_by(const Node& n, const std::string& path) {
    auto applied = load_applied(n.state, n.file.state_dir);
    if (applied && *applied) return std::move(**applied);
    auto file = load_node_file(path);
    if (file) return file;
    const std::string kept = applied ? n.state.path_of(kAppliedName) + ", the node file it was set up by, is missing (a setup by an "
                                                                       "earlier version)"
                                     : applied.error().msg;
    return fail(code::invalid_config, file.error().msg + "; " + n.state.path_of(kBackupName) +
                                          " records a setup, which a failed round goes back to, but " + kept +
                                          ": put back the node file the node was set up by (or correct this one), or run "
                                          "node-teardown with it first");
}

// Removes what the setup `n` records made and restores the node, under node.lock.
Result<int> teardown_node(const Node& n) {
    CNI_TRY_ASSIGN(auto lock, lock_node(n.file.state_dir));
    CNI_TRY_ASSIGN(auto recorded, read_backup(n));
    CNI_TRY(teardown(n, recorded));
    return 0;
}

// node-teardown by a node file that loads: by the node file its stateDir keeps when that loads
// and says otherwise (a setting edited since the setup: the node is as the kept one made it),
// with a warning; else by `file`.
Result<int> teardown_by(NodeFile file, const SubcommandWarn& warn) {
    CNI_TRY_ASSIGN(auto state, open_state(file.state_dir));
    auto applied = load_applied(state, file.state_dir);
    if (!applied) warn(applied.error().msg + "; going by " + file.path);
    if (applied && *applied && encode_node_file(**applied) != encode_node_file(file)) {
        warn("going by " + state.path_of(kAppliedName) + ", the node file the node was set up by, not " + file.path + ", which differs");
        file = std::move(**applied);
    }
    CNI_TRY_ASSIGN(auto n, open_node(std::move(file)));
    return teardown_node(n);
}

// node-teardown without a node file that loads (`why`: FILE's error; none: no FILE given): by
// the node file the node was set up by, as `state_dir` keeps it (keep_applied), saying so. With
// no setup recorded there, nothing is to be undone: an error when FILE was given.
Result<int> teardown_by_copy(const std::string& state_dir, const std::optional<Error>& why, const SubcommandWarn& warn) {
    const std::string what = why ? why->msg + "; " : std::string("no node file given; ");
    auto applied = kept_node_file(state_dir);
    if (!applied) return fail(applied.error().code, what + applied.error().msg);
    if (!*applied) {
        if (why) return fail(why->code, what + state_dir + " records no setup either");
        warn(what + state_dir + " records no setup: nothing to undo");
        return 0;
    }
    warn(what + "going by " + state_dir + "/" + kAppliedName + ", the node file the node was set up by");
    CNI_TRY_ASSIGN(auto n, open_node(std::move(**applied)));
    return teardown_node(n);
}

}  // namespace

Result<int> node_setup(std::span<const std::string> args, const SubcommandWarn& warn) {
    if (std::ranges::any_of(args, [](const std::string& a) { return a.starts_with("--"); })) return node_setup_from_metadata(args, warn);
    if (args.size() != 1) return fail("usage: cni-all vpc-eni node-setup [--imds [URL] [--imds-v1] [--interval SECONDS]] FILE (docs/vpc-eni.md)");
    CNI_TRY_ASSIGN(auto file, load_node_file(args[0]));
    CNI_TRY_ASSIGN(auto lock, lock_node(file.state_dir));
    CNI_TRY(setup_node(std::move(file)));
    return 0;
}

Result<os::FileLock> lock_node(const std::string& state_dir) {
    CNI_TRY_ASSIGN(auto state, open_state(state_dir));
    return os::FileLock::acquire_in(state, "node.lock");
}

Status node_is_set_up(const NodeFile& f) {
    const std::string record = f.state_dir + "/" + kBackupName;
    CNI_TRY_ASSIGN(auto state, os::Dir::open_trusted_if_exists(f.state_dir));
    if (state && state->stat(kBackupName)) return {};
    return fail(code::try_again_later, "vpc-eni: the node is not set up: " + record + ", node-setup's record, is missing (node-setup " +
                                           "has not run since boot, or node-teardown ran since): try again once it has");
}

Result<std::optional<NodeFile>> kept_node_file(const std::string& state_dir) {
    CNI_TRY_ASSIGN(auto state, os::Dir::open_trusted_if_exists(state_dir));
    if (!state) return std::optional<NodeFile>{};
    CNI_TRY_ASSIGN(auto applied, load_applied(*state, state_dir));
    if (!applied && state->stat(kBackupName))
        return fail(code::invalid_config, copy_missing(*state) + ": run node-teardown with the node file the node was set up by");
    return applied;
}

Status setup_node(NodeFile file) {
    CNI_TRY_ASSIGN(auto n, open_node(std::move(file)));
    // The node's folders, marked before any pod's ADD: no host-local dataDir may lie in them.
    CNI_TRY(os::mark_node_folder(n.state, n.file.state_dir + ", vpc-eni's stateDir"));
    CNI_TRY(open_ipam_dir(n.file, true));
    CNI_TRY_ASSIGN(auto driver, firewall_driver(n.file));
    CNI_TRY_ASSIGN(auto recorded, read_backup(n));
    // The node file first: a record never stands without it, even when a kill comes between.
    CNI_TRY(keep_applied(n));
    if (!recorded) {
        CNI_TRY_ASSIGN(auto b, snapshot(n, driver));
        CNI_TRY(write_backup(n, b));
    } else {
        const std::size_t known = recorded->links.size();
        CNI_TRY(snapshot_links(n, *recorded));  // ENIs attached since the first setup
        const bool unnamed = recorded->primary_interface.empty();  // an older version's record
        if (unnamed) recorded->primary_interface = n.file.primary_interface;
        if (recorded->links.size() != known || unnamed) CNI_TRY(write_backup(n, *recorded));
    }
    const NodeFile& f = n.file;
    CNI_TRY_ASSIGN(auto primary, node_link(n, f.primary_interface, "primaryInterface"));
    if (f.node_port_support) CNI_TRY(os::sysctl_set(rp_filter_name(f.primary_interface), "2"));
    CNI_TRY(nl::set_mtu(n.sock, primary, f.mtu));
    // Never deleted to be re-added: a run of --interval must leave no moment without it.
    if (f.node_port_support) CNI_TRY(nl::add_rule_if_absent(n.sock, fwmark_rule()));
    else CNI_TRY(nl::del_rules(n.sock, fwmark_rule()));
    if (f.pod_eni_support) {
        CNI_TRY_ASSIGN(auto rules, nl::list_rules(n.sock, AF_INET));
        if (!has_rule(rules, local_rule(kLocalPriorityPodEni))) CNI_TRY(nl::add_rule(n.sock, local_rule(kLocalPriorityPodEni)));
        CNI_TRY(nl::del_rules(n.sock, local_rule(0)));
    }
    for (auto& eni : f.enis)
        if (eni.device_number > 0) CNI_TRY(setup_eni(n, eni));
    if (auto spec = snat_spec(f)) {
        Rollback none;
        CNI_TRY(snat().setup(driver, *spec, none));
        none.dismiss();
    }
    return {};
}

Result<int> node_teardown(std::span<const std::string> args, const SubcommandWarn& warn) {
    if (args.size() > 1 || (args.size() == 1 && args[0].starts_with("-")))
        return fail("usage: cni-all vpc-eni node-teardown [FILE] (the node file; without it, the one stateDir keeps, docs/vpc-eni.md)");
    // Without FILE, the documented node file names the stateDir when it is there.
    const std::string path = args.empty() ? kDocumentedNodeFile : args[0];
    std::optional<Error> why;  // FILE's error
    if (!args.empty()) {
        auto file = load_node_file(path);
        if (file) return teardown_by(std::move(*file), warn);
        why = file.error();
    }
    // Its stateDir as written, when that much of it reads (an absolute path); else the default.
    std::string state_dir = NodeFile{}.state_dir;
    if (auto settings = load_node_settings(path); settings && *settings && (*settings)->state_dir.starts_with("/"))
        state_dir = (*settings)->state_dir;
    return teardown_by_copy(state_dir, why, warn);
}

Status setup_node_or_undo(NodeFile file, const std::function<Status()>& commit) {
    std::optional<Backup> before;  // the record before this setup: what a failure goes back to
    std::optional<NodeFile> previous;  // with it, the node file the node was set up by
    {
        CNI_TRY_ASSIGN(auto n, open_node(file));
        CNI_TRY_ASSIGN(before, read_backup(n));
        if (before) CNI_TRY_ASSIGN(previous, set_up_by(n, file.path));
    }
    auto done = setup_node(file);
    if (done && previous) done = drop_moved_routes(file, *previous);
    if (done) done = commit();
    if (done) return done;
    if (auto undone = undo_setup(std::move(file), before, previous); !undone)
        return fail(done.error().msg + "; undoing what it did failed too: " + undone.error().msg);
    return done;
}

}  // namespace cni::vpc_eni
