// SPDX-License-Identifier: Apache-2.0
// Links (rtnetlink RTM_*LINK) as plain values, and the operations the applets compose: find,
// create per kind, change (up, mtu, mac, master, name, namespace, promisc), delete. "Not found"
// is part of the signature (docs/design.md, principle 5): find_link returns nullopt and delete_link
// returns false for a missing link, so DEL paths need no errno matching.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/nl/socket.hpp"

namespace cni::nl {

struct LinkInfo {
    int index = 0;
    std::string name;
    std::string kind;     // "veth", "bridge", ... ("" for kinds without IFLA_INFO_KIND, e.g. lo)
    unsigned flags = 0;   // IFF_*
    int mtu = 0;
    int txqlen = 0;
    std::string mac;      // lowercase, colon separated
    int master = 0;       // ifindex of the master, 0 if none
    int peer_index = 0;   // IFLA_LINK: a veth's peer (in its own namespace)
    std::optional<int> link_netnsid;  // IFLA_LINK_NETNSID: that namespace's id here (netns_id), if not this one
    int oper_state = 0;   // IF_OPER_*
    std::uint32_t macvlan_mode = 0;  // MACVLAN_MODE_* for a macvlan
    int vlan_id = -1;                // 802.1Q id for a vlan
    int ipvlan_mode = -1;            // IPVLAN_MODE_* for an ipvlan
    std::uint32_t vrf_table = 0;     // a vrf's routing table
    std::string alias;               // IFLA_IFALIAS
    bool up() const;
};

// Attributes common to every new link.
struct NewLink {
    std::string name;
    std::int64_t mtu = 0;  // a config's Go int: 0 or less keeps the kernel's; past 32 bits refused
    std::string mac;
    int master = 0;
    int netns_fd = -1;  // create it directly in this namespace
};

Result<std::optional<LinkInfo>> find_link(const Socket& s, const std::string& name);
Result<std::optional<LinkInfo>> find_link(const Socket& s, int index);
Result<LinkInfo> require_link(const Socket& s, const std::string& name);  // "Link not found" otherwise

// Creation; the error names the kind and the name: "creating veth eth0: File exists (...)".
Status add_veth(const Socket& s, const NewLink& self, const NewLink& peer);  // txqueuelen 0, like Go netlink
Status add_bridge(const Socket& s, const NewLink& attrs, bool vlan_filtering);
Status add_dummy(const Socket& s, const NewLink& attrs);
Status add_ifb(const Socket& s, const NewLink& attrs);  // an intermediate functional block (bandwidth's egress)
// A link of `kind` on `parent` (IFLA_LINK), with IFLA_INFO_DATA written by `info_data`: the
// general form the kinds libnl cannot fully describe go through (macvlan's bcqueuelen, ...).
Status add_link_with_info(const Socket& s, const NewLink& attrs, std::string_view kind, int parent,
                          const std::function<Status(nl_msg*)>& info_data);

// macvlan: MACVLAN_MODE_* and an optional broadcast queue length (kernel >= 5.11).
Status add_macvlan(const Socket& s, const NewLink& attrs, int parent, std::uint32_t mode, std::uint32_t bc_queue_len);
std::optional<std::uint32_t> macvlan_mode_from_name(std::string_view name);  // "" -> bridge
std::string macvlan_mode_name(std::uint32_t mode);

Status add_vlan(const Socket& s, const NewLink& attrs, int parent, int vlan_id);
// ipvlan: IPVLAN_MODE_* ("l2", "l3", "l3s").
Status add_ipvlan(const Socket& s, const NewLink& attrs, int parent, int mode);
std::optional<int> ipvlan_mode_from_name(std::string_view name);  // "" -> l2
// A VRF (l3mdev) bound to routing table `table`.
Status add_vrf(const Socket& s, const NewLink& attrs, std::uint32_t table);
std::string ipvlan_mode_name(int mode);

Status set_link_up(const Socket& s, const LinkInfo& link, bool up);
// The link once the kernel's link watcher has marked it running (IFF_RUNNING), polled for up
// to `timeout`; as it is then if it never does (no carrier). Until then a just-raised link's
// queue discards what is sent.
Result<LinkInfo> wait_until_running(const Socket& s, const std::string& name, std::chrono::milliseconds timeout);
// One of the link's IPv4 settings (IPV4_DEVCONF_*, e.g. ARP_NOTIFY) as the sysctl
// net.ipv4.conf.<link>.* sets it, without a /proc/sys lookup (see os::SysctlDir).
Status set_ipv4_conf(const Socket& s, const LinkInfo& link, unsigned id, std::uint32_t value);
// The link's IPv6 address generation mode (IN6_ADDR_GEN_MODE_*, ip link's addrgenmode); false
// when the kernel has no IPv6 at all (booted with ipv6.disable=1).
Result<bool> set_ipv6_addr_gen_mode(const Socket& s, const LinkInfo& link, std::uint8_t mode);
Status set_mtu(const Socket& s, const LinkInfo& link, std::int64_t mtu);
Status set_mac(const Socket& s, const LinkInfo& link, const std::string& mac);
Status set_master(const Socket& s, const LinkInfo& link, int master_index);  // 0 releases it
Status set_promisc(const Socket& s, const LinkInfo& link, bool on);
Status set_allmulti(const Socket& s, const LinkInfo& link, bool on);
Status set_txqlen(const Socket& s, const LinkInfo& link, std::int64_t txqlen);
Status rename_link(const Socket& s, const LinkInfo& link, const std::string& name);
Status move_link(const Socket& s, const LinkInfo& link, int netns_fd);
Status set_alias(const Socket& s, const LinkInfo& link, const std::string& alias);  // "" clears it
// The link with this MAC, if any (host-device's hwaddr key).
Result<std::optional<LinkInfo>> find_link_by_mac(const Socket& s, const std::string& mac);

// Every link of the namespace.
Result<std::vector<LinkInfo>> list_links(const Socket& s);
// Every link whose master is `master_index`.
Result<std::vector<LinkInfo>> ports_of(const Socket& s, int master_index);

// Deletes by name; false when there was no such link. In a plugin call the kernel's wait after
// the removal is left to a child (detached_delete.hpp).
Result<bool> delete_link(const Socket& s, const std::string& name);
// The same for that very link (by its index, as found), whatever now has its name.
Result<bool> delete_link(const Socket& s, const LinkInfo& link);
// Deletes link `index` (called `name`, for messages) in this process, waiting for the kernel's
// answer; false when it was gone already.
Result<bool> delete_link_now(const Socket& s, int index, const std::string& name);

// The id the socket's namespace knows the namespace `netns_fd` by (RTM_GETNSID, `ip netns
// list-id`): what a link whose peer lives there carries as link_netnsid; nothing when it has none.
Result<std::optional<int>> netns_id(const Socket& s, int netns_fd);

// "vethXXXXXXXX" with 4 random bytes, as the reference names host-side veths.
std::string random_veth_name();

}  // namespace cni::nl
