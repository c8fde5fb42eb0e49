// SPDX-License-Identifier: Apache-2.0
// Whole invocations through run_cni (env + stdin in, one print out, exit code) for the IPAM
// applets, and IPAM delegation both in-process and by exec of another plugin binary.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <thread>

#include "core/ipam/delegate.hpp"
#include "dispatch.hpp"
#include "in_process.hpp"
#include "install.hpp"
#include "registry.hpp"
#include "temp_dir.hpp"

namespace {

struct Run {
    int rc;
    std::string out, err;
};

std::string slurp(std::FILE* f) {
    std::rewind(f);
    std::string s;
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
    std::fclose(f);
    return s;
}

Run run(std::string_view applet, std::vector<std::string> env, const std::string& in) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    REQUIRE(::write(fds[1], in.data(), in.size()) == ssize_t(in.size()));
    ::close(fds[1]);
    std::FILE* out = std::tmpfile();
    std::FILE* err = std::tmpfile();
    int rc = cni::run_cni(*cni::find_applet(applet), env, fds[0], out, err);
    ::close(fds[0]);
    return {rc, slurp(out), slurp(err)};
}

std::vector<std::string> env_for(std::string cmd, std::string id = "c1", std::string path = "/nonexistent") {
    return {"CNI_COMMAND=" + cmd, "CNI_CONTAINERID=" + id, "CNI_NETNS=/nonexistent/netns", "CNI_IFNAME=eth0",
            "CNI_PATH=" + path};
}

std::string host_local_conf(const TempDir& d, std::string version = "1.1.0", std::string extra = "") {
    return R"({"cniVersion":")" + version + R"(","name":"net1","type":"bridge","ipam":{"type":"host-local","subnet":"10.77.0.0/24","dataDir":")" +
           d.path + "\"" + extra + "}}";
}

}  // namespace

TEST_CASE("host-local ADD prints the result at the config's version; DEL releases", "[top][host-local]") {
    TempDir d;
    auto r = run("host-local", env_for("ADD"), host_local_conf(d, "0.3.1"));
    CHECK(r.rc == 0);
    CHECK(r.out == "{\n    \"cniVersion\": \"0.3.1\",\n    \"ips\": [\n        {\n            \"version\": \"4\",\n"
                   "            \"address\": \"10.77.0.2/24\",\n            \"gateway\": \"10.77.0.1\"\n        }\n    ],\n"
                   "    \"dns\": {}\n}");
    CHECK(d.exists("net1/10.77.0.2"));
    r = run("host-local", env_for("CHECK"), host_local_conf(d, "0.4.0"));
    CHECK(r.rc == 0);
    r = run("host-local", env_for("DEL"), host_local_conf(d));
    CHECK(r.rc == 0);
    CHECK(r.out.empty());
    CHECK_FALSE(d.exists("net1/10.77.0.2"));
    r = run("host-local", env_for("DEL"), host_local_conf(d));  // idempotent
    CHECK(r.rc == 0);
    r = run("host-local", env_for("CHECK"), host_local_conf(d));
    CHECK(r.rc == 1);
    CHECK(r.out == "{\n    \"code\": 999,\n    \"msg\": \"host-local: Failed to find address added by container c1\"\n}");
}

TEST_CASE("version gates answer with code 1", "[top]") {
    TempDir d;
    auto r = run("host-local", env_for("ADD"), host_local_conf(d, "0.5.0"));
    CHECK(r.rc == 1);
    CHECK(r.out == R"({
    "code": 1,
    "msg": "incompatible CNI versions",
    "details": "config is \"0.5.0\", plugin supports [\"0.1.0\" \"0.2.0\" \"0.3.0\" \"0.3.1\" \"0.4.0\" \"1.0.0\" \"1.1.0\"]"
})");
    CHECK(run("host-local", env_for("CHECK"), host_local_conf(d, "0.3.1")).out.find("config version does not allow CHECK") != std::string::npos);
    CHECK(run("host-local", env_for("GC"), host_local_conf(d, "1.0.0")).out.find("config version does not allow GC") != std::string::npos);
    CHECK(run("host-local", env_for("STATUS"), host_local_conf(d, "1.0.0")).out.find("config version does not allow STATUS") != std::string::npos);
    CHECK(run("host-local", env_for("CHECK"), host_local_conf(d, "2.0.0")).out.find("plugin version does not allow CHECK") != std::string::npos);
    auto bad = run("host-local", env_for("ADD"), R"({"name":"n","cniVersion":1})");
    CHECK(bad.out.find("\"code\": 6") != std::string::npos);
    CHECK(bad.out.find("decoding version from network config: json: cannot unmarshal number into Go struct field .cniVersion of type string") != std::string::npos);
    auto unknown = run("host-local", {"CNI_COMMAND=FOO"}, host_local_conf(d));
    CHECK(unknown.out == "{\n    \"code\": 4,\n    \"msg\": \"unknown CNI_COMMAND: FOO\"\n}");
}

