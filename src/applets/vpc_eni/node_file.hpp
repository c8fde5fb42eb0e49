// SPDX-License-Identifier: Apache-2.0
// The node file of vpc-eni (docs/vpc-eni.md): what the AWS VPC CNI's agent learns from the
// cloud's metadata, written down by the operator or an installer. The primary interface, the
// VPC's CIDRs, the node-port and pod-ENI switches, the MTU, and each ENI: its interface, device
// number (0 is the primary ENI), subnet, primary address and the secondary addresses pods get,
// and the /28 IPv4 prefixes delegated to it (prefix mode), every address of which pods get.
// An ENI with device number N routes through table N+1, whose gateway is the VPC router, the
// second address of the ENI's subnet. Loading validates everything a later step relies on and
// names the key and value at fault. The node's keys are listed once, in kNodeFileKeys.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/cni/config_keys.hpp"
#include "core/net/ip.hpp"
#include "core/result.hpp"

namespace cni::vpc_eni {

// Prefix mode (AWS prefix delegation): an ENI's IPv4 prefixes are /28s, each of 16 addresses.
inline constexpr int kPrefixLength = 28;
inline constexpr std::size_t kPrefixAddresses = 16;
// The most a node file may hold, read or written: 63,000 addresses take 1 MiB.
inline constexpr std::size_t kNodeFileLimit = std::size_t(4) << 20;

struct Eni {
    std::string interface;
    std::int64_t device_number = -1;
    std::optional<net::IpNet> subnet;
    std::optional<net::IpAddr> primary_ip;
    std::vector<net::IpAddr> secondary_ips;
    std::vector<net::IpNet> ipv4_prefixes;  // prefix mode: each a /28, all 16 addresses pods'

    net::IpAddr gateway() const;  // the VPC router: the subnet's second address
    bool holds(const net::IpAddr& ip) const;  // a secondary address or one of a prefix
    std::uint32_t table() const { return std::uint32_t(device_number) + 1; }
};

struct NodeFile {
    std::string path;
    std::string primary_interface;
    std::vector<net::IpNet> vpc_cidrs;
    bool node_port_support = true;
    bool pod_eni_support = false;
    std::int64_t mtu = 9001;
    std::vector<Eni> enis;
    std::string veth_prefix = "eni";  // the pods' host veths: "<prefix>+" (as the applet's vethPrefix)
    std::string firewall_backend;     // "", iptables or nftables
    std::string state_dir = "/run/cni-all/vpc-eni";
    std::string ipam_dir = "/var/lib/cni/vpc-eni";  // vpc-eni-ipam's reservations (reservations.hpp)
    std::int64_t max_per_namespace = 0;  // the most one Kubernetes namespace's pods may hold, over every network

    const Eni& primary() const;               // device number 0
    const Eni* eni_of(const net::IpAddr& ip) const;  // the ENI holding it for pods: secondary or prefix address
    std::size_t address_count() const;          // pods' addresses, over every ENI: secondary and prefixes'
};

inline constexpr std::array kEniKeys{
    key<&Eni::interface>("interface", "the ENI's interface on the node, e.g. eth1"),
    key<&Eni::device_number>("deviceNumber", "the ENI's device number; 0 is the primary ENI, N routes via table N+1"),
    key<&Eni::subnet>("subnet", "the ENI's subnet, a CIDR; its second address is the VPC router"),
    key<&Eni::primary_ip>("primaryIp", "the ENI's own address"),
    key<&Eni::secondary_ips>("secondaryIps", "[]net.IP", "the addresses pods get from this ENI"),
    key<&Eni::ipv4_prefixes>("ipv4Prefixes", "[]string", "prefix mode: the /28 IPv4 prefixes delegated to this ENI; pods get all their addresses, after secondaryIps"),
};

inline constexpr std::array kNodeFileKeys{
    key<&NodeFile::primary_interface>("primaryInterface", "the primary ENI's interface (its deviceNumber is 0)"),
    key<&NodeFile::vpc_cidrs>("vpcCidrs", "[]string", "the VPC's CIDRs: pods reach them unmasqueraded"),
    key<&NodeFile::node_port_support>("nodePortSupport", "rp_filter=2, the fwmark rule and the primary ENI's connmark for NodePort replies; default true"),
    key<&NodeFile::pod_eni_support>("podEniSupport", "the local table's rule at priority 20 instead of 0; default false"),
    key<&NodeFile::mtu>("mtu", "the ENIs' MTU; default 9001"),
    key<&NodeFile::enis>("enis", "[]vpc.ENI", "[{interface, deviceNumber, subnet, primaryIp, secondaryIps, ipv4Prefixes}]"),
    key<&NodeFile::veth_prefix>("vethPrefix", "the pods' host veths' prefix, as the applet's vethPrefix; default eni"),
    key<&NodeFile::firewall_backend>("firewallBackend", "iptables or nftables for the SNAT; default: iptables where it works"),
    key<&NodeFile::state_dir>("stateDir", "where node-setup records what it changes and keeps the node file it goes by (a key of root's node file only: no network config sets it); default /run/cni-all/vpc-eni"),
    key<&NodeFile::max_per_namespace>("maxAddressesPerNamespace", "the most addresses the pods of one K8S_POD_NAMESPACE may hold, over every network; default 0, no cap"),
    key<&NodeFile::ipam_dir>("ipamDir", "where vpc-eni-ipam keeps the node's reservations, for every network naming this file; default /var/lib/cni/vpc-eni"),
};

Status decode(const json::Value& v, Eni& out, const json::Where& w);

// Reads and validates the node file at `path` (a regular file, at most 4 MiB), as root names it to
// node-setup and node-teardown. An error names the file and where in it (a line and column, or a
// key such as enis[1].subnet), never the bytes it holds there; a value that is well formed but
// wrong (an MTU out of range) is named with its value.
Result<NodeFile> load_node_file(const std::string& path);

// A node file's `text`, read from `path` by the caller: as load_node_file, or with its keys
// unvalidated (`validated` false) as load_node_settings.
Result<NodeFile> parse_node_file(const std::string& path, std::string_view text, bool validated = true);

// The keys of the node file at `path` as they are written, unvalidated: what node-setup --imds
// keeps of a file it rewrites (its settings; docs/vpc-eni.md). Nothing when there is no file.
Result<std::optional<NodeFile>> load_node_settings(const std::string& path);
// What load_node_file checks, on a node file made in memory.
Status validate_node_file(const NodeFile& n);
// The node file as JSON, every key written (firewallBackend when it is set, an ENI's
// ipv4Prefixes when it has any).
std::string encode_node_file(const NodeFile& n);

// The node file a network config names (nodeFile), which a tenant may have written: a regular
// file (no final symbolic link) in a folder under /etc/cni/ that only root can change, that no
// one but root may write, and that is in /etc/cni/vpc-eni/ or readable by all
// (os::read_trusted_file), so a tenant learns nothing of a file it could not read. Every
// refusal is the same "not a usable node file" (docs/vpc-eni.md).
Result<NodeFile> load_configured_node_file(const std::string& path);

}  // namespace cni::vpc_eni

template <>
struct cni::json::GoName<cni::vpc_eni::Eni> {
    static constexpr std::string_view value = "vpc.ENI";
};
