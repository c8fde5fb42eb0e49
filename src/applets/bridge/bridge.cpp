// SPDX-License-Identifier: Apache-2.0
// bridge (docs/compatibility.md: bridge): a Linux bridge on the host (created if missing) with one
// veth per container, optional IPAM (L2 when absent), the gateway on the bridge (isGateway,
// isDefaultGateway, forceAddress), ipMasq, hairpin, promisc, port isolation, DAD sysctls,
// disableContainerInterface, skipIPv6LinkLocal (configure.hpp), mtu, the container MAC
// (runtimeConfig > args > CNI_ARGS) and port VLANs (vlan, vlanTrunk, preserveDefaultVlan; with vlan
// and isGateway the gateway lives on a host veth "<bridge>.<vlan>" that is a port of that VLAN,
// shared and kept). removeWhenUnused (beyond the reference): DEL removes the bridge an ADD made,
// and those gateways, once no other port is left, under the lock ADD holds while it attaches a
// port. macspoofchk drops the container's frames from any other MAC (nf_tables bridge chains). A
// failed ADD undoes the veth, the spoof-check chains, the ipMasq rules and the IPAM allocation
// (the bridge is shared and stays, as in the reference). DEL is idempotent and removes the ipMasq
// rules by chain name even when the link is gone. CHECK verifies what ADD made; STATUS: code 50
// when ipMasq's firewall backend cannot work, else the IPAM's; GC removes the ipMasq rules of
// attachments not in cni.dev/valid-attachments and forwards to IPAM.
#include <linux/if.h>
#include <linux/ip.h>

#include <charconv>
#include <chrono>
#include <string_view>
#include <thread>
#include <vector>

#include "applets/bridge/mac_spoof_guard.hpp"
#include "applets/bridge/port_vlans.hpp"
#include "core/applet.hpp"
#include "core/cni/netconf.hpp"
#include "core/fw/ipmasq.hpp"
#include "core/iface/check.hpp"
#include "core/iface/configure.hpp"
#include "core/iface/key_docs.hpp"
#include "core/iface/link_result.hpp"
#include "core/iface/masquerade.hpp"
#include "core/iface/remove.hpp"
#include "core/iface/sockets.hpp"
#include "core/iface/veth.hpp"
#include "core/ipam/delegate.hpp"
#include "core/net/mac.hpp"
#include "core/nl/addr.hpp"
#include "core/nl/link_watch.hpp"
#include "core/nl/route.hpp"
#include "core/os/file_lock.hpp"
#include "core/os/fs.hpp"
#include "core/os/sysctl.hpp"
#include "core/rollback.hpp"
#include "core/strings.hpp"

