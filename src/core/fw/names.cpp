// SPDX-License-Identifier: Apache-2.0
// Reference chain names and rule comments (see names.hpp).
#include "core/fw/names.hpp"

#include "core/fw/sha512.hpp"
#include "core/strings.hpp"

namespace cni::fw {

std::string chain_name(std::string_view prefix, std::string_view network, std::string_view container_id) {
    std::string name = std::string(prefix) + sha512_hex(std::string(network) + std::string(container_id));
    return name.substr(0, 28);
}

std::string masq_comment(std::string_view network, std::string_view container_id) {
    std::string c = "name: " + go_quote(network) + " id: " + go_quote(container_id);
    if (c.size() > kMaxCommentLength) c.resize(kMaxCommentLength);
    return c;
}

}  // namespace cni::fw
