// SPDX-License-Identifier: Apache-2.0
// CNI_ARGS (K=V;K=V) into the fields the plugins declare (IP, MAC, K8S_POD_*, ...), and the IP
// parser they use: any input gives a value or an error, never a crash or a hang.
#include <string>
#include <vector>

#include "core/cni/cni_args.hpp"
#include "fuzz_check.hpp"

using namespace cni;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto text = text_of(data, size);
    std::vector<std::string> seen;
    auto keep = [&](std::string_view v) -> Status {
        seen.emplace_back(v);
        return {};
    };
    auto ip = [&](std::string_view v) -> Status {
        CNI_TRY_ASSIGN(auto addr, parse_arg_ip(v));
        seen.push_back(addr.str());
        return {};
    };
    const CniArgField fields[] = {{"IP", ip}, {"MAC", keep}, {"K8S_POD_NAME", keep}, {"K8S_POD_NAMESPACE", keep},
                                  {"K8S_POD_INFRA_CONTAINER_ID", keep}, {"IgnoreUnknown", keep}};
    (void)load_cni_args(text, fields);
    return 0;
}
