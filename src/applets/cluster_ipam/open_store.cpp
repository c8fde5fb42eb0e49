// SPDX-License-Identifier: Apache-2.0
// open_store (store.hpp) until the etcd client (etcd_client.*) is built in: a clear error.
#include "applets/cluster_ipam/store.hpp"

namespace cni::cluster_ipam {

Result<std::unique_ptr<Kv>> open_store(const EtcdSettings&) {
    return fail(code::plugin_not_available, "cluster-ipam: etcd client not built");
}

}  // namespace cni::cluster_ipam
