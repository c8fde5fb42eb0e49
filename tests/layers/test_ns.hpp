// SPDX-License-Identifier: Apache-2.0
// A named network namespace under /run/netns for one root test, removed when the test ends
// (even when it fails); run() gives a shell command's output, inside() runs a function with
// the calling thread in a namespace,
// at_once() runs work in 8 processes in a namespace at the same moment, and VariantPath makes
// the node an iptables-legacy or an iptables-nft one for this process.
#pragma once

#include <catch2/catch.hpp>

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/fw/iptables.hpp"
#include "core/os/netns.hpp"

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

// What a shell command prints on stdout.
inline std::string run(const std::string& cmd) {
    std::string out;
    std::unique_ptr<FILE, int (*)(FILE*)> p(::popen(cmd.c_str(), "r"), ::pclose);
    std::array<char, 4096> buf;
    while (p && std::fgets(buf.data(), int(buf.size()), p.get())) out += buf.data();
    return out;
}

// fn(), with this thread in the namespace; back in the original one afterwards.
template <class Fn>
auto inside(const TestNs& ns, Fn&& fn) {
    auto netns = cni::os::Netns::open(ns.path);
    REQUIRE(netns);
    auto guard = cni::os::NetnsGuard::enter(*netns);
    REQUIRE(guard);
    return fn();
}

// Runs `work(i)` for i = 0..7 in 8 processes inside the namespace, released together at a
// gate; how many failed.
inline int at_once(const TestNs& ns, const std::function<bool(int)>& work) {
    auto netns = cni::os::Netns::open(ns.path);
    REQUIRE(netns);
    int gate[2];
    REQUIRE(::pipe(gate) == 0);
    std::vector<pid_t> workers;
    for (int i = 0; i < 8; ++i) {
        pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            ::close(gate[1]);
            char c;
            if (::setns(netns->fd(), CLONE_NEWNET) != 0 || ::read(gate[0], &c, 1) != 0) ::_exit(2);
            ::_exit(work(i) ? 0 : 1);
        }
        workers.push_back(pid);
    }
    ::close(gate[0]);
    ::close(gate[1]);
    int failed = 0;
    for (pid_t pid : workers) {
        int status = 0;
        ::waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
    }
    return failed;
}

// While it lives, PATH starts with a directory holding only an `iptables` and `ip6tables` of the
// variant, which makes it the node's variant for this process.
struct VariantPath {
    std::string dir, saved;
    explicit VariantPath(cni::fw::Variant v) : dir("/tmp/cnit-path-" + std::to_string(::getpid())), saved(std::getenv("PATH")) {
        const std::string path = dir + ":" + saved;
        std::filesystem::create_directories(dir);
        for (bool v6 : {false, true}) {
            std::string link = dir + (v6 ? "/ip6tables" : "/iptables");
            std::filesystem::remove(link);
            std::filesystem::create_symlink(std::string("/usr/sbin/") + (v6 ? "ip6tables" : "iptables") +
                                                (v == cni::fw::Variant::nft ? "-nft" : "-legacy"), link);
        }
        ::setenv("PATH", path.c_str(), 1);
    }
    ~VariantPath() {
        ::setenv("PATH", saved.c_str(), 1);
        std::filesystem::remove_all(dir);
    }
};
