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
#include <utility>
#include <vector>

#include "core/fw/iptables.hpp"
#include "core/net/attachment.hpp"
#include "core/net/ip.hpp"

namespace cni::firewall {

struct ForwardHandles {
    std::vector<std::uint64_t> v4 = {}, v6 = {};
    // Whose rules they are, for GC: the network's tag (core/fw/names.hpp: nft_network_tag) and
    // the addresses the rules accept.
    std::string network_tag = {};
    std::vector<net::IpAddr> ips = {};
    std::vector<std::uint64_t>& of(fw::Family f) { return f == fw::Family::v4 ? v4 : v6; }
    const std::vector<std::uint64_t>& of(fw::Family f) const { return f == fw::Family::v4 ? v4 : v6; }
    bool empty() const { return v4.empty() && v6.empty(); }
};

// "net TAG\nip A A ...\nv4 H H ...\nv6 H H ...\n", each line optional; decode() takes only
// that, with at most kMaxHandles words per line, and nothing when there is no handle or address.
std::string encode_handles(const ForwardHandles& h);
std::optional<ForwardHandles> decode_handles(std::string_view text);
inline constexpr std::size_t kMaxHandles = 64;

class ForwardRecord {
public:
    // `driver` tells one driver's record from another's: "" for iptables, "nft" for nftables
    // (forward_nft.cpp), whose record holds its inet table's handles, IPv4 addresses' first.
    ForwardRecord(const std::string& network, const net::Attachment& a, std::string dir, std::string_view driver = {});
    std::optional<ForwardHandles> load() const;
    // The record, or, when there is none, an empty one, after writing down the network and the
    // addresses ADD is about to accept: an ADD that dies before its commit's handles are saved
    // leaves what DEL and GC find its rules by (reading the chain). A failed ADD's undo leaves
    // the note: it outlives the ADD until the attachment's DEL or the network's GC forgets it,
    // harmlessly, since it holds no handle: they find the rules as with no record.
    ForwardHandles load_or_note(const std::string& network, const std::vector<net::IpAddr>& ips) const;
    void save(const ForwardHandles& h) const;  // best effort: without it DEL reads the chain
    void forget() const;

    // The records of one driver in `dir` of `network`'s attachments that are not in `keep`, and
    // the addresses that the driver's other records hold (a gone attachment's address may be a
    // live one's now): what GC removes, and what it leaves.
    struct Collectable {
        std::vector<std::pair<ForwardRecord, ForwardHandles>> gone;
        std::vector<net::IpAddr> live_ips;
    };
    static Collectable collectable(const std::string& dir, std::string_view driver, const std::string& network,
                                   const std::vector<net::Attachment>& keep);

private:
    ForwardRecord(std::string dir, std::string name) : dir_(std::move(dir)), name_(std::move(name)) {}
    std::string dir_, name_;
};

inline constexpr const char* kForwardRecordDir = "/run/cni/cni-all-firewall";
inline constexpr std::string_view kNftRecord = "nft";  // the nftables driver's records (forward_nft.cpp)

}  // namespace cni::firewall
