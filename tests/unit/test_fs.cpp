// SPDX-License-Identifier: Apache-2.0
// The file helpers of core/os: whole-file reads, the optional read that tells a file which
// does not exist apart from one that cannot be read, state-directory writes that never follow a
// planted link, a node's file read only from a folder only root can change, a node's folder
// made and opened as root's, and the /proc/sys/net path check.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>

#include "core/os/fs.hpp"
#include "core/os/sysctl.hpp"
#include "temp_dir.hpp"

using namespace cni;

TEST_CASE("read_file_if_exists: the text, nothing for a missing file, an error otherwise", "[os]") {
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

TEST_CASE("Dir: writes never go through a planted link or FIFO; atomic writes leave no temporary", "[os]") {
    TempDir dir, elsewhere;
    elsewhere.write("victim", "original");
    std::filesystem::create_symlink(elsewhere / "victim", dir / "state.json");
    std::filesystem::create_symlink(elsewhere / "victim", dir / "state.json.tmp");  // the old, guessable name
    REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
    auto d = os::Dir::open(dir.path);
    REQUIRE(d);

    REQUIRE(d->write_atomic("state.json", "{}", 0600));
    CHECK(elsewhere.read("victim") == "original");
    CHECK_FALSE(std::filesystem::is_symlink(dir / "state.json"));
    CHECK(dir.read("state.json") == "{}");
    std::size_t entries = 0;
    for (auto& name : d->names()) entries += name.starts_with(".state.json.") ? 100 : 1;
    CHECK(entries == 3);  // state.json, state.json.tmp, fifo: no temporary left

    std::filesystem::create_symlink(elsewhere / "victim", dir / "inplace");
    auto linked = d->write("inplace", "x", 0600);
    REQUIRE_FALSE(linked);
    CHECK(linked.error().msg == "open " + (dir / "inplace") + ": a symbolic link");
    CHECK(elsewhere.read("victim") == "original");
    auto fifo = d->write("fifo", "x", 0600);  // returns at once instead of waiting for a reader
    REQUIRE_FALSE(fifo);
    CHECK(fifo.error().msg.starts_with("open " + (dir / "fifo") + ": "));  // no reader: ENXIO
    auto fifo_read = d->read_if_exists("fifo");
    REQUIRE_FALSE(fifo_read);
    CHECK(fifo_read.error().msg == "open " + (dir / "fifo") + ": not a regular file");

    auto read_link = d->read_if_exists("inplace");
    REQUIRE_FALSE(read_link);
    auto none = d->read_if_exists("none");
    REQUIRE(none);
    CHECK_FALSE(none->has_value());
    CHECK_FALSE(os::read_state_file(dir / "inplace"));
    CHECK(os::read_state_file(dir / "state.json").value() == std::optional<std::string>("{}"));
    CHECK(os::read_state_file(dir / "no-dir/x").value() == std::nullopt);

    os::UniqueFd own = d->open_own("inplace", O_WRONLY | O_CREAT, 0600);  // ours: the link is replaced
    CHECK(own);
    CHECK_FALSE(std::filesystem::is_symlink(dir / "inplace"));
    CHECK(elsewhere.read("victim") == "original");

    const auto before = d->names().size();
    REQUIRE(d->write_atomic("state.json", "[]", 0600, true));  // synced: the same file, no temporary left
    CHECK(dir.read("state.json") == "[]");
    CHECK(d->names().size() == before);
}

TEST_CASE("read_trusted_file: root's own file in a folder only root can change; readable by all when asked", "[os]") {
    TempDir dir;  // under /tmp, which is sticky: others cannot rename what is ours
    dir.write("open.json", "{}");
    dir.write("private.json", "{}");
    dir.write("shared.json", "{}");
    std::filesystem::permissions(dir / "open.json", std::filesystem::perms(0644));
    std::filesystem::permissions(dir / "private.json", std::filesystem::perms(0600));
    std::filesystem::permissions(dir / "shared.json", std::filesystem::perms(0664));
    std::filesystem::create_symlink(dir / "open.json", dir / "link.json");
    CHECK(os::read_trusted_file(dir / "open.json", 64).value() == std::optional<std::string>("{}"));
    CHECK(os::read_trusted_file(dir / "open.json", 64, true).value() == std::optional<std::string>("{}"));
    CHECK(os::read_trusted_file(dir / "private.json", 64).value() == std::optional<std::string>("{}"));
    auto err = [](const Result<std::optional<std::string>>& r) { return r ? std::string("read") : r.error().msg; };
    CHECK(err(os::read_trusted_file(dir / "private.json", 64, true)) == "open " + (dir / "private.json") + ": not readable by all");
    CHECK(err(os::read_trusted_file(dir / "shared.json", 64)) == "open " + (dir / "shared.json") + ": others than root may write it");
    CHECK(err(os::read_trusted_file(dir / "link.json", 64)) == "open " + (dir / "link.json") + ": a symbolic link");
    CHECK(err(os::read_trusted_file("relative.json", 64)) == "open relative.json: not an absolute path");
    CHECK(os::read_trusted_file(dir / "none.json", 64).value() == std::nullopt);
    CHECK(os::read_trusted_file(dir / "no-dir/x.json", 64).value() == std::nullopt);
    std::filesystem::permissions(dir.path, std::filesystem::perms(0777));
    CHECK(err(os::read_trusted_file(dir / "open.json", 64)).find("others may write it") != std::string::npos);
}

TEST_CASE("is_net_sysctl_path: only canonical paths under /proc/sys/net", "[os]") {
    CHECK(os::is_net_sysctl_path("/proc/sys/net/ipv4/conf/eth0.100/arp_filter"));
    CHECK(os::is_net_sysctl_path("/proc/sys/net/core/somaxconn"));
    for (const char* bad : {"/tmp", "", "/proc/sys/net/", "/proc/sys/net", "/proc/sys/kernel/core_pattern",
                            "/proc/sys/net/../kernel/core_pattern", "/proc/sys/net/ipv4/./x", "/proc/sys/net//ipv4",
                            "/proc/sys/net/ipv4/", "/proc/sys/kernel/../../../etc/passwd", "proc/sys/net/core/x"}) {
        INFO(bad);
        CHECK_FALSE(os::is_net_sysctl_path(bad));
        CHECK_FALSE(os::net_sysctl_set(bad, "1"));
    }
}

TEST_CASE("record_name: one name per attachment, even where the IDs hold underscores", "[os]") {
    CHECK(os::record_name("c1", "eth0") == "c1:eth0.json");
    CHECK(os::record_name("a_b", "c") != os::record_name("a", "b_c"));
}

TEST_CASE("Dir::make_trusted: every missing folder made, no link followed, none others may write", "[os]") {
    TempDir dir;  // under /tmp, which is sticky: others cannot rename what is ours
    auto err = [](const Result<os::Dir>& r) { return r ? std::string("opened") : r.error().msg; };
    REQUIRE(os::Dir::make_trusted(dir / "a/b/state", 0755, 0700));
    struct stat st{};
    REQUIRE(::stat((dir / "a/b").c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0755);
    REQUIRE(::stat((dir / "a/b/state").c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0700);
    CHECK(os::Dir::make_trusted(dir / "a/b/state", 0755, 0700));  // there already
    std::filesystem::create_symlink(dir / "a", dir / "link");
    CHECK(err(os::Dir::make_trusted(dir / "link/b/state", 0755, 0700)) == "open " + (dir / "link") + ": a symbolic link");
    std::filesystem::permissions(dir / "a/b/state", std::filesystem::perms(0770));
    CHECK(err(os::Dir::make_trusted(dir / "a/b/state", 0755, 0700)) == "open " + (dir / "a/b/state") + ": others may write it");
    CHECK(err(os::Dir::make_trusted("relative/state", 0755, 0700)) == "open relative/state: not an absolute path");
}
