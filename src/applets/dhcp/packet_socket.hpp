// SPDX-License-Identifier: Apache-2.0
// DHCP over an AF_PACKET datagram socket bound to one interface, so the client works before
// the interface has an address and never depends on the namespace's routes: sends build the
// IPv4 and UDP headers themselves (68 -> 67), receives are filtered in the kernel (classic BPF:
// unfragmented UDP to port 68) and matched on xid and our MAC. The sender's link address of a
// reply is kept so renewals and the release go unicast to the server. Opened in the calling
// thread's network namespace.
#pragma once

#include <chrono>
#include <optional>

#include "applets/dhcp/message.hpp"
#include "core/os/unique_fd.hpp"

namespace cni::dhcp {

inline constexpr Mac kBroadcastMac{0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

struct Reply {
    Message msg;
    Mac from{};  // the link address it came from (the server, or a relay)
};

class PacketSocket {
public:
    static Result<PacketSocket> open(int ifindex);

    // One IPv4/UDP datagram from src:68 to dst:67, to the link address `to`.
    Status send(const Message& m, std::uint32_t src, std::uint32_t dst, const Mac& to) const;
    // The next BOOTREPLY for `xid` addressed to `chaddr`, or nullopt once `deadline` passes.
    Result<std::optional<Reply>> receive(std::uint32_t xid, const Mac& chaddr,
                                         std::chrono::steady_clock::time_point deadline) const;

private:
    PacketSocket(os::UniqueFd fd, int ifindex) : fd_(std::move(fd)), ifindex_(ifindex) {}
    os::UniqueFd fd_;
    int ifindex_;
};

}  // namespace cni::dhcp
