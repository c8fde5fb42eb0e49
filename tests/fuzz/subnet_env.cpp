// SPDX-License-Identifier: Apache-2.0
// flannel's subnet.env, as flanneld writes it or as anything else left it: a value or an error.
#include "applets/flannel/delegate_config.hpp"
#include "fuzz_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    (void)cni::flannel::parse_subnet_env(text_of(data, size), "/run/flannel/subnet.env");
    return 0;
}
