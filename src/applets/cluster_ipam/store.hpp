// SPDX-License-Identifier: Apache-2.0
// How cluster-ipam reaches its store: the settings of the etcd client and the one factory that
// makes it (docs/cluster-ipam.md, Set-up). Credentials arrive as their contents, read by
// config.cpp from where a config may name them, so the client opens no file a tenant chose.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "applets/cluster_ipam/kv.hpp"

namespace cni::cluster_ipam {

struct EtcdSettings {
    std::vector<std::string> endpoints;  // "https://host:port" or "http://host:port"
    std::string ca_file, cert_file, key_file;  // as configured, for messages only
    std::string ca_pem, cert_pem, key_pem;     // their contents (empty: not configured)
    std::string prefix;
    std::int64_t dial_timeout_ms = 5000;
};

// The store: etcd's client over the settings; an error of code 11 naming the endpoints when
// none answers within the dial timeout.
Result<std::unique_ptr<Kv>> open_store(const EtcdSettings& s);

}  // namespace cni::cluster_ipam