TEST_CASE("VERSION, the about text, and the stdin bound", "[top]") {
    auto v = run("static", {"CNI_COMMAND=VERSION"}, "ignored");
    CHECK(v.rc == 0);
    CHECK(v.out == "{\"cniVersion\":\"1.1.0\",\"supportedVersions\":[\"0.1.0\",\"0.2.0\",\"0.3.0\",\"0.3.1\",\"0.4.0\",\"1.0.0\",\"1.1.0\"]}\n");
    auto about = run("static", {}, "");
    CHECK(about.rc == 0);
    CHECK(about.out.empty());
    CHECK(about.err == "CNI static plugin v" + std::string(cni::cni_all_version()) +
                           "\nCNI protocol versions supported: 0.1.0, 0.2.0, 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0\n");
    std::string huge(cni::kMaxConfigBytes + 10, ' ');
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    REQUIRE(::fcntl(fds[1], F_SETPIPE_SZ, 1 << 20) > 0);
    std::thread writer([&] {
        std::size_t off = 0;
        while (off < huge.size()) {
            auto n = ::write(fds[1], huge.data() + off, std::min<std::size_t>(65536, huge.size() - off));
            if (n <= 0) break;
            off += std::size_t(n);
        }
        ::close(fds[1]);
    });
    std::FILE* out = std::tmpfile();
    std::FILE* err = std::tmpfile();
    int rc = cni::run_cni(*cni::find_applet("static"), env_for("ADD"), fds[0], out, err);
    ::close(fds[0]);
    writer.join();
    CHECK(rc == 1);
    auto text = slurp(out);
    slurp(err);
    CHECK(text.find("\"code\": 5") != std::string::npos);
    CHECK(text.find("larger than 16 MiB") != std::string::npos);
}

TEST_CASE("host-local GC releases what is not in valid-attachments; STATUS reports exhaustion", "[top][host-local]") {
    TempDir d;
    for (auto id : {"keep", "drop1", "drop2"}) REQUIRE(run("host-local", env_for("ADD", id), host_local_conf(d)).rc == 0);
    d.write("net1/10.77.0.200", "legacy-keep");
    std::string gc_conf = R"({"cniVersion":"1.1.0","name":"net1","ipam":{"type":"host-local","subnet":"10.77.0.0/24","dataDir":")" +
                          d.path + R"("},"cni.dev/valid-attachments":[{"containerID":"keep","ifname":"eth0"},{"containerID":"legacy-keep","ifname":"eth9"}]})";
    auto r = run("host-local", {"CNI_COMMAND=GC", "CNI_PATH=/x"}, gc_conf);
    CHECK(r.rc == 0);
    CHECK(d.exists("net1/10.77.0.2"));
    CHECK_FALSE(d.exists("net1/10.77.0.3"));
    CHECK_FALSE(d.exists("net1/10.77.0.4"));
    CHECK(d.exists("net1/10.77.0.200"));
    // Without the key nothing is released.
    r = run("host-local", {"CNI_COMMAND=GC", "CNI_PATH=/x"}, host_local_conf(d));
    CHECK(r.rc == 0);
    CHECK(d.exists("net1/10.77.0.2"));

    std::string tiny = R"({"cniVersion":"1.1.0","name":"tiny","ipam":{"type":"host-local","subnet":"10.78.0.0/30","dataDir":")" + d.path + "\"}}";
    CHECK(run("host-local", {"CNI_COMMAND=STATUS", "CNI_PATH=/x"}, tiny).rc == 0);
    REQUIRE(run("host-local", env_for("ADD", "only"), tiny).rc == 0);
    auto st = run("host-local", {"CNI_COMMAND=STATUS", "CNI_PATH=/x"}, tiny);
    CHECK(st.rc == 1);
    CHECK(st.out == "{\n    \"code\": 50,\n    \"msg\": \"no IP addresses available in range set: 10.78.0.1-10.78.0.2\"\n}");
    auto add = run("host-local", env_for("ADD", "second"), tiny);
    CHECK(add.out.find("failed to allocate for range 0: no IP addresses available in range set: 10.78.0.1-10.78.0.2") != std::string::npos);
}