namespace cni::bridge {
namespace {

struct BridgeConf {
    NetConf net;
    std::string bridge = "cni0";
    bool is_gateway = false;
    bool is_default_gateway = false;
    bool force_address = false;
    bool ip_masq = false;
    std::string ip_masq_backend;
    std::int64_t mtu = 0;
    bool hairpin = false;
    bool promisc = false;
    bool enable_dad = false;
    bool disable_container_interface = false;
    bool port_isolation = false;
    bool mac_spoof_check = false;
    bool skip_ipv6_link_local = false;  // iface::skip_ipv6_link_local
    bool remove_when_unused = false;
    std::string mac;  // container MAC, normalised
    std::int64_t vlan = 0;  // the keys port_vlans_of reads into `vlans`
    std::optional<std::vector<VlanTrunk>> vlan_trunk;
    bool preserve_default_vlan = false;  // false since containernetworking/plugins#1181 (2025); true before
    PortVlans vlans;
};

constexpr std::array kBridgeKeys{
    key<&BridgeConf::bridge>("bridge", "the bridge's name, cni0 by default; created if missing"),  // "" stays: ADD refuses it, as Go does
    key<&BridgeConf::is_gateway>("isGateway", "the bridge holds the gateway address of each IPAM range"),
    key<&BridgeConf::is_default_gateway>("isDefaultGateway", "isGateway, and the container's default route goes through it"),
    key<&BridgeConf::force_address>("forceAddress", "replace a bridge address of the same family instead of failing"),
    key<&BridgeConf::ip_masq>("ipMasq", "masquerade what the container sends off its subnet"),
    key<&BridgeConf::ip_masq_backend>("ipMasqBackend", "iptables or nftables; default: iptables unless only nf_tables is usable"),
    key<&BridgeConf::mtu>("mtu", "the bridge and veth MTU; 0: the kernel's"),
    key<&BridgeConf::hairpin>("hairpinMode", "the port reflects frames back to the container"),
    key<&BridgeConf::promisc>("promiscMode", "the bridge is promiscuous"),
    key<&BridgeConf::enable_dad>("enabledad", "IPv6 duplicate address detection on the container interface"),
    key<&BridgeConf::disable_container_interface>("disableContainerInterface", "leave the container's veth down (no ipam then)"),
    key<&BridgeConf::port_isolation>("portIsolation", "isolated ports: containers on the bridge cannot reach each other"),
    key<&BridgeConf::skip_ipv6_link_local>("skipIPv6LinkLocal", iface::kSkipIpv6LinkLocalDoc),
    key<&BridgeConf::vlan>("vlan", "the port's untagged VLAN (PVID), 0..4094; turns VLAN filtering on"),
    key<&BridgeConf::vlan_trunk>("vlanTrunk", "tagged VLANs: [{\"minID\":M,\"maxID\":N} | {\"id\":I}], 1..4094"),
    key<&BridgeConf::preserve_default_vlan>("preserveDefaultVlan", "keep the VLAN a port gets on joining (default false)"),
    key<&BridgeConf::mac_spoof_check>("macspoofchk", "drop frames from the container whose source MAC is not its own (nftables)"),
    key<&BridgeConf::remove_when_unused>("removeWhenUnused", "DEL removes the bridge (and its <bridge>.<vlan> gateways) when it leaves it without ports"),
};

Result<BridgeConf> parse_bridge_conf(const Request& req) {
    CNI_TRY_ASSIGN(auto c, load_config(req.config, kBridgeKeys));
    const json::Where& w = c.net.where;
    CNI_TRY_ASSIGN(c.vlans, port_vlans_of(c.vlan, c.vlan_trunk, c.preserve_default_vlan));
    if (c.is_default_gateway) c.is_gateway = true;

    // The container MAC: runtimeConfig, else args.cni, else CNI_ARGS MAC.
    CNI_TRY_ASSIGN(auto env_mac, cni_args_mac(req.args));
    std::string mac = env_mac.value_or("");
    CNI_TRY_ASSIGN(auto args, json::anonymous_struct(c.net.root(), "args", w, R"(struct { Cni main.BridgeArgs "json:\"cni,omitempty\"" })"));
    CNI_TRY_ASSIGN(auto a, json::struct_member(args.object, "cni", args.inner, "main.BridgeArgs"));
    if (a) CNI_TRY(json::field(*a, "mac", mac, args.inner.at("cni").in("BridgeArgs")));
    CNI_TRY_ASSIGN(auto rc_mac, runtime_config_mac(c.net, w));
    if (rc_mac) mac = *rc_mac;
    c.mac = mac;
    return c;
}

// What only ADD uses, checked there as the reference does (in cmdAdd, or when applying it), so
// that the DEL a runtime sends after a refused ADD still succeeds. Normalises the MAC.
Status check_for_add(BridgeConf& c) {
    CNI_TRY(fw::validate_ipmasq_backend(c.ip_masq_backend));  // DEL tries every backend
    if (c.hairpin && c.promisc) return fail("cannot set hairpin mode and promiscuous mode at the same time.");
    if (c.disable_container_interface && !c.net.ipam_type.empty())
        return fail("cannot use IPAM when DisableContainerInterface flag is set");
    CNI_TRY_ASSIGN(c.mac, net::configured_mac(c.mac, net::MacWording::plain));
    return {};
}

// The bridge, created if missing (MTU only at creation), promisc as configured, accept_ra=0, up.
Result<nl::LinkInfo> ensure_bridge(const nl::Socket& host, const os::SysctlDir& ipv6_conf, const BridgeConf& c) {
    if (c.bridge.empty()) return fail("could not add \"\": LinkAttrs.Name cannot be empty");
    CNI_TRY_ASSIGN(auto existing, nl::find_link(host, c.bridge));
    if (!existing) {
        auto made = nl::add_bridge(host, nl::NewLink{c.bridge, c.mtu, "", 0, -1}, c.vlans.filtering());
        if (!made && made.error().msg.find("file exists") == std::string::npos)
            return fail("could not add \"" + c.bridge + "\": " + made.error().msg);
        CNI_TRY_ASSIGN(existing, nl::find_link(host, c.bridge));
        if (!existing) return fail("could not add \"" + c.bridge + "\": it vanished");
    }
    if (existing->kind != "bridge") return fail("\"" + c.bridge + "\" already exists but is not a bridge");
    // A request only for what is not so already: the bridge of a running node is up (see
    // iface::setup_veth on why requests are saved).
    bool changed = false;
    if (c.promisc && !(existing->flags & IFF_PROMISC)) {
        CNI_TRY(nl::set_promisc(host, *existing, true));
        changed = true;
    }
    (void)ipv6_conf.set(c.bridge + "/accept_ra", "0");
    if (!existing->up()) {
        CNI_TRY(nl::set_link_up(host, *existing, true));
        changed = true;
    }
    if (!changed) return *existing;
    return nl::require_link(host, c.bridge);
}

// The reference's ensureAddr: the gateway on the bridge; a different IPv4 address (or an
// overlapping IPv6 one) is an error unless forceAddress, which replaces it. True when the
// address was added (then, and only then, the reference pins the MAC).
Result<bool> ensure_gateway_addr(const nl::Socket& host, const nl::LinkInfo& br, const net::IpNet& gw, bool force) {
    CNI_TRY_ASSIGN(auto addrs, nl::list_addrs(host, br.index, gw.ip.is_v4() ? AF_INET : AF_INET6));
    for (auto& a : addrs) {
        if (a.local == gw) return false;
        if (gw.ip.is_v4() || a.local.contains(gw.ip) || gw.contains(a.local.ip)) {
            if (!force) return fail("\"" + br.name + "\" already has an IP address different from " + gw.str());
            CNI_TRY(nl::del_addr(host, br.index, br.name, a.local));
        }
    }
    auto added = nl::add_addr(host, br.index, br.name, gw);
    if (!added && added.error().msg.find("file exists") == std::string::npos)
        return fail("could not add IP address to \"" + br.name + "\": " + added.error().msg);
    return true;
}

// Set a link's MAC to itself: a bridge's MAC then stops following the lowest port MAC as ports
// come and go (which would make CHECK fail and neighbours' ARP entries stale). Done when a
// gateway address is added, as the reference does: repeating it on every ADD would cost each
// ADD the kernel's walk over all ports (4 ms at 500 ports) for no change. The MAC is the one
// the link had when this ADD first looked it up, as in the reference, except on a bridge whose
// ports had all left: the kernel gave it 00:00:00:00:00:00, which cannot be set (the reference
// fails there, and on every later ADD); it is pinned to the MAC it has now, the new port's.
Status pin_mac(const nl::Socket& host, nl::LinkInfo link) {
    if (link.mac == "00:00:00:00:00:00") CNI_TRY_ASSIGN(link, nl::require_link(host, link.name));
    if (auto st = nl::set_mac(host, link, link.mac); !st) return fail("could not set bridge's mac: " + st.error().msg);
    return {};
}

// With a vlan, the gateway's link: the host veth "<bridge>.<vlan>" (created once, its peer a
// port of that VLAN), else the bridge itself.
Result<nl::LinkInfo> gateway_link(const nl::Socket& host, const os::Netns& host_ns, const os::SysctlDir& ipv6_conf,
                                  const nl::LinkInfo& br, const BridgeConf& c) {
    if (c.vlans.vlan == 0) return br;
    std::string name = br.name + "." + std::to_string(c.vlans.vlan);
    CNI_TRY_ASSIGN(auto existing, nl::find_link(host, name));
    if (existing) return *existing;
    auto made = iface::setup_veth(host, host, host_ns, ipv6_conf, name, br.mtu, "");
    if (!made) return fail("failed to create vlan gateway \"" + name + "\": " + made.error().msg);
    CNI_TRY(nl::set_master(host, made->host, br.index));
    PortVlans only_this{c.vlans.vlan, {}, false, c.vlans.preserve_default};
    CNI_TRY(apply_port_vlans(host, br.name, made->host.index, only_this));
    CNI_TRY(nl::set_link_up(host, made->container, true));
    return nl::require_link(host, name);
}

// Fill in gateways (isGateway) and the default routes (isDefaultGateway) like calcGateways.
std::vector<net::IpNet> plan_gateways(const BridgeConf& c, CniResult& result) {
    std::vector<net::IpNet> gws;
    bool default_found[2] = {false, false};
    for (auto& ip : result.ips) {
        ip.interface = 2;
        bool v4 = ip.address.ip.is_v4();
        if (!ip.gateway && c.is_gateway) ip.gateway = ip.address.network().next();
        if (c.is_default_gateway && !default_found[v4]) {
            net::IpNet def = *net::IpNet::parse(v4 ? "0.0.0.0/0" : "::/0");
            for (auto& r : result.routes)
                if (r.gw && r.dst == def) default_found[v4] = true;
            if (!default_found[v4]) {
                result.routes.push_back(Route{def, ip.gateway, 0, 0, 0, std::nullopt, std::nullopt});
                default_found[v4] = true;
            }
        }
        if (c.is_gateway) gws.push_back(net::IpNet{*ip.gateway, ip.address.prefix, ip.address.mask_bits});
    }
    return gws;
}

// Wait until the host end of the veth is operationally up, as the reference polls it (at 0, 50,
// 500, 1000 and 1000 ms), but told by `watch` when there is one: no RTNL request on the way.
// Polled as the reference does if the watch fails (notifications lost).
Status wait_port_up(const nl::Socket& host, const nl::LinkWatch* watch, const nl::LinkInfo& port) {
    std::vector<int> delays = {0, 50, 500, 1000, 1000};
    if (watch) {
        auto up = watch->wait_oper_up(port.index, std::chrono::milliseconds(50 + 500 + 1000 + 1000));
        if (up && *up) return {};
        if (up) delays = {0};  // it waited as long: one last look, for the state to report
    }
    int state = IF_OPER_UNKNOWN;
    for (int delay : delays) {
        std::this_thread::sleep_for(std::chrono::milliseconds(delay));
        CNI_TRY_ASSIGN(auto now, nl::require_link(host, port.name));
        if (now.oper_state == IF_OPER_UP) return {};
        state = now.oper_state;
    }
    static const char* names[] = {"unknown", "notpresent", "down", "lowerlayerdown", "testing", "dormant", "up"};
    return fail(std::string("bridge port in error state: ") + (state >= 0 && state <= 6 ? names[state] : "unknown"));
}

// The container's veth, its host end made a port of the bridge (created if missing), with
// hairpin, isolation, the port's VLANs and the MAC spoof check; the veth's removal registered
// with `undo` (the bridge is shared and stays).
struct Port {
    nl::LinkInfo bridge;
    iface::VethPair veth;
};

// The bridge's lock, /run/cni/bridge/<bridge>.lock (root's folder; the name only picks the file):
// with removeWhenUnused, ADD holds it from finding the bridge until its port is on it, and DEL
// while it finds the bridge without ports and removes it, so an ADD never finds the bridge half
// removed.
// A name no link can have shares one lock file (ADD then fails on it, DEL has nothing to remove).
// Beside it, <bridge>.made holds the index of the bridge an ADD made and that ADD's network name:
// DEL removes only that one, for that network, never a bridge the node, another network or
// another program made. Without removeWhenUnused neither file is made; an ADD without it still
// takes the lock while <bridge>.made exists, so another network's DEL cannot remove the bridge
// under it (networks sharing a bridge should agree on the key: docs/compatibility.md, bridge).
struct BridgeLock {
    os::Dir dir;
    os::FileLock lock;
    std::string name;  // the bridge's, or "_" for a name no link can have
};

// The name of the bridge's files: the bridge's, or "_" for a name no link can have.
std::string lock_name(const std::string& configured) {
    std::string bridge = configured.substr(0, configured.find('\0'));  // the link the kernel names so
    bool link_name = !bridge.empty() && bridge.size() < IFNAMSIZ && bridge.find('/') == std::string::npos && bridge != "." && bridge != "..";
    return link_name ? bridge : "_";
}

Result<BridgeLock> lock_bridge(const std::string& configured) {
    std::string name = lock_name(configured);
    CNI_TRY_ASSIGN(auto records, os::open_records("bridge", true));
    CNI_TRY_ASSIGN(auto lock, os::FileLock::acquire_in(*records, name + ".lock"));
    return BridgeLock{std::move(*records), std::move(lock), name};
}

// The bridge's lock when an ADD with removeWhenUnused made it (its .made note, and so its lock
// file, exist), else none; it creates no folder or file.
Result<std::optional<BridgeLock>> lock_bridge_if_made(const std::string& configured) {
    std::string name = lock_name(configured);
    CNI_TRY_ASSIGN(auto records, os::open_records("bridge", false));
    if (!records) return std::optional<BridgeLock>{};
    CNI_TRY_ASSIGN(auto note, records->read_if_exists(name + ".made"));
    if (!note) return std::optional<BridgeLock>{};
    CNI_TRY_ASSIGN(auto lock, os::FileLock::acquire_in(*records, name + ".lock"));
    return std::optional<BridgeLock>(BridgeLock{std::move(*records), std::move(lock), name});
}

// The note of the bridge an ADD made: its index, a newline, the network's name.
std::string made_note(int index, const std::string& network) { return std::to_string(index) + "\n" + network; }

// Whether the bridge of this index is the one an ADD of this network made under this name.
bool made_by(const BridgeLock& l, int index, const std::string& network) {
    auto text = l.dir.read_if_exists(l.name + ".made", 64 + network.size());
    return text && *text && **text == made_note(index, network);
}

Result<Port> attach_port(const Request& r, const BridgeConf& c, const iface::HostSockets& io, const os::SysctlDir& ipv6_conf,
                         Rollback& undo) {
    std::optional<BridgeLock> lock;
    if (c.remove_when_unused) CNI_TRY_ASSIGN(lock, lock_bridge(c.bridge));
    else CNI_TRY_ASSIGN(lock, lock_bridge_if_made(c.bridge));
    CNI_TRY_ASSIGN(auto before, nl::find_link(io.host, c.bridge));
    auto bridge = ensure_bridge(io.host, ipv6_conf, c);
    if (!bridge) return fail("failed to create bridge \"" + c.bridge + "\": " + bridge.error().msg);
    if (c.remove_when_unused && !before) CNI_TRY(lock->dir.write_atomic(lock->name + ".made", made_note(bridge->index, c.net.name), 0600));
    CNI_TRY_ASSIGN(auto veth, iface::setup_veth(io.container, io.host, io.host_ns, ipv6_conf, r.ifname, c.mtu, c.mac));
    undo.push([&container = io.container, &r] { (void)nl::delete_link(container, r.ifname); });
    const nl::LinkInfo& port = veth.host;
    CNI_TRY(nl::set_master(io.host, port, bridge->index));
    if (c.hairpin) CNI_TRY(nl::set_bridge_port_flag(io.host, port.index, port.name, nl::PortFlag::hairpin, true));
    if (c.port_isolation) CNI_TRY(nl::set_bridge_port_flag(io.host, port.index, port.name, nl::PortFlag::isolated, true));
    CNI_TRY(apply_port_vlans(io.host, bridge->name, port.index, c.vlans));
    if (c.mac_spoof_check)
        CNI_TRY(mac_spoof_guard().setup(fw::Driver::nftables, {r.container_id, r.ifname, port.name, veth.container.mac}, undo));
    return Port{*bridge, veth};
}

// enabledad: the container interface's IPv6 duplicate address detection (enhanced), or none.
Status set_dad(const os::Netns& ns, const std::string& ifname, bool enable) {
    CNI_TRY_ASSIGN(auto guard, os::NetnsGuard::enter(ns));
    auto v6 = os::SysctlDir::open("net/ipv6/conf/" + ifname);
    if (enable) {
        (void)v6.set("enhanced_dad", "1");
        (void)v6.set("accept_dad", "1");
    } else {
        (void)v6.set("accept_dad", "0");
    }
    return {};
}

// The gateway addresses on their link (gateway_link: listed in the result when it is not the
// bridge), its MAC and the bridge's pinned when an address was added (pin_mac).
Status add_gateways(const iface::HostSockets& io, const os::SysctlDir& ipv6_conf, const BridgeConf& c, const nl::LinkInfo& br,
                    const std::vector<net::IpNet>& gateways, CniResult& result) {
    CNI_TRY_ASSIGN(auto gw_link, gateway_link(io.host, io.host_ns, ipv6_conf, br, c));
    if (gw_link.index != br.index) result.interfaces.push_back(iface::host_interface(gw_link));
    bool added = false;
    for (auto& gw : gateways) {
        CNI_TRY_ASSIGN(bool added_this, ensure_gateway_addr(io.host, gw_link, gw, c.force_address));
        added = added || added_this;
    }
    if (!added) return {};
    CNI_TRY(pin_mac(io.host, gw_link));
    // Unlike the reference, also pin the bridge when the gateway is on "<bridge>.<vlan>".
    if (gw_link.index != br.index) CNI_TRY(pin_mac(io.host, br));
    return {};
}

// With IPAM: its result (the gateways and default routes planned), DAD and arp_notify on the
// container end, the gateways, forwarding and ipMasq.
Status add_addresses(const Context& ctx, const BridgeConf& c, const iface::HostSockets& io, const os::SysctlDir& ipv6_conf,
                     const Port& port, CniResult& result, Rollback& undo) {
    CNI_TRY_ASSIGN(auto ipam_result, ipam::allocate(ctx, c.net.ipam_type, undo));
    result.ips = ipam_result.ips;
    result.routes = ipam_result.routes;
    result.dns = ipam_result.dns;
    auto gateways = plan_gateways(c, result);
    CNI_TRY(set_dad(io.ns, ctx.req.ifname, c.enable_dad));
    (void)nl::set_ipv4_conf(io.container, port.veth.container, IPV4_DEVCONF_ARP_NOTIFY, 1);  // net.ipv4.conf.<if>.arp_notify
    // The host side before the container end goes up: from then on every RTNL request waits
    // behind the kernel's IPv6 start-up of that port (link_watch.hpp). Should the container's
    // configuration then fail, the shared bridge keeps its gateway address, as it does in the
    // reference when a later step fails.
    if (!gateways.empty()) CNI_TRY(add_gateways(io, ipv6_conf, c, port.bridge, gateways, result));
    if (c.is_gateway) CNI_TRY(iface::enable_forwarding(io.host, result.ips));
    if (c.ip_masq) CNI_TRY(iface::masquerade_add(ctx, c.net, c.ip_masq_backend, result.ips, undo));
    return {};
}

// The container end: skipIPv6LinkLocal, then, unless disableContainerInterface, the result on it
// (or only up, without IPAM) and the port awaited up.
Status bring_up_container_end(const BridgeConf& c, const iface::HostSockets& io, const Port& port, const CniResult& result) {
    const nl::LinkInfo& end = port.veth.container;
    if (c.skip_ipv6_link_local) CNI_TRY(iface::skip_ipv6_link_local(io.container, end, result.ips));
    if (c.disable_container_interface) return {};
    auto watch = nl::LinkWatch::open();  // before the container end goes up; polled without it
    if (!c.net.ipam_type.empty()) CNI_TRY(iface::configure_iface(io.container, io.ns, end, result));
    else CNI_TRY(nl::set_link_up(io.container, end, true));
    return wait_port_up(io.host, watch ? &*watch : nullptr, port.veth.host);
}

Result<CniResult> bridge_add(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_bridge_conf(ctx.req));
    CNI_TRY(check_for_add(c));
    CNI_TRY_ASSIGN(auto io, iface::open_host_and_container(ctx));
    auto ipv6_conf = os::SysctlDir::open("net/ipv6/conf");
    Rollback undo;
    CNI_TRY_ASSIGN(auto port, attach_port(ctx.req, c, io, ipv6_conf, undo));
    CniResult result;
    result.interfaces = {Interface{}, iface::host_interface(port.veth.host),
                         iface::container_interface(ctx.req, port.veth.container.mac)};
    if (!c.net.ipam_type.empty()) CNI_TRY(add_addresses(ctx, c, io, ipv6_conf, port, result, undo));
    // The bridge's MAC as it ended up (it follows the lowest port MAC until pinned).
    CNI_TRY_ASSIGN(auto br_now, nl::require_link(io.host, port.bridge.name));
    result.interfaces[0] = iface::host_interface(br_now);
    CNI_TRY(bring_up_container_end(c, io, port, result));
    if (!c.net.dns.empty()) result.dns = c.net.dns;
    undo.dismiss();
    return result;
}

// Whether `name` is "<bridge>.<vlan>" for a vlan of 1..4094 written as gateway_link writes it.
bool names_vlan_gateway(const std::string& name, const std::string& bridge) {
    if (!name.starts_with(bridge + ".")) return false;
    std::string_view digits = std::string_view(name).substr(bridge.size() + 1);
    int vlan = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), vlan);
    return ec == std::errc{} && end == digits.data() + digits.size() && digits[0] != '0' && vlan >= 1 && vlan <= 4094;
}

