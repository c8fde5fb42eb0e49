// SPDX-License-Identifier: Apache-2.0
// The instance metadata service as node-setup --imds reads it (docs/vpc-eni.md, The node from
// the instance metadata service): an IMDSv2 session (a token from PUT /latest/api/token, sent
// with every GET), never IMDSv1 unless asked, and the paths the AWS VPC CNI's agent reads to
// learn the node's ENIs: the primary ENI's MAC, one entry per attached ENI, and per MAC its
// device number, id, subnet, addresses (the first its own), the VPC's CIDRs and, when the path is
// there, its delegated IPv4 prefixes (prefix mode: a missing path is none). Each request
// has a timeout, and a failure that may pass (no connection, no answer in time, a 5xx or 429)
// is retried a bounded number of times with a doubling back-off; every other failure (401, a
// missing path, an answer that is not HTTP, too long, or not what the path holds) is an error
// naming the URL at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/http/connection.hpp"
#include "core/net/ip.hpp"
#include "core/result.hpp"

namespace cni::vpc_eni {

inline constexpr std::string_view kDefaultImdsUrl = "http://169.254.169.254";

// The metadata service's URL: http:// to an address literal, never a name (no resolver is asked).
inline Result<http::Endpoint> parse_imds_url(std::string_view url) { return http::parse_url(url, {.what = "metadata URL"}); }

struct ImdsOptions {
    http::Endpoint endpoint;
    bool allow_v1 = false;  // --imds-v1: GETs without a token when no session is offered
    std::chrono::milliseconds timeout{1000};  // per request
    int attempts = 4;                         // per request, retries included
    std::chrono::milliseconds backoff{250};   // before the first retry; doubled for each next
};

struct MetadataEni {
    std::string mac;
    std::string id;  // eni-...
    std::int64_t device_number = -1;
    net::IpNet subnet;
    std::vector<net::IpAddr> addresses;  // the ENI's own first, then the secondary ones
    std::vector<net::IpNet> vpc_cidrs;
    std::vector<net::IpNet> prefixes;  // ipv4-prefix: none when the path is missing
};

struct InstanceMetadata {
    std::string primary_mac;
    std::vector<MetadataEni> enis;  // by device number
};

Result<InstanceMetadata> read_instance_metadata(const ImdsOptions& o);

// The answers of the paths read, parsed strictly (lines end with "\n" or "\r\n"): nothing when
// an answer is not what its path holds.
inline constexpr std::size_t kMostEnis = 251;  // device numbers 0 to 250 (node_file.hpp)
std::optional<std::string> metadata_mac(std::string_view body);                      // mac
std::optional<std::vector<std::string>> metadata_macs(std::string_view body);        // macs/: 1 to kMostEnis
std::optional<std::int64_t> metadata_device_number(std::string_view body);           // 0 to 999
std::optional<std::string> metadata_eni_id(std::string_view body);                   // eni-...
std::optional<std::vector<net::IpAddr>> metadata_addresses(std::string_view body);   // local-ipv4s
std::optional<std::vector<net::IpNet>> metadata_cidrs(std::string_view body);        // vpc-ipv4-cidr-blocks
std::optional<net::IpNet> metadata_cidr(std::string_view body);                      // subnet-ipv4-cidr-block
std::optional<std::vector<net::IpNet>> metadata_prefixes(std::string_view body);     // ipv4-prefix: 0 or more, as written

}  // namespace cni::vpc_eni
