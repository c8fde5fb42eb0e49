// SPDX-License-Identifier: Apache-2.0
// Traffic control through libnl-route, what bandwidth needs (docs/compatibility.md: bandwidth): a
// token bucket filter as a link's root qdisc (handle 1:), read back for CHECK (both as raw messages
// built with libnl, whose TBF object has no 64-bit rate), and the egress trick - an ingress qdisc
// (ffff:) whose match-all u32 filter redirects every packet to another link (mirred egress
// redirect), so a TBF there shapes what the container sends. For bandwidth's subnet lists, an HTB
// root instead: class 1:30 shaped, class 1:1 unshaped (100 Gbit/s), each with a pfifo of its own,
// one of them the default and u32 filters on an address sending the listed subnets to the other.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/net/ip.hpp"
#include "core/nl/socket.hpp"

namespace cni::nl {

struct Tbf {
    std::uint64_t rate = 0;    // bytes per second (above 2^32 - 1 as the kernel's 64-bit rate)
    std::uint32_t burst = 0;   // bytes (the bucket)
    std::uint32_t limit = 0;   // bytes queued at most
};

// The bucket as the kernel holds it: the time `burst` bytes take at `rate`, in microseconds as
// a 32-bit number, then in scheduler ticks; both conversions as the Go plugin's, so the state is
// the same even where they wrap (a tiny rate with a large burst).
std::uint32_t tbf_buffer_ticks(const Tbf& tbf);

// What the kernel holds for a root TBF: compared as is, the bucket in ticks, since bytes to ticks
// and back is not exact.
struct TbfState {
    std::uint64_t rate = 0;
    std::uint32_t buffer_ticks = 0;
    std::uint32_t limit = 0;
};

// Sent and read as raw messages: libnl's TBF knows no 64-bit rate. The request is the Go
// plugin's: rate, limit and the bucket (tbf_buffer_ticks), no rate table.
Status add_root_tbf(const Socket& s, int ifindex, const Tbf& tbf);
// The link's root TBF, if its root qdisc is one.
Result<std::optional<TbfState>> root_tbf(const Socket& s, int ifindex);
Status add_ingress_redirect(const Socket& s, int ifindex, int to_ifindex);

inline constexpr std::uint32_t kShapedClass = 0x10030;    // 1:30
inline constexpr std::uint32_t kUnshapedClass = 0x10001;  // 1:1

struct SubnetSplit {
    std::uint64_t rate = 0;          // bytes per second of the shaped class
    std::uint32_t burst = 0;         // bytes
    std::vector<net::IpNet> subnets;
    bool subnets_shaped = false;     // shapedSubnets (the rest runs free) or unshapedSubnets
    bool match_source = false;       // match the packet's source address (else its destination)
};
Status add_root_htb_split(const Socket& s, int ifindex, const SubnetSplit& split);

struct HtbSplit {
    std::uint32_t default_class = 0;
    std::uint64_t shaped_rate = 0;   // bytes per second
    std::size_t filters = 0;         // u32 filters under the root
};
// The link's root HTB as add_root_htb_split leaves it, if its root qdisc is an HTB.
Result<std::optional<HtbSplit>> root_htb_split(const Socket& s, int ifindex);
// Removes the root and ingress qdiscs (and so their filters); missing ones are fine.
Status clear_qdiscs(const Socket& s, int ifindex);

}  // namespace cni::nl
