// SPDX-License-Identifier: Apache-2.0
// Network configurations as libcni loads them for a runtime: a conflist, or a single plugin
// config wrapped into a one-plugin list, found by network name in a directory (.conflist files
// first, then .conf and .json, each set in filename order; the first match wins). The raw bytes
// are kept because the result cache stores them.
#pragma once

#include <string>
#include <vector>

#include "core/result.hpp"

namespace cni::runtime {

struct NetworkList {
    std::string name;
    std::string cni_version;
    bool disable_check = false;
    bool disable_gc = false;
    std::vector<std::string> plugins;  // each plugin's config object, as JSON text
    std::vector<std::string> types;    // each plugin's "type"
    std::vector<std::string> descriptions;  // each as libcni names it in errors: type="T" [name="N"]
    std::string bytes;                 // what the cache stores as "config"
};

Result<NetworkList> parse_conflist(std::string_view bytes);
// A single plugin config as a list (libcni ConfListFromConf).
Result<NetworkList> conflist_from_conf(std::string_view bytes);
Result<NetworkList> load_network(const std::string& dir, const std::string& name);

}  // namespace cni::runtime
