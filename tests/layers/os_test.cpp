// SPDX-License-Identifier: Apache-2.0
// Root tests of the OS and netlink layers against throwaway network namespaces: the namespace
// guard, sysctl inside a namespace, netns validation, flock exclusion between processes, and
// link/address calls. Nothing here touches the machine's own network: sysctls are written only
// inside the test's namespace.
#include <catch2/catch.hpp>

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/applet.hpp"
#include "core/nl/addr.hpp"
#include "core/nl/link.hpp"
#include "core/os/file_lock.hpp"
#include "core/os/netns.hpp"
#include "core/os/sysctl.hpp"
#include "core/run.hpp"
#include "test_ns.hpp"

using namespace cni;

namespace {

ino_t current_netns_inode() {
    struct stat st{};
    ::stat("/proc/thread-self/ns/net", &st);
    return st.st_ino;
}

}  // namespace

TEST_CASE("the namespace guard enters a namespace and restores the original", "[os]") {
    TestNs t("cnit-os");
    ino_t outer = current_netns_inode();
    auto ns = os::Netns::open(t.path);
    REQUIRE(ns);
    std::string outer_forward = *os::sysctl_get("net.ipv4.ip_forward");
    {
        auto guard = os::NetnsGuard::enter(*ns);
        REQUIRE(guard);
        struct stat st{};
        ::stat(t.path.c_str(), &st);
        CHECK(current_netns_inode() == st.st_ino);
        REQUIRE(os::sysctl_set("net.ipv4.ip_forward", "1"));
        CHECK(*os::sysctl_get("net/ipv4/ip_forward") == "1");
    }
    CHECK(current_netns_inode() == outer);
    CHECK(*os::sysctl_get("net.ipv4.ip_forward") == outer_forward);  // only the test namespace changed
    auto again = os::NetnsGuard::enter(*ns);
    REQUIRE(again);
    CHECK(*os::sysctl_get("net.ipv4.ip_forward") == "1");
}

TEST_CASE("netns validation: missing paths, files and other namespace types", "[os]") {
    auto missing = os::Netns::open_if_exists("/run/netns/cnit-does-not-exist");
    REQUIRE(missing);
    CHECK_FALSE(*missing);
    auto err = os::Netns::open("/run/netns/cnit-does-not-exist");
    REQUIRE_FALSE(err);
    CHECK(err.error().code == code::invalid_netns);
    CHECK(err.error().msg.find("/run/netns/cnit-does-not-exist") != std::string::npos);
    auto file = os::Netns::open("/etc/hostname");
    REQUIRE_FALSE(file);
    CHECK(file.error().code == code::invalid_netns);
    CHECK(file.error().msg.starts_with("\"/etc/hostname\" is not a network namespace (unknown FS magic "));
    auto mnt = os::Netns::open("/proc/self/ns/mnt");
    REQUIRE_FALSE(mnt);
    CHECK(mnt.error().msg.find("not a network namespace") != std::string::npos);
    TestNs t("cnit-os");
    auto opened = os::Netns::open(t.path);
    REQUIRE(opened);
    auto copy = opened->dup();
    REQUIRE(copy);
    CHECK(copy->same_as(*opened));
    CHECK_FALSE(copy->same_as(*os::Netns::current()));
}

TEST_CASE("netlink: a socket opened in a namespace works on that namespace", "[nl]") {
    TestNs t("cnit-os");
    auto ns = os::Netns::open(t.path);
    REQUIRE(ns);
    auto sock = nl::Socket::open_in(*ns);
    REQUIRE(sock);
    auto lo = nl::find_link(*sock, "lo");
    REQUIRE(lo);
    REQUIRE(*lo);
    CHECK_FALSE((*lo)->up());
    CHECK((*lo)->mac == "00:00:00:00:00:00");
    REQUIRE(nl::set_link_up(*sock, **lo, true));
    auto now = nl::find_link(*sock, "lo");
    CHECK((*now)->up());
    auto addrs = nl::list_addrs(*sock, (*lo)->index, AF_INET);
    REQUIRE(addrs);
    REQUIRE_FALSE(addrs->empty());
    CHECK((*addrs)[0].local.str() == "127.0.0.1/8");
    auto none = nl::find_link(*sock, "cnit-nope0");
    REQUIRE(none);
    CHECK_FALSE(*none);
    // The namespace's lo changed; ours did not move (the socket was bound there).
    CHECK(std::system(("ip -n " + t.name + " link show lo | grep -q UP").c_str()) == 0);
}

