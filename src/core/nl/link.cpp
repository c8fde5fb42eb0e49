// SPDX-License-Identifier: Apache-2.0
// Link lookup, creation and changes over libnl-route (see link.hpp).
#include "core/nl/link.hpp"

#include <net/if.h>
#include <netlink/errno.h>
#include <linux/if_link.h>
#include <linux/net_namespace.h>
#include <linux/rtnetlink.h>
#include <netlink/msg.h>
#include <netlink/route/link/inet.h>
#include <netlink/route/link/inet6.h>
#include <netlink/route/link/ipvlan.h>
#include <netlink/route/link/macvlan.h>
#include <netlink/route/link/vlan.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/link/vrf.h>

#include <cstdio>
#include <random>
#include <thread>

#include "core/go_num.hpp"
#include "core/libnl/ptr.hpp"
#include "core/nl/detached_delete.hpp"
#include "core/nl/nl_addr.hpp"
#include "core/os/fs.hpp"

namespace cni::nl {

bool LinkInfo::up() const { return (flags & IFF_UP) != 0; }

namespace {

int all_links(nl_sock* sk, nl_cache** out) { return rtnl_link_alloc_cache(sk, AF_UNSPEC, out); }

LinkInfo to_info(rtnl_link* l) {
    LinkInfo info;
    info.index = rtnl_link_get_ifindex(l);
    if (const char* n = rtnl_link_get_name(l)) info.name = n;
    if (const char* t = rtnl_link_get_type(l)) info.kind = t;
    info.flags = rtnl_link_get_flags(l);
    info.mtu = int(rtnl_link_get_mtu(l));
    info.txqlen = int(rtnl_link_get_txqlen(l));
    info.mac = mac_text(rtnl_link_get_addr(l));
    info.master = rtnl_link_get_master(l);
    info.peer_index = rtnl_link_get_link(l);
    if (std::int32_t id = -1; rtnl_link_get_link_netnsid(l, &id) == 0 && id >= 0) info.link_netnsid = id;
    info.oper_state = rtnl_link_get_operstate(l);
    if (info.kind == "macvlan") info.macvlan_mode = rtnl_link_macvlan_get_mode(l);
    if (info.kind == "vlan") info.vlan_id = rtnl_link_vlan_get_id(l);
    if (std::uint32_t table = 0; info.kind == "vrf" && rtnl_link_vrf_get_tableid(l, &table) == 0) info.vrf_table = table;
    if (std::uint16_t mode = 0; info.kind == "ipvlan" && rtnl_link_ipvlan_get_mode(l, &mode) == 0) info.ipvlan_mode = mode;
    if (const char* alias = rtnl_link_get_ifalias(l)) info.alias = alias;
    return info;
}

Result<std::optional<LinkInfo>> lookup(const Socket& s, int index, const char* name, const std::string& what) {
    rtnl_link* raw = nullptr;
    int err = rtnl_link_get_kernel(s.get(), index, name, &raw);
    libnl::LinkPtr link(raw);
    if (err == -NLE_NODEV || err == -NLE_OBJ_NOTFOUND) {
        (void)s.check(0, "");  // forget the kernel's complaint
        return std::optional<LinkInfo>{};
    }
    if (err < 0) return cni::Unexpected(s.error(err, "looking up link " + what));
    return std::optional<LinkInfo>(to_info(link.get()));
}

// A configured MTU or queue length (a Go int) as the kernel's u32, refused when it does not fit.
Result<std::uint32_t> link_u32(std::int64_t v, std::string_view what) {
    if (auto u = kernel_u32(v)) return *u;
    return fail("invalid " + std::string(what) + " " + std::to_string(v) + ": out of the kernel's range [0, 4294967295]");
}

Status apply(rtnl_link* l, const NewLink& a) {
    if (!a.name.empty()) rtnl_link_set_name(l, a.name.c_str());
    if (a.mtu > 0) {
        CNI_TRY_ASSIGN(auto mtu, link_u32(a.mtu, "MTU"));
        rtnl_link_set_mtu(l, mtu);
    }
    if (!a.mac.empty()) {
        CNI_TRY_ASSIGN(auto mac, mac_to_nl_addr(a.mac));
        rtnl_link_set_addr(l, mac.get());
    }
    if (a.master > 0) rtnl_link_set_master(l, a.master);
    if (a.netns_fd >= 0) rtnl_link_set_ns_fd(l, a.netns_fd);
    return {};
}

Status create(const Socket& s, rtnl_link* l, std::string_view kind, const std::string& name) {
    return s.check(rtnl_link_add(s.get(), l, NLM_F_CREATE | NLM_F_EXCL), "creating " + std::string(kind) + " " + name);
}

// RTM_NEWLINK on an existing link with only the attributes `fill` sets; a libnl return code
// in `tolerated` (0: none) counts as success and is handed back.
template <class Fill>
Result<int> change_tolerating(const Socket& s, const LinkInfo& link, std::string_view what, int tolerated, Fill&& fill) {
    libnl::LinkPtr orig(rtnl_link_alloc()), delta(rtnl_link_alloc());
    if (!orig || !delta) return fail("netlink: out of memory");
    rtnl_link_set_ifindex(orig.get(), link.index);
    rtnl_link_set_name(orig.get(), link.name.c_str());
    CNI_TRY(fill(delta.get()));
    int rc = rtnl_link_change(s.get(), orig.get(), delta.get(), 0);
    if (rc < 0 && rc == tolerated) return rc;
    CNI_TRY(s.check(rc, std::string(what) + " " + link.name));
    return 0;
}

template <class Fill>
Status change(const Socket& s, const LinkInfo& link, std::string_view what, Fill&& fill) {
    CNI_TRY(change_tolerating(s, link, what, 0, std::forward<Fill>(fill)));
    return {};
}

}  // namespace

Result<std::optional<LinkInfo>> find_link(const Socket& s, const std::string& name) { return lookup(s, 0, name.c_str(), name); }
Result<std::optional<LinkInfo>> find_link(const Socket& s, int index) { return lookup(s, index, nullptr, "#" + std::to_string(index)); }

Result<LinkInfo> require_link(const Socket& s, const std::string& name) {
    CNI_TRY_ASSIGN(auto l, find_link(s, name));
    if (!l) return fail("failed to find link " + name + ": Link not found");
    return *l;
}

Status add_veth(const Socket& s, const NewLink& self, const NewLink& peer) {
    libnl::LinkPtr veth(rtnl_link_veth_alloc());
    if (!veth) return fail("netlink: out of memory");
    libnl::LinkPtr p(rtnl_link_veth_get_peer(veth.get()));
    CNI_TRY(apply(veth.get(), self));
    CNI_TRY(apply(p.get(), peer));
    // Go netlink (and so the reference) creates both ends with txqueuelen 0.
    rtnl_link_set_txqlen(veth.get(), 0);
    rtnl_link_set_txqlen(p.get(), 0);
    // One tx and one rx queue per end, the number the kernel activates anyway. Left unset, the
    // kernel allocates one per CPU and, the device being registered already, cuts the active
    // count back to one with an expedited RCU grace period per end (veth_init_queues), which
    // was most of the veth's creation time here (bench/RESULTS.md).
    for (rtnl_link* end : {veth.get(), p.get()}) {
        rtnl_link_set_num_tx_queues(end, 1);
        rtnl_link_set_num_rx_queues(end, 1);
    }
    return create(s, veth.get(), "veth", self.name);
}

Status add_bridge(const Socket& s, const NewLink& attrs, bool vlan_filtering) {
    libnl::LinkPtr br(rtnl_link_alloc());
    if (!br) return fail("netlink: out of memory");
    CNI_TRY(s.check(rtnl_link_set_type(br.get(), "bridge"), "creating bridge " + attrs.name));
    CNI_TRY(apply(br.get(), attrs));
    CNI_TRY(create(s, br.get(), "bridge", attrs.name));
    if (!vlan_filtering) return {};
    // libnl 3.7 cannot set IFLA_BR_VLAN_FILTERING; the bridge's sysfs knob is the same switch.
    if (!os::write_file("/sys/class/net/" + attrs.name + "/bridge/vlan_filtering", "1", 0644)) {
        (void)delete_link(s, attrs.name);  // a new bridge without the filtering asked for is no use
        return fail("enabling vlan_filtering on bridge " + attrs.name + ": the kernel lacks VLAN-filtering bridges");
    }
    return {};
}

namespace {

// A link of a kind with no attributes of its own (dummy, ifb).
Status add_plain(const Socket& s, const NewLink& attrs, const char* kind) {
    libnl::LinkPtr l(rtnl_link_alloc());
    if (!l) return fail("netlink: out of memory");
    CNI_TRY(s.check(rtnl_link_set_type(l.get(), kind), std::string("creating ") + kind + " " + attrs.name));
    CNI_TRY(apply(l.get(), attrs));
    return create(s, l.get(), kind, attrs.name);
}

}  // namespace

Status add_dummy(const Socket& s, const NewLink& attrs) { return add_plain(s, attrs, "dummy"); }

Status add_ifb(const Socket& s, const NewLink& attrs) { return add_plain(s, attrs, "ifb"); }

Status add_link_with_info(const Socket& s, const NewLink& attrs, std::string_view kind, int parent,
                          const std::function<Status(nl_msg*)>& info_data) {
    std::string what = "creating " + std::string(kind) + " " + attrs.name;
    libnl::MsgPtr msg(nlmsg_alloc_simple(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL));
    if (!msg) return fail("netlink: out of memory");
    ifinfomsg ifi{};
    ifi.ifi_family = AF_UNSPEC;
    bool ok = nlmsg_append(msg.get(), &ifi, sizeof ifi, NLMSG_ALIGNTO) == 0 &&
              nla_put_string(msg.get(), IFLA_IFNAME, attrs.name.c_str()) == 0;
    if (ok && attrs.mtu > 0) {
        CNI_TRY_ASSIGN(auto mtu, link_u32(attrs.mtu, "MTU"));
        ok = nla_put_u32(msg.get(), IFLA_MTU, mtu) == 0;
    }
    if (ok) ok = nla_put_u32(msg.get(), IFLA_TXQLEN, 0) == 0;  // as Go netlink's LinkAdd sends
    if (ok && parent > 0) ok = nla_put_u32(msg.get(), IFLA_LINK, std::uint32_t(parent)) == 0;
    if (ok && attrs.master > 0) ok = nla_put_u32(msg.get(), IFLA_MASTER, std::uint32_t(attrs.master)) == 0;
    if (ok && attrs.netns_fd >= 0) ok = nla_put_u32(msg.get(), IFLA_NET_NS_FD, std::uint32_t(attrs.netns_fd)) == 0;
    if (ok && !attrs.mac.empty()) {
        CNI_TRY_ASSIGN(auto mac, mac_to_nl_addr(attrs.mac));
        ok = nla_put_addr(msg.get(), IFLA_ADDRESS, mac.get()) == 0;
    }
    nlattr* linkinfo = ok ? nla_nest_start(msg.get(), IFLA_LINKINFO) : nullptr;
    ok = linkinfo && nla_put_string(msg.get(), IFLA_INFO_KIND, std::string(kind).c_str()) == 0;
    nlattr* data = ok ? nla_nest_start(msg.get(), IFLA_INFO_DATA) : nullptr;
    if (!data) return fail(what + ": netlink message too large");
    CNI_TRY(info_data(msg.get()));
    nla_nest_end(msg.get(), data);
    nla_nest_end(msg.get(), linkinfo);
    return s.check(nl_send_sync(s.get(), msg.release()), what);  // nl_send_sync frees the message
}

Status add_macvlan(const Socket& s, const NewLink& attrs, int parent, std::uint32_t mode, std::uint32_t bc_queue_len) {
    return add_link_with_info(s, attrs, "macvlan", parent, [&](nl_msg* msg) -> Status {
        if (nla_put_u32(msg, IFLA_MACVLAN_MODE, mode) < 0) return fail("netlink: message too large");
        if (bc_queue_len && nla_put_u32(msg, IFLA_MACVLAN_BC_QUEUE_LEN, bc_queue_len) < 0)
            return fail("netlink: message too large");
        return {};
    });
}

std::optional<std::uint32_t> macvlan_mode_from_name(std::string_view name) {
    if (name.empty() || name == "bridge") return MACVLAN_MODE_BRIDGE;
    if (name == "private") return MACVLAN_MODE_PRIVATE;
    if (name == "vepa") return MACVLAN_MODE_VEPA;
    if (name == "passthru") return MACVLAN_MODE_PASSTHRU;
    return std::nullopt;
}

std::string macvlan_mode_name(std::uint32_t mode) {
    switch (mode) {
    case MACVLAN_MODE_BRIDGE: return "bridge";
    case MACVLAN_MODE_PRIVATE: return "private";
    case MACVLAN_MODE_VEPA: return "vepa";
    case MACVLAN_MODE_PASSTHRU: return "passthru";
    default: return "mode " + std::to_string(mode);
    }
}

Status add_vlan(const Socket& s, const NewLink& attrs, int parent, int vlan_id) {
    return add_link_with_info(s, attrs, "vlan", parent, [&](nl_msg* msg) -> Status {
        if (nla_put_u16(msg, IFLA_VLAN_ID, std::uint16_t(vlan_id)) < 0) return fail("netlink: message too large");
        return {};
    });
}

Status add_ipvlan(const Socket& s, const NewLink& attrs, int parent, int mode) {
    return add_link_with_info(s, attrs, "ipvlan", parent, [&](nl_msg* msg) -> Status {
        if (nla_put_u16(msg, IFLA_IPVLAN_MODE, std::uint16_t(mode)) < 0) return fail("netlink: message too large");
        return {};
    });
}

Status add_vrf(const Socket& s, const NewLink& attrs, std::uint32_t table) {
    return add_link_with_info(s, attrs, "vrf", 0, [&](nl_msg* msg) -> Status {
        if (nla_put_u32(msg, IFLA_VRF_TABLE, table) < 0) return fail("netlink: message too large");
        return {};
    });
}

std::optional<int> ipvlan_mode_from_name(std::string_view name) {
    if (name.empty() || name == "l2") return IPVLAN_MODE_L2;
    if (name == "l3") return IPVLAN_MODE_L3;
    if (name == "l3s") return IPVLAN_MODE_L3S;
    return std::nullopt;
}

std::string ipvlan_mode_name(int mode) {
    switch (mode) {
    case IPVLAN_MODE_L2: return "l2";
    case IPVLAN_MODE_L3: return "l3";
    case IPVLAN_MODE_L3S: return "l3s";
    default: return "mode " + std::to_string(mode);
    }
}

Status set_link_up(const Socket& s, const LinkInfo& link, bool up) {
    return change(s, link, up ? "setting up" : "setting down", [&](rtnl_link* d) -> Status {
        if (up) rtnl_link_set_flags(d, IFF_UP);
        else rtnl_link_unset_flags(d, IFF_UP);
        return {};
    });
}

Result<LinkInfo> wait_until_running(const Socket& s, const std::string& name, std::chrono::milliseconds timeout) {
    constexpr auto kPoll = std::chrono::milliseconds(10);
    CNI_TRY_ASSIGN(auto link, require_link(s, name));
    for (auto waited = std::chrono::milliseconds(0); !(link.flags & IFF_RUNNING) && waited < timeout; waited += kPoll) {
        std::this_thread::sleep_for(kPoll);
        CNI_TRY_ASSIGN(link, require_link(s, name));
    }
    return link;
}

Status set_ipv4_conf(const Socket& s, const LinkInfo& link, unsigned id, std::uint32_t value) {
    return change(s, link, "setting IPv4 setting " + std::to_string(id) + " of", [&](rtnl_link* d) -> Status {
        return s.check(rtnl_link_inet_set_conf(d, id, value), "netlink");
    });
}

Result<bool> set_ipv6_addr_gen_mode(const Socket& s, const LinkInfo& link, std::uint8_t mode) {
    CNI_TRY_ASSIGN(int rc, change_tolerating(s, link, "setting the IPv6 address generation mode of", -NLE_AF_NOSUPPORT,
                                             [&](rtnl_link* d) -> Status {
                                                 return s.check(rtnl_link_inet6_set_addr_gen_mode(d, mode), "netlink");
                                             }));
    return rc == 0;
}

namespace {

// Sets or clears one IFF_ flag, called `name` in errors ("setting promisc on ...").
Status set_flag(const Socket& s, const LinkInfo& link, unsigned flag, std::string_view name, bool on) {
    return change(s, link, (on ? "setting " : "clearing ") + std::string(name) + " on", [&](rtnl_link* d) -> Status {
        if (on) rtnl_link_set_flags(d, flag);
        else rtnl_link_unset_flags(d, flag);
        return {};
    });
}

// Sets a 32-bit attribute, called `name`, to a Go int that must fit it (link_u32).
Status set_u32(const Socket& s, const LinkInfo& link, std::string what, std::int64_t value, const char* name,
               void (*set)(rtnl_link*, unsigned int)) {
    return change(s, link, what, [&](rtnl_link* d) -> Status {
        CNI_TRY_ASSIGN(auto u32, link_u32(value, name));
        set(d, u32);
        return {};
    });
}

}  // namespace

Status set_mtu(const Socket& s, const LinkInfo& link, std::int64_t mtu) {
    return set_u32(s, link, "setting the MTU " + std::to_string(mtu) + " of", mtu, "MTU", rtnl_link_set_mtu);
}

Status set_mac(const Socket& s, const LinkInfo& link, const std::string& mac) {
    NewLink attrs;
    attrs.mac = mac;
    return change(s, link, "setting MAC " + mac + " on", [&](rtnl_link* d) { return apply(d, attrs); });
}

Status set_master(const Socket& s, const LinkInfo& link, int master_index) {
    return change(s, link, "setting the master of", [&](rtnl_link* d) -> Status {
        rtnl_link_set_master(d, master_index);
        return {};
    });
}

Status set_promisc(const Socket& s, const LinkInfo& link, bool on) { return set_flag(s, link, IFF_PROMISC, "promisc", on); }
Status set_allmulti(const Socket& s, const LinkInfo& link, bool on) { return set_flag(s, link, IFF_ALLMULTI, "allmulticast", on); }

Status set_txqlen(const Socket& s, const LinkInfo& link, std::int64_t txqlen) {
    return set_u32(s, link, "setting txqueuelen " + std::to_string(txqlen) + " on", txqlen, "transmit queue length",
                   rtnl_link_set_txqlen);
}

Status rename_link(const Socket& s, const LinkInfo& link, const std::string& name) {
    return change(s, link, "renaming to " + name + ":", [&](rtnl_link* d) -> Status {
        rtnl_link_set_name(d, name.c_str());
        return {};
    });
}

Status move_link(const Socket& s, const LinkInfo& link, int netns_fd) {
    return change(s, link, "moving to another namespace:", [&](rtnl_link* d) -> Status {
        rtnl_link_set_ns_fd(d, netns_fd);
        return {};
    });
}

Result<std::vector<LinkInfo>> list_links(const Socket& s) {
    CNI_TRY_ASSIGN(auto cache, s.dump(all_links, "listing links"));
    std::vector<LinkInfo> out;
    for (nl_object* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o))
        out.push_back(to_info(reinterpret_cast<rtnl_link*>(o)));
    return out;
}

