// SPDX-License-Identifier: Apache-2.0
// DHCP datagrams over AF_PACKET (see packet_socket.hpp).
#include "applets/dhcp/packet_socket.hpp"

#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "core/os/errno_error.hpp"

namespace cni::dhcp {
namespace {

constexpr std::uint16_t kClientPort = 68, kServerPort = 67;
constexpr std::size_t kIpHeader = 20, kUdpHeader = 8;

std::uint32_t sum16(const std::uint8_t* p, std::size_t n, std::uint32_t acc = 0) {
    for (std::size_t i = 0; i + 1 < n; i += 2) acc += std::uint32_t(p[i] << 8 | p[i + 1]);
    if (n % 2) acc += std::uint32_t(p[n - 1] << 8);
    return acc;
}
std::uint16_t fold(std::uint32_t acc) {
    while (acc >> 16) acc = (acc & 0xffff) + (acc >> 16);
    return std::uint16_t(~acc);
}
// The replies of one exchange: an unfragmented IPv4 UDP datagram to port 68 carrying a
// BOOTREPLY with `xid` and `chaddr` (the IP header's length in X; the DHCP message starts after
// the 8-byte UDP header). Without an xid, nothing.
Status attach_filter(int fd, std::optional<std::uint32_t> xid, const Mac& chaddr) {
    constexpr std::uint32_t kOp = kUdpHeader, kXid = kUdpHeader + 4, kChaddr = kUdpHeader + 28;
    constexpr std::uint8_t kDrop = 16;  // the last instruction
    constexpr auto to_drop = [](std::uint8_t from) { return std::uint8_t(kDrop - from - 1); };
    sock_filter nothing[] = {BPF_STMT(BPF_RET | BPF_K, 0)};
    sock_filter exchange[] = {
        BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 9),  // the IP protocol
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, IPPROTO_UDP, 0, to_drop(1)),
        BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 6),  // the fragment offset
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x1fff, to_drop(3), 0),
        BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 0),
        BPF_STMT(BPF_LD | BPF_H | BPF_IND, 2),  // the UDP destination port
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kClientPort, 0, to_drop(6)),
        BPF_STMT(BPF_LD | BPF_B | BPF_IND, kOp),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 2, 0, to_drop(8)),
        BPF_STMT(BPF_LD | BPF_W | BPF_IND, kXid),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, xid.value_or(0), 0, to_drop(10)),
        BPF_STMT(BPF_LD | BPF_W | BPF_IND, kChaddr),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, get32(chaddr.data()), 0, to_drop(12)),
        BPF_STMT(BPF_LD | BPF_H | BPF_IND, kChaddr + 4),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, get16(chaddr.data() + 4), 0, to_drop(14)),
        BPF_STMT(BPF_RET | BPF_K, 0xffff),
        BPF_STMT(BPF_RET | BPF_K, 0),
    };
    constexpr unsigned short kLength = sizeof exchange / sizeof exchange[0];
    static_assert(kLength == kDrop + 1);
    sock_fprog prog = xid ? sock_fprog{kLength, exchange} : sock_fprog{1, nothing};
    if (::setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog) != 0)
        return os::sys_fail("setsockopt", "SO_ATTACH_FILTER");
    return {};
}

}  // namespace

Result<PacketSocket> PacketSocket::open(int ifindex, const Mac& chaddr) {
    os::UniqueFd fd(::socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, htons(ETH_P_IP)));
    if (!fd) return os::sys_fail("socket", "AF_PACKET");
    CNI_TRY(attach_filter(fd.get(), std::nullopt, chaddr));
    sockaddr_ll at{};
    at.sll_family = AF_PACKET;
    at.sll_protocol = htons(ETH_P_IP);
    at.sll_ifindex = ifindex;
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&at), sizeof at) != 0)
        return os::sys_fail("bind", "AF_PACKET interface " + std::to_string(ifindex));
    return PacketSocket(std::move(fd), ifindex, chaddr);
}

Status PacketSocket::listen(std::optional<std::uint32_t> xid) { return attach_filter(fd_.get(), xid, chaddr_); }

Status PacketSocket::send(const Message& m, std::uint32_t src, std::uint32_t dst, const Mac& to) const {
    Bytes payload = encode(m);
    std::vector<std::uint8_t> pkt(kIpHeader + kUdpHeader + payload.size());
    std::uint8_t* ip = pkt.data();
    std::uint8_t* udp = ip + kIpHeader;
    ip[0] = 0x45;  // IPv4, 20-byte header
    put16(ip + 2, std::uint16_t(pkt.size()));
    ip[8] = 64;  // TTL
    ip[9] = IPPROTO_UDP;
    put32(ip + 12, src);
    put32(ip + 16, dst);
    put16(ip + 10, fold(sum16(ip, kIpHeader)));
    put16(udp, kClientPort);
    put16(udp + 2, kServerPort);
    put16(udp + 4, std::uint16_t(kUdpHeader + payload.size()));
    std::memcpy(udp + kUdpHeader, payload.data(), payload.size());
    std::uint32_t pseudo = sum16(ip + 12, 8) + IPPROTO_UDP + std::uint32_t(kUdpHeader + payload.size());
    std::uint16_t csum = fold(sum16(udp, kUdpHeader + payload.size(), pseudo));
    put16(udp + 6, csum ? csum : 0xffff);

    sockaddr_ll addr{};
    addr.sll_family = AF_PACKET;
    addr.sll_protocol = htons(ETH_P_IP);
    addr.sll_ifindex = ifindex_;
    addr.sll_halen = 6;
    std::copy(to.begin(), to.end(), addr.sll_addr);
    if (::sendto(fd_.get(), pkt.data(), pkt.size(), 0, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != long(pkt.size()))
        return os::sys_fail("sendto", "DHCP server " + v4(dst).str());
    return {};
}

Result<std::optional<Reply>> PacketSocket::receive(std::uint32_t xid, std::chrono::steady_clock::time_point deadline) const {
    std::vector<std::uint8_t> buf(65536);
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return std::nullopt;
        pollfd p{fd_.get(), POLLIN, 0};
        int n = ::poll(&p, 1, int(std::min<long>(left.count() + 1, 60'000)));
        if (n < 0 && errno != EINTR) return os::sys_fail("poll", "DHCP socket");
        if (n <= 0) continue;
        sockaddr_ll from{};
        socklen_t fromlen = sizeof from;
        long got = ::recvfrom(fd_.get(), buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &fromlen);
        if (got < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            return os::sys_fail("recvfrom", "DHCP socket");
        }
        if (from.sll_pkttype == PACKET_OUTGOING) continue;
        std::size_t ihl = std::size_t(buf[0] & 0xf) * 4;
        if (std::size_t(got) < ihl + kUdpHeader || (buf[0] >> 4) != 4) continue;
        auto msg = decode(std::span(buf.data() + ihl + kUdpHeader, std::size_t(got) - ihl - kUdpHeader));
        if (!msg || msg->op != 2 || msg->xid != xid || msg->chaddr != chaddr_) continue;
        Reply r{std::move(*msg), {}};
        std::copy(from.sll_addr, from.sll_addr + 6, r.from.begin());
        return r;
    }
}

}  // namespace cni::dhcp
