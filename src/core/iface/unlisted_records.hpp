// SPDX-License-Identifier: Apache-2.0
// What GC visits of an applet's records (os::open_records, "<containerID>:<ifname>.json" in
// /run/cni/<applet>): the records of attachments cni.dev/valid-attachments does not list. Each
// applet then reads a record for the network it names and releases what it describes
// (bandwidth's IFBs and qdiscs, sbr's moved routes).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/net/attachment.hpp"
#include "core/os/fs.hpp"
#include "core/result.hpp"

namespace cni::iface {

struct UnlistedRecords {
    os::Dir dir;
    std::vector<std::string> names;
};

// The applet's folder and its records not of an attachment in `valid`; nothing when the folder
// is missing.
Result<std::optional<UnlistedRecords>> unlisted_records(std::string_view applet, const std::vector<net::Attachment>& valid);

}  // namespace cni::iface
