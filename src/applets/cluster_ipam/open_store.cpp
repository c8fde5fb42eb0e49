// SPDX-License-Identifier: Apache-2.0
// open_store (store.hpp): etcd's client (etcd_client.hpp) over the settings, its TLS from the
// credentials' contents config.cpp read, so the client opens no file a tenant named, and its TLS
// sessions kept in root's kTlsTicketDir (docs/cluster-ipam.md, Security), whatever the config.
#include "applets/cluster_ipam/etcd_client.hpp"
#include "applets/cluster_ipam/node_cache.hpp"
#include "applets/cluster_ipam/store.hpp"

namespace cni::cluster_ipam {

Result<std::unique_ptr<Kv>> open_store(const EtcdSettings& s) {
    EtcdOptions o{s.endpoints,
                  {s.ca_file, s.ca_pem, s.cert_file, s.cert_pem, s.key_file, s.key_pem},
                  std::chrono::milliseconds(s.dial_timeout_ms), {}};
    // The ticket folder and /run/cni before it are made when missing (0700, 0755).
    if (os::Dir::make_trusted(kTlsTicketDir, 0755, 0700)) o.tls_tickets = kTlsTicketDir;
    CNI_TRY_ASSIGN(auto client, EtcdClient::open(o));
    return std::unique_ptr<Kv>(std::move(client));
}

}  // namespace cni::cluster_ipam
