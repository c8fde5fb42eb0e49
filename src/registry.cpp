// SPDX-License-Identifier: Apache-2.0
// The applet table, expanded from the generated CNI_ALL_APPLETS list (see registry.hpp).
#include "registry.hpp"

#include <iterator>

#include "applet_table.hpp"

namespace cni {

#define CNI_APPLET_REF(ns, id, name) &ns::id##_applet,
const Applet* const kAppletTable[] = {CNI_ALL_APPLETS(CNI_APPLET_REF)};
#undef CNI_APPLET_REF
const std::size_t kAppletCount = std::size(kAppletTable);

std::span<const Applet* const> all_applets() { return {kAppletTable, kAppletCount}; }

const Applet* find_applet(std::string_view name) {
    for (const Applet* a : all_applets())
        if (a->name == name) return a;
    return nullptr;
}

std::string_view cni_all_version() { return CNI_ALL_VERSION; }

}  // namespace cni
