// SPDX-License-Identifier: Apache-2.0
// What macvlan, ipvlan and vlan share (docs/compatibility.md: macvlan, ipvlan, vlan): the master
// (named, or the default route's link) looked up in the host or, with linkInContainer, the
// container namespace; the child created under a temporary vethXXXXXXXX name directly in the
// container namespace and renamed to CNI_IFNAME (so it cannot collide with a host name); and the L3
// or L2 finish. Unlike the reference's ipvlan and vlan, a failed ADD always removes the link.
#pragma once

#include <functional>
#include <string>

#include "core/applet.hpp"
#include "core/nl/link.hpp"
#include "core/os/netns.hpp"
#include "core/rollback.hpp"

namespace cni::iface {

// `name` in `where`, or the link of the default route when `name` is empty.
Result<nl::LinkInfo> find_master(const nl::Socket& where, const std::string& name);

// A child's MTU must lie in [0, master MTU] (macvlan and vlan; 0 keeps the kernel's choice).
Status check_child_mtu(std::int64_t mtu, const nl::LinkInfo& master);

// A link just made in the container under the temporary name `tmp` (nl::random_veth_name):
// its removal registered with `undo`, `prepare(link)` applied when given (an MTU, a MAC), then
// renamed to `ifname` ("failed to rename <kind> to ..."). Returns the renamed link.
using PrepareLink = std::function<Status(const nl::LinkInfo&)>;
Result<nl::LinkInfo> rename_new_link(const nl::Socket& container, const std::string& tmp, const std::string& ifname,
                                     std::string_view kind, Rollback& undo, const PrepareLink& prepare = {});

// Creates the child with `create(socket, attrs)` (attrs: the temporary name, mtu, mac and the
// container netns when the master is on the host), renames it, and registers its removal with
// `undo`. `kind` names it in errors: "failed to create vlan: ...", "failed to rename vlan to ...".
using CreateChild = std::function<Status(const nl::Socket&, const nl::NewLink&)>;
Result<nl::LinkInfo> create_child(const nl::Socket& host, const nl::Socket& container, const os::Netns& ns,
                                  bool in_container, const std::string& ifname, std::int64_t mtu, const std::string& mac,
                                  std::string_view kind, const CreateChild& create, Rollback& undo);

// L3 finish: the result's IPs (interface 0) on the link, with arp_notify/ndisc_notify when
// `notify`. The result's interfaces must already list the link first.
Status configure_child(const nl::Socket& container, const os::Netns& ns, const nl::LinkInfo& link, CniResult& result,
                       bool notify);

}  // namespace cni::iface
