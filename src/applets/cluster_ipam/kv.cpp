// SPDX-License-Identifier: Apache-2.0
// The one helper kv.hpp declares beside the interface: etcd's range end of a prefix.
#include "applets/cluster_ipam/kv.hpp"

namespace cni::cluster_ipam {

std::string prefix_end(const std::string& prefix) {
    std::string end = prefix;
    while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) end.pop_back();
    if (end.empty()) return std::string(1, '\0');
    end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
    return end;
}

}  // namespace cni::cluster_ipam
