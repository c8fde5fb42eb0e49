// SPDX-License-Identifier: Apache-2.0
// sysctl access through /proc/sys of the calling thread's namespaces. Names may be written
// dotted ("net.ipv4.ip_forward") or with slashes; a dotted name is converted only when a '.'
// comes before the first '/', as the reference does (so "net/ipv4/conf/eth0.100/..." works).
#pragma once

#include <string>
#include <string_view>

#include "core/os/unique_fd.hpp"
#include "core/result.hpp"

namespace cni::os {

std::string sysctl_path(std::string_view name);
Result<std::string> sysctl_get(std::string_view name);  // trailing newline removed
Status sysctl_set(std::string_view name, std::string_view value);

// A path a caller does not control ("/proc/sys/net/ipv4/conf/eth0/arp_filter", from a config key
// or a backup file) written only if it lies under /proc/sys/net: it must be written in that
// canonical form (no "..", ".", or empty component; anything else is refused before any write),
// and it is opened beneath /proc/sys/net with no symbolic link followed on the way
// (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS).
bool is_net_sysctl_path(std::string_view path);
Status net_sysctl_set(std::string_view path, std::string_view value);

// A /proc/sys directory ("net/ipv6/conf") opened once, the names under it then opened
// relative to it. Every network namespace has its own /proc/sys/net/ipv4 and net/ipv6
// entries under the one shared "net", so looking either up compares one cached entry per
// namespace that ever used it: 0.4-0.6 ms per lookup with 600 pods (cold caches), the bulk of
// what a bridge ADD grows by as pods accumulate. Opening fails quietly; set() then fails as
// the full path would (an IPv6-less kernel has no net/ipv6).
class SysctlDir {
public:
    static SysctlDir open(std::string_view dir);
    Status set(std::string_view name, std::string_view value) const;  // name relative: "eth0/accept_ra"

private:
    SysctlDir(std::string path, UniqueFd fd, int err) : path_(std::move(path)), fd_(std::move(fd)), errno_(err) {}
    std::string path_;  // "/proc/sys/net/ipv6/conf"
    UniqueFd fd_;
    int errno_ = 0;  // why opening failed
};

}  // namespace cni::os