TEST_CASE("host-local request sources, range sets and config errors", "[top][host-local]") {
    TempDir d;
    auto conf = [&](std::string ipam_extra, std::string top_extra = "", std::string v = "1.1.0") {
        return R"({"cniVersion":")" + v + R"(","name":"n2","ipam":{"type":"host-local","dataDir":")" + d.path + "\"" + ipam_extra + "}" +
               top_extra + "}";
    };
    auto dual = conf(R"(,"ranges":[[{"subnet":"10.80.0.0/24"}],[{"subnet":"fd80::/64"}]])",
                     R"(,"runtimeConfig":{"ips":["10.80.0.50/24"]},"args":{"cni":{"ips":["fd80::50"]}})");
    auto r = run("host-local", env_for("ADD", "dual"), dual);
    REQUIRE(r.rc == 0);
    CHECK(r.out.find("\"address\": \"10.80.0.50/24\"") != std::string::npos);
    CHECK(r.out.find("\"address\": \"fd80::50/64\"") != std::string::npos);
    auto env = env_for("ADD", "envip");
    env.push_back("CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAME=x;IP=10.81.0.9");
    r = run("host-local", env, conf(R"(,"subnet":"10.81.0.0/24")"));
    CHECK(r.out.find("10.81.0.9/24") != std::string::npos);
    env = env_for("ADD", "envip2");
    env.push_back("CNI_ARGS=IP=10.99.0.9");
    r = run("host-local", env, conf(R"(,"subnet":"10.81.0.0/24")"));
    CHECK(r.out.find("failed to allocate all requested IPs: 10.99.0.9") != std::string::npos);
    CHECK_FALSE(d.exists("n2/10.81.0.2"));  // the address of range set 0 was released again

    auto msg = [&](std::string c) { return run("host-local", env_for("ADD", "err"), c).out; };
    CHECK(msg(R"({"cniVersion":"1.1.0","name":"n3"})").find("IPAM config missing 'ipam' key") != std::string::npos);
    CHECK(msg(conf("")).find("no IP ranges specified") != std::string::npos);
    CHECK(msg(conf(R"(,"subnet":"10.0.0.0/31")")).find("invalid range set 0: Network 10.0.0.0/31 too small to allocate from") != std::string::npos);
    CHECK(msg(conf(R"(,"ranges":[[{"subnet":"10.1.0.0/24"}],[{"subnet":"10.1.0.0/25"}]])")).find("range set 0 overlaps with 1") != std::string::npos);
    CHECK(msg(conf(R"(,"ranges":[[{"subnet":"10.1.0.0/24"}],[{"subnet":"10.2.0.0/24"}]])", "", "0.2.0")).find("CNI version 0.2.0 does not support more than 1 address per family") != std::string::npos);
    CHECK(msg(conf(R"(,"subnet":"10.1.0.0/24","dataDir":7)")).find("json: cannot unmarshal number into Go struct field IPAMConfig.ipam.dataDir of type string") != std::string::npos);
    CHECK(msg(conf(R"(,"subnet":"nonsense")")).find("invalid CIDR address: nonsense") != std::string::npos);
    CHECK(msg(conf(R"(,"subnet":"10.1.0.0/24","resolvConf":"/nonexistent")")).find("open /nonexistent: no such file or directory") != std::string::npos);
}

