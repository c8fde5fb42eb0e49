// SPDX-License-Identifier: Apache-2.0
// Running a network list the way libcni does for a container runtime (ADD, CHECK, DEL, GC,
// STATUS): every plugin config gets the list's name and cniVersion, a runtimeConfig built from
// the capability args the plugin declares in "capabilities", and a prevResult (ADD: the previous
// plugin's result; CHECK and DEL: the cached result, converted to the list's version). DEL walks
// the list backwards. Results are cached as libcni caches them. Plugins are found in CNI_PATH
// and run in-process when rt.in_process says they are this binary's applets (ipam::invoke).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/applet.hpp"
#include "core/cni/cni_result.hpp"
#include "core/cni/netconf.hpp"
#include "core/runtime/cache.hpp"
#include "core/runtime/network_list.hpp"

namespace cni::runtime {

struct RuntimeConf {
    std::string container_id;
    std::string netns;
    std::string ifname = "eth0";
    std::vector<std::pair<std::string, std::string>> args;  // CNI_ARGS
    std::string capability_args;                             // a JSON object, or ""
    std::string cni_path;
    std::string cache_dir = "/var/lib/cni";
    std::vector<std::string> environ;  // passed on to the plugins (CNI_* replaced)
    InProcessLookup in_process = nullptr;  // which plugins run in-process (Context::in_process)
};

using Warn = std::function<void(std::string_view)>;

// On failure the plugins that ran are DELeted in reverse order (best effort), as container
// runtimes do after a failed ADD, and nothing is cached. An attachment already cached is refused
// before any plugin runs.
Result<CniResult> add_network_list(const NetworkList& list, const RuntimeConf& rt, const Warn& warn);
Status check_network_list(const NetworkList& list, const RuntimeConf& rt, const Warn& warn);
Status del_network_list(const NetworkList& list, const RuntimeConf& rt, const Warn& warn);
// DELs this network's cached attachments not in `valid`, then (1.1.0 and later, unless
// disableGC) runs every plugin's GC with cni.dev/valid-attachments = `valid`.
Status gc_network_list(const NetworkList& list, const RuntimeConf& rt, const std::vector<net::Attachment>& valid, const Warn& warn);
Status status_network_list(const NetworkList& list, const RuntimeConf& rt, const Warn& warn);

// A result as printed, cached and passed on for this list: at the list's cniVersion, as the
// plugins print it.
Result<std::string> list_result_text(const NetworkList& list, const CniResult& r);

// The plugin config libcni hands a plugin (exposed for unit tests).
Result<std::string> plugin_config(const NetworkList& list, std::size_t index, const RuntimeConf& rt,
                                  const std::optional<CniResult>& prev);

}  // namespace cni::runtime
