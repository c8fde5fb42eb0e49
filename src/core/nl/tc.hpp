// SPDX-License-Identifier: Apache-2.0
// Traffic control through libnl-route: the netlink encoding of qdiscs, classes and filters. A
// token bucket filter as a link's root qdisc (handle 1:), read back (both as raw messages built
// with libnl, whose TBF object has no 64-bit rate); an HTB as the root (1:) with its classes, a
// pfifo as a class's own queue and u32 filters sending an address prefix to a class, read back
// as the root's default class, its classes' rates and its filters; and an ingress qdisc (ffff:)
// whose match-all u32 filter redirects every packet to another link (mirred egress redirect), so
// that a qdisc there shapes what arrives here. What to build of them is the caller's.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

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
// An ingress qdisc on `ifindex` whose match-all filter redirects every packet to `to_ifindex`.
Status add_ingress_redirect(const Socket& s, int ifindex, int to_ifindex);

// An HTB as the link's root qdisc (1:), sending what no filter classifies to `default_class` (1:N).
Status add_root_htb(const Socket& s, int ifindex, std::uint32_t default_class);

struct HtbClass {
    std::uint32_t id = 0;     // 1:N, a child of the root
    std::uint64_t rate = 0;   // bytes per second, its ceiling too
    std::uint32_t burst = 0;  // bytes, both buffers
};
// The quantum is what HTB would derive (rate / r2q 10), kept where the kernel does not warn.
Status add_htb_class(const Socket& s, int ifindex, const HtbClass& c);

// A pfifo of `limit` packets as the qdisc `handle` under `parent` (a class's own queue).
Status add_pfifo(const Socket& s, int ifindex, std::uint32_t parent, std::uint32_t handle, int limit);

// A u32 filter under the root sending packets whose source (`match_source`) or destination is
// in `net` to `to_class`: IPv4 at prio 16, IPv6 at prio 17 (one protocol per prio, as the
// kernel wants).
Status add_prefix_filter(const Socket& s, int ifindex, const net::IpNet& net, bool match_source, std::uint32_t to_class);

struct HtbState {
    std::uint32_t default_class = 0;
    std::map<std::uint32_t, std::uint64_t> rates;  // each HTB class's rate, bytes per second
    std::size_t filters = 0;                       // u32 filters under the root that classify
};
// The link's root HTB, if its root qdisc is one.
Result<std::optional<HtbState>> root_htb(const Socket& s, int ifindex);

// Removes the root and ingress qdiscs (and so their filters); missing ones are fine.
Status clear_qdiscs(const Socket& s, int ifindex);

}  // namespace cni::nl
