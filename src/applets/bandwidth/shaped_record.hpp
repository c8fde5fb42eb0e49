// SPDX-License-Identifier: Apache-2.0
// bandwidth's record of an attachment it shaped (docs/compatibility.md: bandwidth), so that GC
// can find what belongs to attachments that are gone: the IFB's name is a hash of the network
// and container ID that cannot be read back, and a `bwp…` device of another network looks the
// same. One file per attachment, os::record_name(containerID, ifname) in root's /run/cni/bandwidth
// (os::open_records), written by ADD, dropped by DEL and GC. Read back as hostile all the same:
// every field checked, the IFB's name recomputed, never taken from the file.
#pragma once

#include <optional>
#include <string>

#include "core/os/fs.hpp"
#include "core/result.hpp"

namespace cni::bandwidth {

struct ShapedRecord {
    std::string network, container_id, ifname;
    std::string veth;     // the host veth whose qdiscs ADD set up
    int veth_index = 0;   // and its index, so a later link of that name is not touched
};

Status save_shaped(const os::Dir& records, const ShapedRecord& r);
// nullopt when there is no such file; an error for one that does not decode.
Result<std::optional<ShapedRecord>> load_shaped(const os::Dir& records, const std::string& name);

}  // namespace cni::bandwidth
