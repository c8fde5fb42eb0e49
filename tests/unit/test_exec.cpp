// SPDX-License-Identifier: Apache-2.0
// Running programs (core/os/exec): arguments, environment, stdin and both outputs reach the
// child and come back; the exit status reads as Go's; look_path finds a program as Go's
// exec.LookPath does; an SELinux label that cannot be set stops the program from running.
#include <sys/stat.h>

#include <filesystem>

#include <catch2/catch.hpp>

#include "core/os/exec.hpp"
#include "temp_dir.hpp"

using namespace cni;

namespace {

void write_program(const TempDir& dir, const std::string& name, const std::string& body, mode_t mode = 0755) {
    dir.write(name, "#!/bin/sh\n" + body + "\n");
    ::chmod((dir / name).c_str(), mode);
}

}  // namespace

TEST_CASE("run_program: argv, environment, stdin, both outputs and the exit status", "[os]") {
    TempDir dir;
    write_program(dir, "echo-all", R"(echo "$0|$1|$2|$GREETING"; cat; echo oops >&2; exit 3)");
    auto res = os::run_program({dir / "echo-all", {"a b", "c"}, {"GREETING=hi"}, "from stdin", {}});
    REQUIRE(res);
    CHECK(res->out == dir / "echo-all" + "|a b|c|hi\nfrom stdin");
    CHECK(res->err == "oops\n");
    CHECK_FALSE(res->ok());
    CHECK(res->status_text() == "exit status 3");
}

TEST_CASE("run_program: a program printing without end is stopped at the output limit", "[os]") {
    TempDir dir;
    write_program(dir, "flood", "exec cat /dev/zero");
    auto res = os::run_program({dir / "flood", {}, {}, {}, {}});
    REQUIRE_FALSE(res);
    CHECK(res.error().msg == dir / "flood" + " wrote more than 16 MiB; it was stopped");
}

TEST_CASE("run_program: a program that cannot be run is an error naming it", "[os]") {
    TempDir dir;
    write_program(dir, "not-executable", "exit 0", 0644);
    auto res = os::run_program({dir / "not-executable", {}, {}, {}, {}});
    REQUIRE_FALSE(res);
    CHECK(res.error().msg == "fork/exec " + dir / "not-executable" + ": permission denied");
}

TEST_CASE("run_program: an SELinux exec label the kernel refuses keeps the program from running", "[os]") {
    // Not a context under SELinux, nor a command under AppArmor; nothing takes it without an LSM.
    TempDir dir;
    write_program(dir, "marker", "touch " + dir / "ran");
    auto res = os::run_program({dir / "marker", {}, {}, {}, "no such context"});
    REQUIRE_FALSE(res);
    CHECK(res.error().msg ==
          "failed to set the SELinux exec label \"no such context\": write /proc/thread-self/attr/exec: invalid argument");
    CHECK_FALSE(dir.exists("ran"));
}

TEST_CASE("look_path: the first executable file in the absolute directories of a PATH value", "[os]") {
    TempDir dir;
    write_program(dir, "a/tool", "exit 0", 0644);  // not executable: skipped
    write_program(dir, "b/tool", "exit 0");
    write_program(dir, "c/tool", "exit 0");
    std::filesystem::create_directories(dir / "d/tool");  // a directory: skipped
    auto found = os::look_path("tool", dir / "d" + ":relative:" + dir / "a" + "::" + dir / "b" + ":" + dir / "c");
    REQUIRE(found);
    CHECK(*found == dir / "b/tool");
    auto missing = os::look_path("tool", dir / "a");
    REQUIRE_FALSE(missing);
    CHECK(missing.error().msg == "exec: \"tool\": executable file not found in $PATH");
    CHECK_FALSE(os::look_path("tool", ""));
}
