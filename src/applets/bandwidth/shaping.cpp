// SPDX-License-Identifier: Apache-2.0
// bandwidth's qdiscs, classes and filters (see shaping.hpp).
#include "applets/bandwidth/shaping.hpp"

#include "core/fw/sha512.hpp"
#include "core/go_num.hpp"
#include "core/nl/tc.hpp"

namespace cni::bandwidth {
namespace {

constexpr double kLatencyUsec = 25000;  // the TBF latency, 25 ms

constexpr std::uint32_t kShapedClass = 0x10030;    // 1:30
constexpr std::uint32_t kUnshapedClass = 0x10001;  // 1:1
constexpr std::uint64_t kUnshapedRate = 100'000'000'000 / 8;  // 100 Gbit/s in bytes per second
constexpr std::uint32_t kUnshapedBurst = 1 << 20;
constexpr int kClassQueue = 1000;  // packets, a veth's default txqlen

nl::Tbf tbf_for(const Shaping& s) {
    nl::Tbf t;
    t.rate = s.rate / 8;
    t.burst = std::uint32_t(s.burst / 8);
    // The reference's formula and conversion (wrapping where Go's does), so the state is its.
    t.limit = go_uint32(double(t.rate) * kLatencyUsec / 1e6) + t.burst;
    return t;
}

// An HTB class with a queue of its own, pfifo (0x10 + the class's minor):, so that its length
// does not follow the device's txqlen (an IFB's is 0, which would give the default fifo no room
// at all).
Status add_class(const nl::Socket& s, int ifindex, const nl::HtbClass& c) {
    CNI_TRY(nl::add_htb_class(s, ifindex, c));
    return nl::add_pfifo(s, ifindex, c.id, (0x10 + (c.id & 0xffff)) << 16, kClassQueue);
}

Status add_split(const nl::Socket& s, int ifindex, const Shaping& sh) {
    const std::uint32_t listed = sh.subnets_shaped ? kShapedClass : kUnshapedClass;
    const std::uint32_t rest = sh.subnets_shaped ? kUnshapedClass : kShapedClass;
    CNI_TRY(nl::add_root_htb(s, ifindex, rest));
    CNI_TRY(add_class(s, ifindex, {kShapedClass, sh.rate / 8, std::uint32_t(sh.burst / 8)}));
    CNI_TRY(add_class(s, ifindex, {kUnshapedClass, kUnshapedRate, kUnshapedBurst}));
    for (auto& net : sh.subnets) CNI_TRY(nl::add_prefix_filter(s, ifindex, net, sh.match_source, listed));
    return {};
}

Status check_split(const nl::Socket& s, int ifindex, const std::string& name, const Shaping& sh) {
    CNI_TRY_ASSIGN(auto htb, nl::root_htb(s, ifindex));
    if (!htb) return fail("bandwidth: " + name + " has no htb qdisc");
    const std::uint64_t rate = sh.rate / 8;
    const std::uint32_t default_class = sh.subnets_shaped ? kUnshapedClass : kShapedClass;
    auto shaped = htb->rates.find(kShapedClass);
    const std::uint64_t shaped_rate = shaped == htb->rates.end() ? 0 : shaped->second;
    if (htb->default_class != default_class || shaped_rate != rate || htb->filters != sh.subnets.size())
        return fail("bandwidth: the htb of " + name + " has shaped rate " + std::to_string(shaped_rate) + " B/s and " +
                    std::to_string(htb->filters) + " subnet filters; expected " + std::to_string(rate) + " and " +
                    std::to_string(sh.subnets.size()));
    return {};
}

Status check_tbf(const nl::Socket& s, int ifindex, const std::string& name, const Shaping& sh) {
    CNI_TRY_ASSIGN(auto have, nl::root_tbf(s, ifindex));
    auto want = tbf_for(sh);
    if (!have) return fail("bandwidth: " + name + " has no tbf qdisc");
    if (have->rate != want.rate || have->limit != want.limit || have->buffer_ticks != nl::tbf_buffer_ticks(want))
        return fail("bandwidth: the tbf of " + name + " has rate " + std::to_string(have->rate) + " B/s, bucket " +
                    std::to_string(have->buffer_ticks) + " ticks, limit " + std::to_string(have->limit) + " B; expected " +
                    std::to_string(want.rate) + ", " + std::to_string(nl::tbf_buffer_ticks(want)) + ", " +
                    std::to_string(want.limit));
    return {};
}

}  // namespace

Status shape(const nl::Socket& s, int ifindex, const Shaping& shaping) {
    if (shaping.subnets.empty()) return nl::add_root_tbf(s, ifindex, tbf_for(shaping));
    return add_split(s, ifindex, shaping);
}

Status check_shaped(const nl::Socket& s, int ifindex, const std::string& name, const Shaping& shaping) {
    return shaping.subnets.empty() ? check_tbf(s, ifindex, name, shaping) : check_split(s, ifindex, name, shaping);
}

std::string ifb_name(std::string_view network, std::string_view container_id) {
    return ("bwp" + fw::sha512_hex(std::string(network) + std::string(container_id))).substr(0, 15);
}

}  // namespace cni::bandwidth