// Whether a port of the bridge is the host end of one of its "<bridge>.<vlan>" gateway veths:
// both ends in the host's namespace (a pod's port has its peer, and the peer's index, in the
// pod's), each the other's peer, the other end so named. Any other port is in use.
Result<bool> is_vlan_gateway_port(const nl::Socket& host, const std::string& bridge, const nl::LinkInfo& port) {
    if (port.kind != "veth" || port.link_netnsid) return false;
    CNI_TRY_ASSIGN(auto peer, nl::find_link(host, port.peer_index));
    return peer && peer->kind == "veth" && !peer->link_netnsid && peer->peer_index == port.index &&
           names_vlan_gateway(peer->name, bridge);
}

// removeWhenUnused: under the bridge's lock, the bridge an ADD made goes (its addresses and routes
// with it) when no port is left on it but its own <bridge>.<vlan> gateway veths, which go first.
Status remove_if_unused(const std::string& bridge, const std::string& network) {
    CNI_TRY_ASSIGN(auto lock, lock_bridge(bridge));
    CNI_TRY_ASSIGN(auto host, nl::Socket::open());
    CNI_TRY_ASSIGN(auto br, nl::find_link(host, bridge));
    if (!br || br->kind != "bridge" || !made_by(lock, br->index, network)) return {};
    CNI_TRY_ASSIGN(auto ports, nl::ports_of(host, br->index));
    for (auto& p : ports) {
        CNI_TRY_ASSIGN(bool gateway, is_vlan_gateway_port(host, bridge, p));
        if (!gateway) return {};
    }
    for (auto& p : ports) CNI_TRY(nl::delete_link(host, p.name));
    CNI_TRY(nl::delete_link(host, bridge));
    lock.dir.remove(lock.name + ".made");
    return {};
}