TEST_CASE("the file lock excludes another process until it lets go", "[os]") {
    char tmpl[] = "/tmp/cni-all-lock.XXXXXX";
    std::string dir = ::mkdtemp(tmpl);
    std::string path = dir + "/lock";
    int sync[2];
    REQUIRE(::pipe(sync) == 0);
    pid_t child = ::fork();
    if (child == 0) {
        auto held = os::FileLock::acquire(path);
        char c = held ? 'y' : 'n';
        (void)::write(sync[1], &c, 1);
        ::usleep(300000);
        ::_exit(0);
    }
    char c = 0;
    REQUIRE(::read(sync[0], &c, 1) == 1);
    REQUIRE(c == 'y');
    auto t0 = std::chrono::steady_clock::now();
    auto mine = os::FileLock::acquire(path);
    auto waited = std::chrono::steady_clock::now() - t0;
    REQUIRE(mine);
    CHECK(waited > std::chrono::milliseconds(150));
    int status = 0;
    ::waitpid(child, &status, 0);
    ::close(sync[0]);
    ::close(sync[1]);
    std::filesystem::remove_all(dir);
}

namespace {
std::string recycled_path, other_ns_path;  // for the verb below: verbs are plain functions

// Recycles CNI_NETNS's path to another namespace, then reports whether the verb's handle is
// still the namespace the path named when the call began.
Result<CniResult> recycle_then_look(const Context& ctx) {
    REQUIRE(::umount2(recycled_path.c_str(), MNT_DETACH) == 0);
    REQUIRE(::mount(other_ns_path.c_str(), recycled_path.c_str(), nullptr, MS_BIND, nullptr) == 0);
    auto ns = container_netns(ctx);
    REQUIRE(ns);
    auto now_at_path = os::Netns::open(recycled_path);
    REQUIRE(now_at_path);
    CHECK_FALSE(ns->same_as(*now_at_path));
    return CniResult{};
}
}  // namespace

TEST_CASE("run_verb opens CNI_NETNS once: a path recycled during the call still means the first namespace", "[applet]") {
    TestNs first("cnit-first"), second("cnit-second");
    recycled_path = "/run/netns/cnit-recycled-" + std::to_string(::getpid());
    other_ns_path = second.path;
    { std::ofstream(recycled_path).flush(); }
    REQUIRE(::mount(first.path.c_str(), recycled_path.c_str(), nullptr, MS_BIND, nullptr) == 0);
    const Applet fake{.name = "fake", .kind = AppletKind::main, .summary = "", .keys = {}, .help = "", .versions = kAllVersions,
                      .add = recycle_then_look, .check = [](const Context&) -> Status { return {}; }};
    auto env = [](std::string cmd, std::string netns) {
        return std::vector<std::string>{"CNI_COMMAND=" + cmd, "CNI_CONTAINERID=c1", "CNI_NETNS=" + netns, "CNI_IFNAME=eth0",
                                        "CNI_PATH=/nonexistent"};
    };
    const std::string conf = R"({"cniVersion":"1.0.0","name":"n","type":"fake"})";
    auto stdin_text = [&](std::size_t) { return Result<std::string>(conf); };
    auto add = read_request(env("ADD", recycled_path), stdin_text);
    REQUIRE(add);
    REQUIRE(run_verb(fake, Context{*add, [](std::string_view) {}, nullptr}));
    ::umount2(recycled_path.c_str(), MNT_DETACH);
    ::unlink(recycled_path.c_str());

    // CHECK makes the same sanity check as ADD and DEL (it used to skip it).
    auto check = read_request(env("CHECK", "/proc/self/ns/net"), stdin_text);
    REQUIRE(check);
    auto own = run_verb(fake, Context{*check, [](std::string_view) {}, nullptr});
    REQUIRE_FALSE(own);
    CHECK(own.error().code == code::invalid_netns);
    CHECK(own.error().msg == "plugin's netns and netns from CNI_NETNS should not be the same");
}
