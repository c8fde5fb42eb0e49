// SPDX-License-Identifier: Apache-2.0
// The file helpers of core/os: whole-file reads, and the optional read that tells a file which
// does not exist apart from one that cannot be read.
#include <catch2/catch.hpp>

#include "core/os/fs.hpp"
#include "temp_dir.hpp"

using namespace cni;

TEST_CASE("read_file_if_exists: the text, nothing for a missing file, an error otherwise") {
    TempDir dir;
    dir.write("a.conf", "line 1\nline 2\n");
    auto present = os::read_file_if_exists(dir / "a.conf");
    REQUIRE(present);
    REQUIRE(present->has_value());
    CHECK(**present == "line 1\nline 2\n");

    auto missing = os::read_file_if_exists(dir / "none.conf");
    REQUIRE(missing);
    CHECK_FALSE(missing->has_value());

    auto directory = os::read_file_if_exists(dir.path);
    REQUIRE_FALSE(directory);
    CHECK(directory.error().msg.find(dir.path) != std::string::npos);
    CHECK_FALSE(os::read_file(dir / "none.conf"));
}
