// SPDX-License-Identifier: Apache-2.0
// vpc-eni-ipam's configuration and reservations (docs/vpc-eni.md). Its ipam keys; the pool whose
// verbs it runs in-process (core/ipam/pool.hpp): the node file's secondary and prefix addresses as
// one range set, each in its ENI's subnet with the VPC router as gateway, after the request's own
// (runtimeConfig ipRanges, requested addresses); and the node's reservations. Those are the
// node's, not a network's: ipamDir (the node file's key, never a network config's), opened once
// as a trusted folder, holds one host-local store, <ipamDir>/addresses, with host-local's files
// and lock, shared by every network that names the file, so no two networks are given one
// address; per network, <ipamDir>/networks/<network>/<address>, the address's claim: its owner
// as its reservation names it, a digest of the ipam config that asked, and the pod's namespace;
// and per Kubernetes namespace, <ipamDir>/namespaces/<namespace>/<address>, so the node file's
// caps are counted by listing one folder. DEL, CHECK and GC of a network act only on addresses
// whose reservation and record both name the attachment, and GC only on those its own config
// made, so none touches another network's (nor vpc-eni's DEL, which acts only on these). Only ADD
// makes folders; a network's folder goes when its last address does.
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
    key<&EniIpamConf::node_file>("nodeFile", "the vpc-eni node file whose ENIs' secondaryIps and ipv4Prefixes are handed out; root's own, under /etc/cni/"),
    key<&EniIpamConf::data_dir>("dataDir", "ignored, with a warning: the reservations are the node's, in its node file's ipamDir"),
};

// The request's config as vpc-eni-ipam reads it: the network's common keys and the ipam section.
struct EniIpamRequest {
    NetConf net;
    EniIpamConf ipam;
};
Result<EniIpamRequest> read_eni_ipam(const Request& req);

// The node file's addresses as one range set, in its ENI's subnet with the VPC router as gateway,
// ENI by ENI in the file's order: each secondary address a range of its own, then each of the
// ENI's ipv4Prefixes one range of its 16 addresses (docs/vpc-eni.md, Prefix mode). Canonical as
// built, and with no two ranges overlapping (the node file's loader refuses an address listed
// twice and a prefix over a listed address or another prefix).
ipam::RangeSet node_range_set(const NodeFile& node);

// The request's pool: the node's store (its data_dir and name say <ipamDir>/addresses, whatever
// the network), the request's ranges, then the node's addresses.
Result<ipam::Pool> pool_for(const Request& req, EniIpamRequest& r, const NodeFile& node);

// What a network's record of an address says: the attachment (as its reservation names it), a
// digest of the ipam config that asked (config_digest), and the pod's Kubernetes namespace
// ("" when CNI_ARGS names none).
struct Claim {
    std::string id, ifname, digest, pod_namespace;

    std::string text() const;  // "<id>\r\n<ifname>\r\n<digest>\r\n<namespace>"
    static std::optional<Claim> parse(std::string_view text);
    bool matches(std::string_view id, std::string_view ifname) const;
};

// The request's Claim: its attachment, the SHA-1 of its ipam object (compact, keys sorted) and
// K8S_POD_NAMESPACE. Two configs of one network name with another ipam object are told apart.
Claim claim_of(const Request& req, const NetConf& net);

// One network's side of the node's reservations, under the store's lock while it lives.
class Reservations {
public:
    // ADD's: the folders are made when missing. Refuses a network name that could not name a
    // folder (the CNI spec allows letters, digits, '-', '_' and '.').
    static Result<Reservations> open(const NodeFile& node, const std::string& network, ipam::Store::Warn warn);
    // DEL's, CHECK's and GC's: nothing is made; nothing when the network has no folder.
    static Result<std::optional<Reservations>> open_existing(const NodeFile& node, const std::string& network,
                                                             ipam::Store::Warn warn);