Result<std::vector<LinkInfo>> ports_of(const Socket& s, int master_index) {
    CNI_TRY_ASSIGN(auto links, list_links(s));
    std::erase_if(links, [master_index](const LinkInfo& l) { return l.master != master_index; });
    return links;
}

Status set_alias(const Socket& s, const LinkInfo& link, const std::string& alias) {
    return change(s, link, "setting the alias of", [&](rtnl_link* d) -> Status {
        rtnl_link_set_ifalias(d, alias.c_str());
        return {};
    });
}

Result<std::optional<LinkInfo>> find_link_by_mac(const Socket& s, const std::string& mac) {
    CNI_TRY_ASSIGN(auto cache, s.dump(all_links, "listing links"));
    for (nl_object* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o)) {
        auto info = to_info(reinterpret_cast<rtnl_link*>(o));
        if (info.mac == mac) return std::optional<LinkInfo>(info);
    }
    return std::optional<LinkInfo>{};
}

Result<bool> delete_link(const Socket& s, const std::string& name) {
    CNI_TRY_ASSIGN(auto link, find_link(s, name));
    if (!link) return false;
    return delete_link(s, *link);
}

Result<bool> delete_link(const Socket& s, const LinkInfo& link) {
    if (auto detached = delete_link_detached(s, link.index, link.name)) return std::move(*detached);
    return delete_link_now(s, link.index, link.name);
}

