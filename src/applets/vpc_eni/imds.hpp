// SPDX-License-Identifier: Apache-2.0
// The instance metadata service as node-setup --imds reads it (docs/vpc-eni.md, The node from
// the instance metadata service): an IMDSv2 session (a token from PUT /latest/api/token, sent
// with every GET), never IMDSv1 unless asked, and the paths the AWS VPC CNI's agent reads to
// learn the node's ENIs: the primary ENI's MAC, one entry per attached ENI, and per MAC its
// device number, id, subnet, addresses (the first its own) and the VPC's CIDRs. Each request
// has a timeout, and a failure that may pass (no connection, no answer in time, a 5xx or 429)
// is retried a bounded number of times with a doubling back-off; every other failure (401, a
// missing path, an answer that is not HTTP, too long, or not what the path holds) is an error
// naming the URL at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "applets/vpc_eni/http.hpp"
#include "core/net/ip.hpp"
#include "core/result.hpp"

namespace cni::vpc_eni {

inline constexpr std::string_view kDefaultImdsUrl = "http://169.254.169.254";

struct ImdsOptions {
    HttpEndpoint endpoint;
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
};

struct InstanceMetadata {
    std::string primary_mac;
    std::vector<MetadataEni> enis;  // by device number
};

Result<InstanceMetadata> read_instance_metadata(const ImdsOptions& o);

}  // namespace cni::vpc_eni