    ipam::Store& store() { return store_; }
    // The node file's cap: refuses one more address past maxAddressesPerNamespace for the pod's
    // namespace, naming the cap (and drops the network's folder if that leaves it empty). No cap
    // counts by the network's name, which the config's writer chooses.
    Status admit(const Claim& claim);
    // Records the addresses an ADD has just reserved for the claim; on failure releases them.
    Status record(const std::vector<net::IpAddr>& ips, const Claim& claim);
    // The addresses the network holds for (id, ifname), sorted: reservation and record name it.
    std::vector<net::IpAddr> held(std::string_view id, std::string_view ifname);
    Status release(std::string_view id, std::string_view ifname);
    // The network's addresses whose attachment is not among `valid`, recorded under `digest`,
    // sorted (GC); the records another config of the network's name made are not GC's.
    std::vector<net::IpAddr> stale(const std::vector<net::Attachment>& valid, std::string_view digest);
    Status release_stale(const std::vector<net::Attachment>& valid, std::string_view digest);

private:
    struct Record {
        net::IpAddr ip;
        Claim claim;
    };
    struct Caps {
        std::int64_t per_namespace;  // 0: none
        std::string node_file;
    };
    Reservations(Caps caps, ipam::Store store, os::Dir ipam, os::Dir networks, os::Dir records, std::string network,
                 ipam::Store::Warn warn)
        : caps_(std::move(caps)), store_(std::move(store)), ipam_(std::move(ipam)), networks_(std::move(networks)),
          records_(std::move(records)), network_(std::move(network)), warn_(std::move(warn)) {}
    std::vector<Record> records();      // every address the network has recorded
    std::vector<Record> held_records(std::string_view id, std::string_view ifname);
    bool reserved_to(const Record& r);  // its reservation names the recorded owner
    Status forget(const Record& r);     // its reservation released, then its record and marker
    void drop_record(const Record& r);  // its record and its namespace's marker
    Status mark(const net::IpAddr& ip, const Claim& claim);
    Status check_caps(const Claim& claim);
    std::int64_t namespace_count(const std::string& pod_namespace);
    Caps caps_;
    ipam::Store store_;
    os::Dir ipam_, networks_, records_;
    std::string network_;
    ipam::Store::Warn warn_;

public:
    // The network's folder removed when it holds nothing more (DEL, GC, a refused ADD).
    void drop_empty();
};

// ipamDir, opened once as a node folder (os::Dir::open_trusted) and marked as one
// (os::mark_node_folder: no host-local dataDir may lie in it); made when `make`, else nothing
// when it is missing (node-setup makes it, so it is marked before any pod's ADD).
Result<std::optional<os::Dir>> open_ipam_dir(const NodeFile& node, bool make);

// STATUS: whether the pool has a free address, asked of the node's store when it exists.
Status node_status(const Context& ctx, const ipam::Pool& pool, const NodeFile& node);

// `failed` (an ADD's or STATUS's), said in one short line when the node's own addresses (the
// pool's last range set) are all reserved: "no free address on ENIs eth0, eth1 (50 addresses,
// all reserved)", where the pool's error lists every one-address range; otherwise with that list
// (a requested address's error) said as "the node's addresses (ENIs eth0, eth1)". `failed`'s code.
Error explain_exhaustion(Error failed, const ipam::Pool& pool, const NodeFile& node, ipam::Store& store);

// GC's sweep of what an ADD that died between its reservation and its record left: a reservation
// in the node's store that no network records, older than kUnrecordedGrace, is released.
inline constexpr std::int64_t kUnrecordedGraceSeconds = 600;
Status release_unrecorded(const NodeFile& node, ipam::Store::Warn warn);

// The reservations of `network` in `node_file`'s store, for DEL, CHECK and GC; nothing, with a
// warning, when the node file cannot be read, and nothing when the network has none.
Result<std::optional<Reservations>> reservations_of(const Context& ctx, const std::string& node_file,
                                                    const std::string& network);

// What vpc-eni's DEL and GC act on: the addresses `network` holds in `node_file`'s store for the
// request's container and interface; those of attachments not among the request's valid ones
// that the request's config made (none without them).
Result<std::vector<net::IpAddr>> reserved_for(const Context& ctx, const std::string& node_file, const std::string& network);
Result<std::vector<net::IpAddr>> stale_addresses(const Context& ctx);
// vpc-eni's DEL with another IPAM: the release vpc-eni-ipam would have done.
Status release_for(const Context& ctx, const std::string& node_file, const std::string& network);

}  // namespace cni::vpc_eni
