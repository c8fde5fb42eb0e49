// SPDX-License-Identifier: Apache-2.0
// tuning's backup file (<dataDir>/<containerID>_<ifname>.json), which anyone able to write the
// data directory can write: a value or an error. A value is written back in the reference's
// layout and read again to the same value, and a sysctl path DEL would restore is one under
// /proc/sys/net/ with no "..", "." or empty component.
#include <string>

#include "applets/tuning/backup.hpp"
#include "core/os/sysctl.hpp"
#include "fuzz_check.hpp"

namespace {

bool plainly_under_proc_sys_net(std::string_view path) {
    constexpr std::string_view root = "/proc/sys/net/";
    if (!path.starts_with(root) || path.size() == root.size()) return false;
    std::string_view rest = path.substr(root.size());
    std::string component;
    for (char c : rest) {
        if (c == '\0') return false;
        if (c != '/') {
            component += c;
            continue;
        }
        if (component.empty() || component == "." || component == "..") return false;
        component.clear();
    }
    return !component.empty() && component != "." && component != "..";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto backup = cni::tuning::decode_backup(std::string(text_of(data, size)));
    if (!backup) return 0;
    auto again = cni::tuning::decode_backup(cni::tuning::encode_backup(*backup));
    property(again.has_value(), "an encoded backup reads back");
    property(*again == *backup, "an encoded backup reads back to the same value");
    for (auto& [path, value] : backup->sysctl)
        if (cni::os::is_net_sysctl_path(path))
            property(plainly_under_proc_sys_net(path), "a restorable sysctl path stays under /proc/sys/net");
    return 0;
}