Status bridge_del(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_bridge_conf(ctx.req));
    const Request& r = ctx.req;
    CNI_TRY(iface::remove_container_link(ctx));
    if (!c.net.ipam_type.empty()) CNI_TRY(ipam::delegate_del(ctx, c.net.ipam_type, r.config));
    if (c.mac_spoof_check)
        if (auto st = mac_spoof_guard().teardown_all({r.container_id, r.ifname, {}, {}}); !st)
            ctx.warn(st.error().msg);  // as the reference: printed only
    if (c.ip_masq) CNI_TRY(iface::masquerade_del(ctx, c.net));
    if (c.remove_when_unused) CNI_TRY(remove_if_unused(c.bridge, c.net.name));
    return {};
}

Status bridge_check(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_bridge_conf(ctx.req));
    const Request& r = ctx.req;
    CNI_TRY(ipam::check_of_optional_ipam(ctx, c.net.ipam_type));
    CNI_TRY_ASSIGN(auto prev, require_prev_result(c.net, "Required prevResult missing"));
    CNI_TRY_ASSIGN(auto host, nl::Socket::open());
    CNI_TRY_ASSIGN(auto br, nl::find_link(host, c.bridge));
    if (!br) return fail("bridge: Failed to find bridge " + c.bridge);
    if (br->kind != "bridge") return fail("\"" + c.bridge + "\" already exists but is not a bridge");
    const Interface* br_prev = nullptr;
    for (auto& i : prev.interfaces)
        if (i.name == c.bridge && i.sandbox.empty()) br_prev = &i;
    if (br_prev && !br_prev->mac.empty() && br_prev->mac != br->mac)
        return fail("Bridge " + c.bridge + " Mac " + br_prev->mac + " doesn't match " + br->mac);
    if (c.promisc != ((br->flags & IFF_PROMISC) != 0)) return fail("Bridge " + c.bridge + " promisc mode is not as configured");
    CNI_TRY_ASSIGN(auto io, iface::open_container(ctx));
    auto a_port = [&](const nl::LinkInfo& link) -> Status {
        CNI_TRY_ASSIGN(auto peer, nl::find_link(host, link.peer_index));
        if (!peer || peer->master != br->index) return fail("bridge: the peer of " + r.ifname + " is not a port of " + c.bridge);
        return {};
    };
    CNI_TRY_ASSIGN(auto nets, iface::check_interface(io.container, r, prev, {"veth", c.skip_ipv6_link_local, a_port}));
    if (c.ip_masq) CNI_TRY(iface::masquerade_check(ctx, c.net, c.ip_masq_backend, nets));
    if (c.mac_spoof_check) CNI_TRY(mac_spoof_guard().check(fw::Driver::nftables, {r.container_id, r.ifname, {}, {}}));
    return {};
}

Status bridge_status(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_bridge_conf(ctx.req));
    return iface::masquerade_and_ipam_status(ctx, c.net, c.ip_masq, c.ip_masq_backend);
}

Status bridge_gc(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_bridge_conf(ctx.req));
    return iface::gc_masquerade_and_ipam(ctx, c.net, c.ip_masq);
}

constexpr auto kBridgeKeyDocs = docs_of(kBridgeKeys);

}  // namespace

extern const Applet bridge_applet{
    .name = "bridge",
    .kind = AppletKind::main,
    .summary = "a host bridge with one veth per container",
    .keys = kBridgeKeyDocs,
    .help = "ipam is optional (L2 when absent); dns replaces the IPAM result's. The container MAC comes from "
            "runtimeConfig mac, else args.cni.mac, else CNI_ARGS MAC.",
    .versions = kAllVersions,
    .add = bridge_add,
    .del = bridge_del,
    .check = bridge_check,
    .status = bridge_status,
    .gc = bridge_gc,
};

}  // namespace cni::bridge
