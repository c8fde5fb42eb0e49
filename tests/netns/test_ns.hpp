// SPDX-License-Identifier: Apache-2.0
// A named network namespace under /run/netns for one root test, removed when the test ends
// (even when it fails).
#pragma once

#include <catch2/catch.hpp>

#include <cstdlib>
#include <random>
#include <string>

struct TestNs {
    std::string name, path;
    explicit TestNs(const std::string& prefix = "cnit") {
        std::random_device rd;
        name = prefix + "-" + std::to_string(rd() % 1000000);
        path = "/run/netns/" + name;
        REQUIRE(std::system(("ip netns add " + name).c_str()) == 0);
    }
    TestNs(const TestNs&) = delete;
    TestNs& operator=(const TestNs&) = delete;
    ~TestNs() { (void)std::system(("ip netns del " + name + " 2>/dev/null").c_str()); }
    // Runs a shell command inside the namespace; its exit status.
    int sh(const std::string& cmd) const { return std::system(("ip netns exec " + name + " sh -c '" + cmd + "'").c_str()); }
};
