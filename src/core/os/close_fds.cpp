// SPDX-License-Identifier: Apache-2.0
// Closing every descriptor but a few (see close_fds.hpp).
#include "core/os/close_fds.hpp"

#include <unistd.h>

#include <algorithm>
#include <climits>

namespace cni::os {

void close_all_except(std::vector<int> keep) {
    std::sort(keep.begin(), keep.end());
    unsigned next = 0;
    for (int fd : keep) {
        if (fd < 0) continue;
        if (unsigned(fd) > next) ::close_range(next, unsigned(fd) - 1, 0);
        next = unsigned(fd) + 1;
    }
    ::close_range(next, UINT_MAX, 0);
}

}  // namespace cni::os
