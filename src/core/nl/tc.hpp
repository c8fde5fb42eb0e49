// SPDX-License-Identifier: Apache-2.0
// Traffic control through libnl-route, what bandwidth needs (reference-behaviour 2.13): a token
// bucket filter as a link's root qdisc (handle 1:), read back for CHECK, and the egress trick -
// an ingress qdisc (ffff:) whose match-all u32 filter redirects every packet to another link
// (mirred egress redirect), so a TBF there shapes what the container sends.
#pragma once

#include <cstdint>
#include <optional>

#include "core/nl/socket.hpp"

namespace cni::nl {

struct Tbf {
    std::uint32_t rate = 0;    // bytes per second
    std::uint32_t burst = 0;   // bytes (the bucket)
    std::uint32_t limit = 0;   // bytes queued at most
};

Status add_root_tbf(const Socket& s, int ifindex, const Tbf& tbf);
// The link's root TBF, if its root qdisc is one.
Result<std::optional<Tbf>> root_tbf(const Socket& s, int ifindex);
Status add_ingress_redirect(const Socket& s, int ifindex, int to_ifindex);
// Removes the root and ingress qdiscs (and so their filters); missing ones are fine.
Status clear_qdiscs(const Socket& s, int ifindex);

}  // namespace cni::nl
