// SPDX-License-Identifier: Apache-2.0
// Gratuitous ARP over an AF_PACKET datagram socket (see garp.hpp).
#include "applets/tuning/garp.hpp"

#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if_arp.h>
#include <sys/socket.h>

#include <array>
#include <cstring>

#include "core/net/mac.hpp"
#include "core/os/errno_error.hpp"
#include "core/os/unique_fd.hpp"

namespace cni::tuning {
namespace {

struct [[gnu::packed]] ArpPacket {
    arphdr hdr;
    std::array<std::uint8_t, 6> sender_mac;
    std::array<std::uint8_t, 4> sender_ip;
    std::array<std::uint8_t, 6> target_mac;
    std::array<std::uint8_t, 4> target_ip;
};

}  // namespace

Status send_gratuitous_arp(int ifindex, const std::string& mac, const net::IpAddr& ip) {
    if (!ip.is_v4()) return {};
    ArpPacket p{};
    p.hdr.ar_hrd = htons(ARPHRD_ETHER);
    p.hdr.ar_pro = htons(ETHERTYPE_IP);
    p.hdr.ar_hln = 6;
    p.hdr.ar_pln = 4;
    p.hdr.ar_op = htons(ARPOP_REQUEST);
    auto sender = net::mac_bytes(mac);
    if (!sender) return fail("gratuitous ARP: invalid MAC address " + mac);
    p.sender_mac = *sender;
    std::memcpy(p.sender_ip.data(), &ip.bytes()[12], 4);
    p.target_ip = p.sender_ip;  // who-has <own address>: the announcement form
    os::UniqueFd fd(::socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, htons(ETH_P_ARP)));
    if (!fd) return os::sys_fail("socket", "AF_PACKET");
    sockaddr_ll to{};
    to.sll_family = AF_PACKET;
    to.sll_protocol = htons(ETH_P_ARP);
    to.sll_ifindex = ifindex;
    to.sll_halen = 6;
    std::memset(to.sll_addr, 0xff, 6);
    if (::sendto(fd.get(), &p, sizeof p, 0, reinterpret_cast<sockaddr*>(&to), sizeof to) != sizeof p)
        return os::sys_fail("sendto", "gratuitous ARP for " + ip.str());
    return {};
}

}  // namespace cni::tuning
