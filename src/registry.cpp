// SPDX-License-Identifier: Apache-2.0
// The applet table, expanded from the generated CNI_ALL_APPLETS list (see registry.hpp).
#include "registry.hpp"

#include "applet_table.hpp"

namespace cni {

#define CNI_DECLARE_APPLET(id, name) extern const Applet id##_applet;
CNI_ALL_APPLETS(CNI_DECLARE_APPLET)
#undef CNI_DECLARE_APPLET

namespace {
#define CNI_APPLET_REF(id, name) &id##_applet,
const Applet* const kApplets[] = {CNI_ALL_APPLETS(CNI_APPLET_REF)};
#undef CNI_APPLET_REF
}  // namespace

std::span<const Applet* const> all_applets() { return kApplets; }

const Applet* find_applet(std::string_view name) {
    for (const Applet* a : kApplets)
        if (a->name == name) return a;
    return nullptr;
}

std::string_view cni_all_version() { return CNI_ALL_VERSION; }

}  // namespace cni
