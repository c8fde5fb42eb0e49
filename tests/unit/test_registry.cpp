// SPDX-License-Identifier: Apache-2.0
// The applet table generated from meson.build: sorted, unique, complete descriptors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "registry.hpp"

TEST_CASE("the applet list is sorted, unique and every descriptor is complete", "[top]") {
    auto all = cni::all_applets();
    REQUIRE(all.size() >= 3);
    std::set<std::string_view> names;
    for (std::size_t i = 0; i < all.size(); ++i) {
        const auto* a = all[i];
        INFO(a->name);
        CHECK(names.insert(a->name).second);
        if (i > 0) CHECK(all[i - 1]->name < a->name);
        CHECK(a->add != nullptr);
        CHECK_FALSE(a->versions.empty());
        CHECK_FALSE(a->summary.empty());
        CHECK_FALSE(a->help.empty());
        CHECK(cni::find_applet(a->name) == a);
        CHECK(a->name.find('/') == std::string_view::npos);
    }
    CHECK(cni::find_applet("no-such-applet") == nullptr);
    CHECK(names.contains("loopback"));
    CHECK(names.contains("host-local"));
    CHECK(names.contains("static"));
}
