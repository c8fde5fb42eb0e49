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

namespace {
std::string hash16(std::string_view s) { return sha512_hex(s).substr(0, 16); }
std::string without_quotes(std::string_view s) {
    std::string out(s);
    std::erase(out, '"');
    return out;
}
}  // namespace

std::string nft_network_tag(std::string_view network) { return hash16(network) + "-"; }

std::string nft_attachment_comment(std::string_view network, std::string_view container_id, std::string_view ifname) {
    std::string c = nft_network_tag(network) + hash16(std::string(ifname) + ":" + std::string(container_id)) +
                    ", net: " + without_quotes(network) + ", if: " + without_quotes(ifname) + ", id: " + without_quotes(container_id);
    return c.substr(0, 128);
}

}  // namespace cni::fw
