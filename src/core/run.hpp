// SPDX-License-Identifier: Apache-2.0
// Running one verb of an applet on a validated Request, with the reference skel's version gates
// (docs/compatibility.md: protocol; ADD/DEL exact match, CHECK >= 0.4.0, STATUS/GC >= 1.1.0) and
// the CNI_NETNS sanity check done BEFORE the verb changes anything (the reference checks after).
// Both the top-level dispatcher and in-process delegation go through here, so a delegate behaves
// the same whether it is exec'd or called.
#pragma once

#include <optional>
#include <string>

#include "core/applet.hpp"

namespace cni {

struct Outcome {
    std::optional<CniResult> result;  // ADD only
    std::string conf_version;         // the config's cniVersion ("" counts as 0.1.0)
};

Result<Outcome> run_verb(const Applet& applet, const Context& ctx);

// Go version.ConfigDecoder: the config's cniVersion, "0.1.0" when absent; code 6 errors.
Result<std::string> config_version(std::string_view config);

}  // namespace cni
