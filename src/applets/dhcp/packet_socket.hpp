// SPDX-License-Identifier: Apache-2.0
// DHCP over an AF_PACKET datagram socket bound to one interface, so the client works before
// the interface has an address and never depends on the namespace's routes: sends build the
// IPv4 and UDP headers themselves (68 -> 67). Receives are filtered in the kernel (classic BPF):
// the socket takes only the replies of the exchange in flight (unfragmented UDP to port 68, a
// BOOTREPLY with its xid and our MAC) and nothing between exchanges, so a flood of replies for
// other transactions never wakes the daemon or fills the queue; what was queued before a filter
// changed is checked again here. The sender's link address of a reply is kept so renewals and
// the release go unicast to the server. Opened in the calling thread's network namespace.
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
    // A socket for the client whose hardware address is `chaddr`; it takes nothing until listen().
    static Result<PacketSocket> open(int ifindex, const Mac& chaddr);

    // Take the replies for `xid` from now on, or none (nullopt).
    Status listen(std::optional<std::uint32_t> xid);
    // One IPv4/UDP datagram from src:68 to dst:67, to the link address `to`.
    Status send(const Message& m, std::uint32_t src, std::uint32_t dst, const Mac& to) const;
    // The next BOOTREPLY for `xid` addressed to us, or nullopt once `deadline` passes.
    Result<std::optional<Reply>> receive(std::uint32_t xid, std::chrono::steady_clock::time_point deadline) const;

private:
    PacketSocket(os::UniqueFd fd, int ifindex, const Mac& chaddr) : fd_(std::move(fd)), ifindex_(ifindex), chaddr_(chaddr) {}
    os::UniqueFd fd_;
    int ifindex_;
    Mac chaddr_;
};

}  // namespace cni::dhcp