TEST_CASE("static returns its addresses, applies CNI_ARGS, and args/runtimeConfig replace", "[top][static]") {
    std::string base = R"({"cniVersion":"1.0.0","name":"s","ipam":{"type":"static","addresses":[{"address":"10.10.0.1/24","gateway":"10.10.0.254"},{"address":"3ffe:ffff:0:1ff::1/64"}],"routes":[{"dst":"0.0.0.0/0"}],"dns":{"nameservers":["8.8.8.8"],"domain":"example.com"}}})";
    auto r = run("static", env_for("ADD"), base);
    CHECK(r.rc == 0);
    CHECK(r.out == R"({
    "cniVersion": "1.0.0",
    "dns": {
        "domain": "example.com",
        "nameservers": [
            "8.8.8.8"
        ]
    },
    "ips": [
        {
            "address": "10.10.0.1/24",
            "gateway": "10.10.0.254"
        },
        {
            "address": "3ffe:ffff:0:1ff::1/64"
        }
    ],
    "routes": [
        {
            "dst": "0.0.0.0/0"
        }
    ]
})");
    auto env = env_for("ADD");
    env.push_back("CNI_ARGS=IP=10.20.0.5/24, 10.30.0.5/16;GATEWAY=10.20.0.1");
    r = run("static", env, base);
    CHECK(r.out.find("\"address\": \"10.20.0.5/24\",\n            \"gateway\": \"10.20.0.1\"") != std::string::npos);
    CHECK(r.out.find("10.30.0.5/16") != std::string::npos);
    std::string replaced = R"({"cniVersion":"1.0.0","name":"s","ipam":{"type":"static","addresses":[{"address":"10.10.0.1/24"}]},"args":{"cni":{"ips":["10.40.0.1/24"]}},"runtimeConfig":{"ips":["10.50.0.1/24"]}})";
    r = run("static", env_for("ADD"), replaced);
    CHECK(r.out.find("10.50.0.1/24") != std::string::npos);
    CHECK(r.out.find("10.10.0.1") == std::string::npos);
    CHECK(r.out.find("10.40.0.1") == std::string::npos);
    auto two_v4 = R"({"cniVersion":"0.2.0","name":"s","ipam":{"type":"static","addresses":[{"address":"10.1.0.1/24"},{"address":"10.2.0.1/24"}]}})";
    CHECK(run("static", env_for("ADD"), two_v4).out.find("CNI version 0.2.0 does not support more than 1 address per family") != std::string::npos);
    auto bad = R"({"cniVersion":"1.0.0","name":"s","ipam":{"type":"static","addresses":[{"address":"10.1.0.1"}]}})";
    CHECK(run("static", env_for("ADD"), bad).out.find("the 'address' field is expected to be in CIDR notation, got: '10.1.0.1'") != std::string::npos);
    auto bad_rc = R"({"cniVersion":"1.0.0","name":"s","ipam":{"type":"static"},"runtimeConfig":{"ips":["10.1.0.1"]}})";
    CHECK(run("static", env_for("ADD"), bad_rc).out.find("an entry in the 'ips' field is NOT in CIDR notation, got: '10.1.0.1'") != std::string::npos);
    CHECK(run("static", env_for("DEL"), base).rc == 0);
    // CHECK compares configured gateways with the prevResult.
    std::string with_prev = R"({"cniVersion":"1.0.0","name":"s","ipam":{"type":"static","addresses":[{"address":"10.10.0.1/24","gateway":"10.10.0.254"}]},
        "prevResult":{"cniVersion":"1.0.0","ips":[{"address":"10.10.0.1/24","gateway":"10.10.0.9"}]}})";
    auto chk = run("static", env_for("CHECK"), with_prev);
    CHECK(chk.out.find("static: Failed to match addr 10.10.0.1 on interface eth0") != std::string::npos);
    CHECK(run("static", env_for("CHECK"), base).out.find("Required prevResult missing") != std::string::npos);
}

TEST_CASE("host-device refuses a deviceID, pciBusID or kernelpath that climbs out of sysfs", "[top][host-device]") {
    for (std::string extra : {R"("device":"x","runtimeConfig":{"deviceID":"../../../../tmp"})", R"("pciBusID":"..")",
                              R"("kernelpath":"/sys/devices/../../etc")"}) {
        INFO(extra);
        auto r = run("host-device", env_for("DEL"), R"({"cniVersion":"1.0.0","name":"n","type":"host-device",)" + extra + "}");
        CHECK(r.rc == 1);
        CHECK(r.out.find("\"code\": 7") != std::string::npos);
        CHECK((r.out.find("is not a device name") != std::string::npos || r.out.find("must not contain") != std::string::npos));
    }
}

