// SPDX-License-Identifier: Apache-2.0
// bridge's macspoofchk (docs/compatibility.md: bridge) in nf_tables, object for object as
// the reference's: in `table bridge nat`, the base chain PREROUTING (filter, prerouting,
// priority -300) jumps for frames from the host veth (`iifname`) to `cni-br-iface-<id>`, which
// jumps to `cni-br-iface-<id>-mac`: `ether saddr <container MAC> return`, then `drop`; id is
// "<containerID>-<ifname>" and every rule is commented "macspoofchk-<id>". So a container can
// only send frames with its own MAC. One nfnetlink transaction each way; teardown is keyed by
// the id alone, finds the reference's rules as well as ours, and is fine when nothing is there.
#pragma once

#include <string_view>

#include "core/result.hpp"

namespace cni::fw::spoofcheck {

Status setup(std::string_view container_id, std::string_view ifname, std::string_view host_veth, std::string_view mac);
Status teardown(std::string_view container_id, std::string_view ifname);
Status check(std::string_view container_id, std::string_view ifname);

}  // namespace cni::fw::spoofcheck
