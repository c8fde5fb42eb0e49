// SPDX-License-Identifier: Apache-2.0
// What the firewall applet remembers of an attachment on an iptables-nft node: the handles
// nf_tables gave the rules its ADD appended to CNI-FORWARD, per family (and the same of its
// nftables driver's cni-forward, in a record of its own), in a file of its own
// under /run/cni/cni-all-firewall named by a hash of the network, container ID and interface. DEL
// deletes exactly those rules, once they are checked to still be the attachment's, without
// reading the chain every attachment shares; an ADD run again finds them the same way
// (docs/compatibility.md, firewall). A record that is missing, unreadable or stale costs only
// speed: the chain is read as before. The folder is opened once and every file goes relative to
// it, never through a link, through an exclusive temporary; what is read back is parsed strictly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/fw/iptables.hpp"
#include "core/net/attachment.hpp"

namespace cni::firewall {

struct ForwardHandles {
    std::vector<std::uint64_t> v4, v6;
    std::vector<std::uint64_t>& of(fw::Family f) { return f == fw::Family::v4 ? v4 : v6; }
    bool empty() const { return v4.empty() && v6.empty(); }
};

// "v4 H H ...\nv6 H H ...\n"; decode() takes only that, with at most kMaxHandles per family.
std::string encode_handles(const ForwardHandles& h);
std::optional<ForwardHandles> decode_handles(std::string_view text);
inline constexpr std::size_t kMaxHandles = 64;

class ForwardRecord {
public:
    // `driver` tells one driver's record from another's: "" for iptables, "nft" for nftables
    // (forward_nft.cpp), whose record holds its inet table's handles, IPv4 addresses' first.
    ForwardRecord(const std::string& network, const net::Attachment& a, std::string dir, std::string_view driver = {});
    std::optional<ForwardHandles> load() const;
    void save(const ForwardHandles& h) const;  // best effort: without it DEL reads the chain
    void forget() const;

private:
    std::string dir_, name_;
};

}  // namespace cni::firewall