TEST_CASE("find_in_path follows the reference, refusing names with a slash", "[ipam]") {
    TempDir d;
    d.write("bin/plug", "#!/bin/sh\n");
    std::filesystem::create_directories(d / "dir/sub");
    CHECK(cni::ipam::find_in_path("plug", "/nonexistent:" + d / "bin").value() == d / "bin/plug");
    CHECK(cni::ipam::find_in_path("sub", d / "dir").error().msg == "failed to find plugin \"sub\" in path [" + d / "dir" + "]");
    CHECK(cni::ipam::find_in_path("../../sbin/reboot", d / "bin").error().msg == "invalid plugin name: ../../sbin/reboot");
    CHECK(cni::ipam::find_in_path("", d / "bin").error().msg == "no plugin name provided");
    // Empty and relative entries are skipped: they would find the working directory's files.
    std::filesystem::current_path(d / "bin");
    CHECK(cni::ipam::find_in_path("plug", ":.:bin").error().msg == "failed to find plugin \"plug\" in path [ . bin]");
    std::filesystem::current_path("/");
}

TEST_CASE("a launcher `install` wrote beside this binary counts as this binary; one elsewhere does not", "[top][os]") {
    TempDir d;
    std::filesystem::create_directories(d / "bin");
    std::filesystem::create_symlink(std::filesystem::read_symlink("/proc/self/exe"), d / "bin/cni-all");
    cni::InstallOptions o{d / "bin", {"host-local"}, {}, false, false};
    std::FILE* out = std::tmpfile();
    REQUIRE(cni::install_applets(o, out, out) == 0);
    std::fclose(out);
    CHECK(cni::is_self_exe(d / "bin/host-local"));       // in-process delegation through it
    std::filesystem::create_directories(d / "other");
    std::filesystem::copy_file(d / "bin/host-local", d / "other/host-local");
    CHECK_FALSE(cni::is_self_exe(d / "other/host-local"));  // its folder has no cni-all of ours
    std::filesystem::create_symlink(d / "bin/host-local", d / "other/hl");
    CHECK(cni::is_self_exe(d / "other/hl"));               // a link to our launcher
}

TEST_CASE("IPAM delegation runs our applet in-process and another binary by exec", "[ipam][top]") {
    TempDir d;
    std::filesystem::create_directories(d / "self");
    std::filesystem::create_symlink(std::filesystem::read_symlink("/proc/self/exe"), d / "self/host-local");
    std::string conf = host_local_conf(d, "0.4.0");
    auto req_env = env_for("ADD", "deleg", d / "self");
    cni::Request req;
    req.command = cni::Command::add;
    req.container_id = "deleg";
    req.ifname = "eth0";
    req.netns = "/nonexistent/netns";
    req.path = d / "self";
    req.config = conf;
    req.environ = req_env;
    std::vector<std::string> warnings;
    cni::Context ctx{req, [&](std::string_view w) { warnings.emplace_back(w); }, nullptr, {}, cni::in_process_applet};
    auto pid_before = ::getpid();
    auto r = cni::ipam::delegate_add(ctx, "host-local", conf);
    REQUIRE(r);
    CHECK(::getpid() == pid_before);
    CHECK(r->ips.at(0).address.str() == "10.77.0.2/24");
    CHECK(r->cni_version == "1.1.0");
    REQUIRE(cni::ipam::delegate_del(ctx, "host-local", conf));
    CHECK_FALSE(d.exists("net1/10.77.0.2"));

    // Debian's Go host-local, if installed, is exec'd; its errors propagate with their code.
    if (std::filesystem::exists("/usr/lib/cni/host-local")) {
        req.path = "/usr/lib/cni";
        req.environ = env_for("ADD", "deleg", "/usr/lib/cni");
        auto g = cni::ipam::delegate_add(ctx, "host-local", conf);
        REQUIRE(g);
        CHECK(g->ips.at(0).address.str() == "10.77.0.3/24");  // round robin after our .2
        CHECK(d.exists("net1/10.77.0.3"));
        REQUIRE(cni::ipam::delegate_del(ctx, "host-local", conf));
        CHECK_FALSE(d.exists("net1/10.77.0.3"));
        auto bad = cni::ipam::delegate_add(ctx, "host-local", R"({"cniVersion":"9.9.9","name":"x"})");
        REQUIRE_FALSE(bad);
        CHECK(bad.error().code == 1);
        CHECK(bad.error().msg == "incompatible CNI versions");
    }
    auto missing = cni::ipam::delegate_add(ctx, "no-such-ipam", conf);
    CHECK(missing.error().msg.starts_with("failed to find plugin \"no-such-ipam\" in path"));
}
