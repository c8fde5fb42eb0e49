// SPDX-License-Identifier: Apache-2.0
// Names shared with the reference plugins, bit for bit (docs/compatibility.md: names and hashes),
// so either implementation can find and remove what the other made.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cni::fw {

// The bytes of a comment an iptables rule keeps (xt_comment's 256, less its terminator).
constexpr std::size_t kMaxCommentLength = 255;

// (prefix + hex(sha512(network + containerID)))[:28]; prefix "CNI-" for ipMasq, "CNI-DN-" for
// portmap's DNAT chain.
std::string chain_name(std::string_view prefix, std::string_view network, std::string_view container_id);
// Go fmt.Sprintf("name: %q id: %q", network, containerID), cut to kMaxCommentLength, so that a
// rule read back compares equal (container IDs past ~230 characters).
std::string masq_comment(std::string_view network, std::string_view container_id);

// "<H(network)[:16]>-": how the comment of every nf_tables rule of `network`'s attachments
// begins (H: hex sha512), so GC finds a network's rules without the attachments' names.
std::string nft_network_tag(std::string_view network);
// The comment of an attachment's nf_tables rules, the reference's ipMasq form:
// "<H(network)[:16]>-<H(ifname:containerID)[:16]>, net: N, if: I, id: C" without double
// quotes, cut to nft's 128 bytes; its first 33 characters tell the attachment alone.
std::string nft_attachment_comment(std::string_view network, std::string_view container_id, std::string_view ifname);
inline constexpr std::size_t kNftAttachmentTagLength = 33;

}  // namespace cni::fw
