// SPDX-License-Identifier: Apache-2.0
// An attachment's identity, (container ID, interface name): what CNI spec GC's
// cni.dev/valid-attachments lists, and what every layer that collects garbage (IPAM state,
// firewall rules) keeps or removes by.
#pragma once

#include <string>

namespace cni::net {

struct Attachment {
    std::string container_id;
    std::string ifname;
    bool operator==(const Attachment&) const = default;
};

}  // namespace cni::net