Result<bool> delete_link_now(const Socket& s, int index, const std::string& name) {
    libnl::LinkPtr l(rtnl_link_alloc());
    if (!l) return fail("netlink: out of memory");
    rtnl_link_set_ifindex(l.get(), index);
    int err = rtnl_link_delete(s.get(), l.get());
    if (err == -NLE_NODEV || err == -NLE_OBJ_NOTFOUND) return false;  // gone meanwhile
    CNI_TRY(s.check(err, "deleting link " + name));
    return true;
}

Result<std::optional<int>> netns_id(const Socket& s, int netns_fd) {
    const std::string what = "asking for a namespace's id";
    libnl::MsgPtr msg(nlmsg_alloc_simple(RTM_GETNSID, 0));
    rtgenmsg header{};
    header.rtgen_family = AF_UNSPEC;
    if (!msg || nlmsg_append(msg.get(), &header, sizeof header, NLMSG_ALIGNTO) < 0 ||
        nla_put_u32(msg.get(), NETNSA_FD, std::uint32_t(netns_fd)) < 0)
        return fail(what + ": out of memory");
    std::optional<int> id;
    CNI_TRY(s.ask(msg.get(), [&](nl_msg* answer) {
        nlmsghdr* hdr = nlmsg_hdr(answer);
        if (hdr->nlmsg_type != RTM_NEWNSID) return;
        nlattr* nsid = nlmsg_find_attr(hdr, sizeof(rtgenmsg), NETNSA_NSID);
        if (nsid && nla_len(nsid) >= 4 && nla_get_s32(nsid) >= 0) id = nla_get_s32(nsid);
    }, what));
    return id;
}

std::string random_veth_name() {
    std::random_device rd;
    char buf[16];
    std::snprintf(buf, sizeof buf, "veth%08x", rd());
    return buf;
}

}  // namespace cni::nl
