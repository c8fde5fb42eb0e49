// SPDX-License-Identifier: Apache-2.0
// ipMasq's backend key (see ipmasq.hpp).
#include "core/fw/ipmasq.hpp"

#include "core/strings.hpp"

namespace cni::fw {

Status validate_ipmasq_backend(std::string_view backend) {
    if (backend.empty() || backend == "iptables" || backend == "nftables") return {};
    return fail("unknown ipmasq backend " + go_quote(backend));
}

}  // namespace cni::fw
