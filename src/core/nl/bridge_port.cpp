// SPDX-License-Identifier: Apache-2.0
// Bridge port flags and VLANs over raw rtnetlink (see bridge_port.hpp).
#include "core/nl/bridge_port.hpp"

#include <linux/if_bridge.h>
#include <linux/rtnetlink.h>
#include <netlink/msg.h>

#include <charconv>

#include "core/libnl/ptr.hpp"
#include "core/os/fs.hpp"
#include "core/strings.hpp"

namespace cni::nl {
namespace {

// An AF_BRIDGE link message about one port, ready for its attributes.
libnl::MsgPtr port_msg(int type, int port_index) {
    libnl::MsgPtr msg(nlmsg_alloc_simple(type, 0));
    ifinfomsg ifi{};
    ifi.ifi_family = AF_BRIDGE;
    ifi.ifi_index = port_index;
    if (msg && nlmsg_append(msg.get(), &ifi, sizeof ifi, NLMSG_ALIGNTO) != 0) msg.reset();
    return msg;
}

Status send_vlan_msg(const Socket& s, int type, int port_index, VidRange vids, std::uint16_t flags,
                     const std::string& what) {
    auto msg = port_msg(type, port_index);
    if (!msg) return fail("netlink: out of memory");
    nlattr* spec = nla_nest_start(msg.get(), IFLA_AF_SPEC);
    bool ok = spec && nla_put_u16(msg.get(), IFLA_BRIDGE_FLAGS, BRIDGE_FLAGS_MASTER) == 0;
    if (vids.first == vids.last) {
        bridge_vlan_info info{flags, vids.first};
        ok = ok && nla_put(msg.get(), IFLA_BRIDGE_VLAN_INFO, sizeof info, &info) == 0;
    } else {
        bridge_vlan_info begin{std::uint16_t(flags | BRIDGE_VLAN_INFO_RANGE_BEGIN), vids.first};
        bridge_vlan_info end{std::uint16_t(flags | BRIDGE_VLAN_INFO_RANGE_END), vids.last};
        ok = ok && nla_put(msg.get(), IFLA_BRIDGE_VLAN_INFO, sizeof begin, &begin) == 0 &&
             nla_put(msg.get(), IFLA_BRIDGE_VLAN_INFO, sizeof end, &end) == 0;
    }
    if (!ok) return fail(what + ": netlink message too large");
    nla_nest_end(msg.get(), spec);
    return s.check(nl_send_sync(s.get(), msg.release()), what);  // nl_send_sync frees the message
}

std::string vid_text(VidRange v) {
    return v.first == v.last ? std::to_string(v.first) : std::to_string(v.first) + "-" + std::to_string(v.last);
}

}  // namespace

Status set_bridge_port_flag(const Socket& s, int port_index, const std::string& port_name, PortFlag flag, bool on) {
    static constexpr struct {
        int attr;
        const char* name;
    } kFlags[] = {{IFLA_BRPORT_MODE, "hairpin"}, {IFLA_BRPORT_ISOLATED, "isolated"}, {IFLA_BRPORT_LEARNING, "learning"}};
    const auto& f = kFlags[static_cast<int>(flag)];
    std::string what = std::string("setting ") + f.name + (on ? " on" : " off") + " on bridge port " + port_name;
    auto msg = port_msg(RTM_SETLINK, port_index);
    if (!msg) return fail("netlink: out of memory");
    // NLA_F_NESTED tells the kernel this is the attribute form, not the old single-byte state.
    nlattr* info = nla_nest_start(msg.get(), IFLA_PROTINFO | NLA_F_NESTED);
    if (!info || nla_put_u8(msg.get(), f.attr, on ? 1 : 0) != 0) return fail(what + ": netlink message too large");
    nla_nest_end(msg.get(), info);
    return s.check(nl_send_sync(s.get(), msg.release()), what);  // nl_send_sync frees the message
}

Status bridge_vlan_add(const Socket& s, int port_index, VidRange vids, bool pvid_untagged) {
    std::uint16_t flags = pvid_untagged ? BRIDGE_VLAN_INFO_PVID | BRIDGE_VLAN_INFO_UNTAGGED : 0;
    return send_vlan_msg(s, RTM_SETLINK, port_index, vids, flags,
                         "adding vlan " + vid_text(vids) + " to bridge port " + std::to_string(port_index));
}

Status bridge_vlan_del(const Socket& s, int port_index, std::uint16_t vid) {
    return send_vlan_msg(s, RTM_DELLINK, port_index, {vid, vid}, 0,
                         "removing vlan " + std::to_string(vid) + " from bridge port " + std::to_string(port_index));
}

Result<std::uint16_t> bridge_default_pvid(const std::string& bridge) {
    auto text = os::read_file("/sys/class/net/" + bridge + "/bridge/default_pvid");
    std::string_view digits = text ? trim_space(*text) : std::string_view();
    unsigned pvid = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), pvid);
    if (!text || digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || pvid > 4094)
        return fail("reading default_pvid of bridge " + bridge);
    return std::uint16_t(pvid);
}

}  // namespace cni::nl
