// SPDX-License-Identifier: Apache-2.0
// vpc-eni-ipam's configuration and reservations (docs/vpc-eni.md). Its ipam keys; the pool whose
// verbs it runs in-process (core/ipam/pool.hpp): the node file's secondary addresses as one range
// set, each in its ENI's subnet with the VPC router as gateway, after the request's own
// (runtimeConfig ipRanges, requested addresses); and the node's reservations. Those are the
// node's, not a network's: one host-local store per node file, in the folder the node file names
// (ipamDir, never a network config's key), <ipamDir>/addresses, with host-local's files and lock,
// shared by every network that names the file, so no two networks are given one address; and per network,
// <ipamDir>/networks/<network>/<address>, naming the address's owner as its reservation does.
// DEL, CHECK and GC of a network act only on addresses whose reservation and record both name
// the attachment, so none touches another network's (nor vpc-eni's DEL, which acts only on these).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "applets/vpc_eni/node_file.hpp"
#include "core/cni/config_keys.hpp"
#include "core/ipam/pool.hpp"
#include "core/ipam/store.hpp"
#include "core/net/attachment.hpp"
#include "core/os/fs.hpp"

namespace cni::vpc_eni {

struct EniIpamConf {
    std::string node_file;
    std::string data_dir;
};

inline constexpr std::array kEniIpamKeys{
    key<&EniIpamConf::node_file>("nodeFile", "the vpc-eni node file whose ENIs' secondaryIps are handed out; root's own, under /etc/cni/"),
    key<&EniIpamConf::data_dir>("dataDir", "ignored, with a warning: the reservations are the node's, in its node file's ipamDir"),
};

// The request's config as vpc-eni-ipam reads it: the network's common keys and the ipam section.
struct EniIpamRequest {
    NetConf net;
    EniIpamConf ipam;
};
Result<EniIpamRequest> read_eni_ipam(const Request& req);

// The node file's secondary addresses as one range set, each address a range of its own in its
// ENI's subnet, the VPC router its gateway, in the file's order: canonical as built, and with no
// two ranges overlapping (the node file's loader refuses an address listed twice).
ipam::RangeSet node_range_set(const NodeFile& node);

// The request's pool: the node's store (its data_dir and name say <ipamDir>/addresses, whatever
// the network), the request's ranges, then the node's addresses.
Result<ipam::Pool> pool_for(const Request& req, EniIpamRequest& r, const NodeFile& node);

// One network's side of the node's reservations, under the store's lock while it lives.
class Reservations {
public:
    // Refuses a network name that could not name a folder (the CNI spec allows letters, digits,
    // '-', '_' and '.').
    static Result<Reservations> open(const NodeFile& node, const std::string& network, ipam::Store::Warn warn);

    ipam::Store& store() { return store_; }
    // Records the addresses an ADD has just reserved for (id, ifname); on failure releases them.
    Status record(const std::vector<net::IpAddr>& ips, std::string_view id, std::string_view ifname);
    // The addresses the network holds for (id, ifname), sorted: reservation and record name it.
    std::vector<net::IpAddr> held(std::string_view id, std::string_view ifname);
    Status release(std::string_view id, std::string_view ifname);
    // The network's addresses whose attachment is not among `valid`, sorted (GC).
    std::vector<net::IpAddr> stale(const std::vector<net::Attachment>& valid);
    Status release_stale(const std::vector<net::Attachment>& valid);

private:
    struct Record {
        net::IpAddr ip;
        ipam::Owner owner;
    };
    Reservations(ipam::Store store, os::Dir records) : store_(std::move(store)), records_(std::move(records)) {}
    std::vector<Record> records();  // every address the network has recorded
    bool reserved_to(const Record& r);  // its reservation names the recorded owner
    ipam::Store store_;
    os::Dir records_;
};

// The reservations of the request's network, for DEL and GC; nothing, with a warning, when its
// node file cannot be read or its name could name no folder (nothing was reserved through them).
Result<std::optional<Reservations>> reservations_of(const Context& ctx);

// What vpc-eni's DEL and GC act on: the addresses the network holds for the request's container
// and interface; those of attachments not among the request's valid ones (none without them).
Result<std::vector<net::IpAddr>> reserved_for(const Context& ctx);
Result<std::vector<net::IpAddr>> stale_addresses(const Context& ctx);

}  // namespace cni::vpc_eni
