// SPDX-License-Identifier: Apache-2.0
// Root tests of what happens when another writer commits between our read of the firewall and
// our commit, inside throwaway namespaces. nf_tables: a transaction bound to the generation it
// was read at applies nothing once another transaction came in between, and says "try again
// later" (code 11); nft::transact reads and builds again, and gives up after kTransactAttempts.
// IptTable::transact, in both variants, runs the change again on a fresh copy when iptables-nft
// (which takes no xtables lock) or iptables-legacy committed in between, so a rule the other
// writer added meanwhile is not doubled. A dump that a commit interrupts is taken again. Rules
// added to a chain before it is read keep their places once it is, and a jump to a chain the
// table lacks is known absent without reading the chain. And real
// concurrency: 8 processes at once adding the portmap localnet guard (the nftables backend takes
// no lock) or appending one iptables-nft rule without the xtables lock leave exactly one copy.
#include <catch2/catch.hpp>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

#include "applets/firewall/forward.hpp"
#include "applets/firewall/handle_record.hpp"
#include "applets/portmap/host_ports.hpp"
#include "core/fw/iptables.hpp"
#include "core/fw/nftables.hpp"
#include "test_ns.hpp"
#include "../unit/temp_dir.hpp"

using namespace cni;
namespace nft = cni::fw::nft;

namespace {

// How often `needle` occurs in what the command prints.
int occurrences(const std::string& cmd, const std::string& needle) {
    std::string out = run(cmd);
    int n = 0;
    for (std::size_t pos = 0; (pos = out.find(needle, pos)) != std::string::npos; pos += needle.size()) ++n;
    return n;
}

fw::IptRule accept_from(const char* ip) {
    fw::IptRule r;
    r.src = net::IpNet::parse(std::string(ip) + "/32");
    r.target = "ACCEPT";
    return r;
}

// A worker's outcome; a failure's error goes to stderr, which the test log keeps.
bool succeeded(const Status& s) {
    if (!s) std::fprintf(stderr, "# worker %d failed: code %d: %s\n", int(::getpid()), s.error().code, s.error().msg.c_str());
    return bool(s);
}

// A process committing to nf_tables in the namespace about every 10 ms (a table more each time,
// so the rules of other tables stay as they are): far more often than kube-proxy, yet with
// room for a dump between two commits. Killed with its process group when it goes.
struct BusyWriter {
    pid_t pid;
    // A commit every `pause` seconds (plus an nft start).
    explicit BusyWriter(const TestNs& ns, const char* pause = "0.01") : pid(::fork()) {
        REQUIRE(pid >= 0);
        if (pid == 0) {
            ::setpgid(0, 0);
            std::string loop = "ip netns exec " + ns.name + " sh -c 'i=0; while :; do i=$((i+1)); nft add table ip cnit_w$i; sleep " + std::string(pause) + "; done'";
            ::execl("/bin/sh", "sh", "-c", loop.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
        ::setpgid(pid, pid);
    }
    BusyWriter(const BusyWriter&) = delete;
    BusyWriter& operator=(const BusyWriter&) = delete;
    ~BusyWriter() {
        ::kill(-pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
    }
};

const char* tool(fw::Variant v) { return v == fw::Variant::nft ? "iptables-nft" : "iptables-legacy"; }

// The firewall's per-address rules set up through its iptables driver, kept.
Status setup_forward(const firewall::ForwardSpec& spec) {
    Rollback undo;
    auto st = firewall::iptables_forward().setup(spec, undo);
    if (st) undo.dismiss();
    return st;
}

}  // namespace

TEST_CASE("an nf_tables transaction read before another commit applies nothing and is built again", "[fw]") {
    TestNs ns("cnit-gen");
    const std::string tables = "ip netns exec " + ns.name + " nft list tables";
    inside(ns, [&] {
        auto gen = nft::generation();
        REQUIRE(gen);
        REQUIRE(ns.sh("nft add table ip cnit_other") == 0);
        auto later = nft::generation();
        REQUIRE(later);
        CHECK(*later != *gen);

        nft::Batch stale(*gen);
        stale.add_table(nft::Family::ip, "cnit_mine", "");
        auto refused = stale.commit("adding cnit_mine");
        REQUIRE_FALSE(refused);
        CHECK(refused.error().code == code::try_again_later);
        CHECK(refused.error().msg == "adding cnit_mine: the ruleset changed while the transaction was built");
        CHECK(run(tables).find("cnit_mine") == std::string::npos);

        nft::Batch current(*later);
        current.add_table(nft::Family::ip, "cnit_mine", "");
        CHECK(current.commit("adding cnit_mine"));
        CHECK(run(tables).find("cnit_mine") != std::string::npos);

        // transact builds again after another writer's commit, and gives up after its attempts.
        int builds = 0;
        auto once = nft::transact("adding cnit_again", [&](nft::Batch& tx) -> Status {
            if (++builds == 1) REQUIRE(ns.sh("nft add table ip cnit_third") == 0);
            tx.add_table(nft::Family::ip, "cnit_again", "");
            return {};
        });
        CHECK(once);
        CHECK(builds == 2);
        CHECK(run(tables).find("cnit_again") != std::string::npos);

        builds = 0;
        auto never = nft::transact("adding cnit_never", [&](nft::Batch& tx) -> Status {
            REQUIRE(ns.sh("nft add table ip cnit_busy" + std::to_string(++builds)) == 0);
            tx.add_table(nft::Family::ip, "cnit_never", "");
            return {};
        });
        REQUIRE_FALSE(never);
        CHECK(never.error().code == code::try_again_later);
        CHECK(builds == nft::kTransactAttempts);
        CHECK(run(tables).find("cnit_never") == std::string::npos);
    });
}

TEST_CASE("a dump of a table another writer commits to meanwhile is taken again, never half", "[fw]") {
    TestNs ns("cnit-dump");
    // 2,000 rules: a dump the kernel sends in many rounds, between which commits come.
    const std::string script = "/tmp/" + ns.name + ".nft";
    {
        std::ofstream f(script);
        f << "add table ip nat\nadd chain ip nat POSTROUTING { type nat hook postrouting priority 100; }\n";
        for (int i = 0; i < 2000; ++i) f << "add rule ip nat POSTROUTING ip saddr 10.9." << i / 250 << "." << i % 250 + 1 << " accept\n";
    }
    REQUIRE(ns.sh("nft -f " + script) == 0);
    std::remove(script.c_str());
    inside(ns, [&] {
        auto before = nft::generation();
        REQUIRE(before);
        auto commits = [&] {
            auto now = nft::generation();
            REQUIRE(now);
            return *now - *before;
        };
        {
            // 20 commits a second: a dump of 2,000 rules fits between two even in the
            // unoptimised sanitizer build, as it must for the test to end.
            BusyWriter writer(ns, "0.05");
            // At least 30 rounds, and on until the writer has committed 20 times meanwhile.
            for (int i = 0; i < 30 || (commits() < 20 && i < 3000); ++i) {
                auto rules = nft::list_rules(nft::Family::ip, "nat");
                INFO((rules ? std::string() : rules.error().msg));
                REQUIRE(rules);
                CHECK(rules->size() == 2000);
                auto chains = nft::list_chains(nft::Family::ip, "nat");
                INFO((chains ? std::string() : chains.error().msg));
                REQUIRE(chains);
                CHECK(*chains == std::vector<std::string>{"POSTROUTING"});
            }
        }
        CHECK(commits() >= 20);  // the dumps ran while the writer committed
    });
}

TEST_CASE("IptTable::transact reads the table again when another writer commits in between, in both variants", "[fw]") {
    for (fw::Variant v : fw::kVariants) {
        INFO(tool(v));
        VariantPath node(v);  // a legacy table is made only on a legacy node
        TestNs ns("cnit-gen");
        const std::string save = "ip netns exec " + ns.name + " " + tool(v) + "-save -t nat";
        inside(ns, [&] {
            auto nat = fw::IptTable::open(fw::Family::v4, "nat", v);
            REQUIRE(nat);
            // The Go plugin (or an admin) adds the very rule we are about to add, after we read
            // the chain.
            int runs = 0;
            auto status = nat->transact([&](fw::IptTable& t) -> Status {
                if (++runs == 1) {
                    auto there = t.has_rule("POSTROUTING", accept_from("10.1.0.5"));
                    REQUIRE((there && !*there));
                    REQUIRE(ns.sh(std::string(tool(v)) + " -t nat -A POSTROUTING -s 10.1.0.5 -j ACCEPT") == 0);
                }
                return t.append_unique("POSTROUTING", accept_from("10.1.0.5"));
            });
            CHECK(status);
            CHECK(runs == 2);
            CHECK(occurrences(save, "-A POSTROUTING -s 10.1.0.5/32 -j ACCEPT") == 1);

            // A change without a writer in between commits at once, and the copy stays usable.
            runs = 0;
            CHECK(nat->transact([&](fw::IptTable& t) { return ++runs, t.append_unique("POSTROUTING", accept_from("10.1.0.6")); }));
            CHECK(runs == 1);
            CHECK(occurrences(save, "-A POSTROUTING -s 10.1.0.6/32 -j ACCEPT") == 1);
        });
    }
}

TEST_CASE("rules added before a chain is read keep their place, jumps to absent chains are found without reading", "[fw]") {
    for (fw::Variant v : fw::kVariants) {
        INFO(tool(v));
        VariantPath node(v);
        TestNs ns("cnit-lazy");
        REQUIRE(ns.sh(std::string(tool(v)) + " -t nat -N CNI-LAZY && " + tool(v) + " -t nat -A CNI-LAZY -s 10.1.0.1 -j ACCEPT && " +
                      tool(v) + " -t nat -A CNI-LAZY -s 10.1.0.2 -j ACCEPT") == 0);
        const std::string save = "ip netns exec " + ns.name + " " + tool(v) + "-save -t nat";
        inside(ns, [&] {
            auto nat = fw::IptTable::open(fw::Family::v4, "nat", v);
            REQUIRE(nat);
            auto jump = [](const char* chain) {
                fw::IptRule r;
                r.target = chain;
                return r;
            };
            // Nothing can jump to a chain the table does not have: nothing to delete, no error.
            auto none = nat->delete_if("CNI-LAZY", "CNI-ABSENT");
            REQUIRE(none);
            CHECK(*none == 0);
            REQUIRE(nat->create_chain("CNI-TOP"));
            REQUIRE(nat->create_chain("CNI-END"));
            REQUIRE(nat->insert_unique("CNI-LAZY", jump("CNI-TOP")));
            REQUIRE(nat->append_unique("CNI-LAZY", jump("CNI-END")));
            REQUIRE(nat->append_unique("CNI-LAZY", jump("CNI-END")));  // once only
            auto rules = nat->rules("CNI-LAZY");
            REQUIRE(rules);
            std::vector<std::string> order;
            for (auto& l : *rules) order.push_back(l.rule.target + (l.rule.src ? " " + l.rule.src->str() : ""));
            CHECK(order == std::vector<std::string>{"CNI-TOP", "ACCEPT 10.1.0.1/32", "ACCEPT 10.1.0.2/32", "CNI-END"});
            REQUIRE(nat->commit());
            CHECK(run(save).find("-A CNI-LAZY -j CNI-TOP\n-A CNI-LAZY -s 10.1.0.1/32 -j ACCEPT\n-A CNI-LAZY -s 10.1.0.2/32 -j "
                                 "ACCEPT\n-A CNI-LAZY -j CNI-END\n") != std::string::npos);
            // After its commit the copy goes on (legacy: libiptc reads the table again once).
            int runs = 0;
            auto again = nat->transact([&](fw::IptTable& t) -> Status {
                ++runs;
                CNI_TRY_ASSIGN(int n, t.delete_if("CNI-LAZY", "CNI-TOP"));
                if (n != 1) return fail("deleted " + std::to_string(n) + " rules");
                return {};
            });
            INFO((again ? std::string() : again.error().msg));
            REQUIRE(again);
            if (v == fw::Variant::nft) CHECK(runs == 1);  // the nft copy reads afresh after its commit, handles included
            CHECK(occurrences(save, "-j CNI-TOP") == 0);
            CHECK(occurrences(save, "-j CNI-END") == 1);
        });
    }
}

TEST_CASE("8 processes at once adding the localnet guard or one iptables-nft rule, without a lock, leave one copy", "[fw][portmap]") {
    for (int round = 0; round < 5; ++round) {
        TestNs ns("cnit-gen");
        CHECK(at_once(ns, [](int) { return succeeded(portmap::nftables_localnet_guard()); }) == 0);
        CHECK(occurrences("ip netns exec " + ns.name + " nft list chain ip cni_hostport localnet_guard",
                          "CNI portfwd: block incoming localnet connections") == 1);
        CHECK(at_once(ns, [](int) {
                  auto nat = fw::IptTable::open(fw::Family::v4, "nat", fw::Variant::nft);
                  if (!nat) return succeeded(Status(cni::Unexpected(nat.error())));
                  return succeeded(nat->transact([](fw::IptTable& t) { return t.append_unique("POSTROUTING", accept_from("10.1.0.7")); }));
              }) == 0);
        CHECK(occurrences("ip netns exec " + ns.name + " iptables-nft-save -t nat", "-A POSTROUTING -s 10.1.0.7/32 -j ACCEPT") == 1);
    }
}

TEST_CASE("jumps to an attachment's chain are deleted without reading the chain that holds them, when they can be told apart", "[fw]") {
    VariantPath node(fw::Variant::nft);
    TestNs ns("cnit-jumps");
    const std::string save = "ip netns exec " + ns.name + " iptables-nft-save -t nat";
    // A shared chain holding 200 other attachments' jumps, made the way the Go plugins make them.
    std::string setup = "iptables-nft -t nat -N CNI-SHARED";
    for (int i = 0; i < 200; ++i) setup += " && iptables-nft -t nat -A CNI-SHARED -s 10.9." + std::to_string(i / 250) + "." + std::to_string(i % 250) + " -j ACCEPT";
    REQUIRE(ns.sh(setup) == 0);
    auto jump = [](const char* chain, const char* src = nullptr) {
        fw::IptRule r;
        if (src) r.src = net::IpNet::parse(src);
        r.target = chain;
        return r;
    };
    inside(ns, [&] {
        // One transaction makes the attachment's chain, its rules, and two jumps to it.
        auto add = fw::IptTable::open(fw::Family::v4, "nat", fw::Variant::nft);
        REQUIRE(add);
        REQUIRE(add->create_chain("CNI-ATT"));
        REQUIRE(add->append_unique("CNI-ATT", jump("ACCEPT", "10.1.0.1/32")));
        REQUIRE(add->append_unique("CNI-ATT", jump("ACCEPT", "10.1.0.2/32")));
        REQUIRE(add->append_unique("CNI-SHARED", jump("CNI-ATT", "10.2.0.0/24")));
        REQUIRE(add->append_unique("CNI-SHARED", jump("CNI-ATT", "10.3.0.0/24")));
        REQUIRE(add->commit());
        CHECK(occurrences(save, "-j CNI-ATT") == 2);

        auto del = fw::IptTable::open(fw::Family::v4, "nat", fw::Variant::nft);
        REQUIRE(del);
        auto dumps = nft::chain_dumps_taken();
        auto n = del->delete_if("CNI-SHARED", "CNI-ATT");
        REQUIRE(n);
        CHECK(*n == 2);
        CHECK(nft::chain_dumps_taken() == dumps + 1);  // CNI-ATT's two rules, not CNI-SHARED's 202
        REQUIRE(del->flush_chain("CNI-ATT"));
        REQUIRE(del->delete_chain("CNI-ATT"));
        // The shared chain read after the deletes does not show them.
        auto rest = del->rules("CNI-SHARED");
        REQUIRE(rest);
        CHECK(rest->size() == 200);
        REQUIRE(del->commit());
        CHECK(occurrences(save, "-j CNI-ATT") == 0);
        CHECK(occurrences(save, "-A CNI-SHARED") == 200);
    });
    // Jumps the iptables binary adds, each its own transaction with others' in between, and a
    // jump from a second chain: the handles do not tell them apart, so the chain is read, and
    // only its jumps go.
    REQUIRE(ns.sh("iptables-nft -t nat -N CNI-ATT2 && iptables-nft -t nat -A CNI-ATT2 -j ACCEPT && iptables-nft -t nat -N "
                  "CNI-OTHER && iptables-nft -t nat -A CNI-OTHER -j CNI-ATT2 && for i in $(seq 40); do iptables-nft -t nat -A "
                  "CNI-OTHER -s 10.8.0.$i -j ACCEPT; done && iptables-nft -t nat -A CNI-SHARED -j CNI-ATT2") == 0);
    inside(ns, [&] {
        auto del = fw::IptTable::open(fw::Family::v4, "nat", fw::Variant::nft);
        REQUIRE(del);
        auto dumps = nft::chain_dumps_taken();
        auto n = del->delete_if("CNI-SHARED", "CNI-ATT2");
        REQUIRE(n);
        CHECK(*n == 1);
        CHECK(nft::chain_dumps_taken() == dumps + 2);  // CNI-ATT2, then CNI-SHARED
        REQUIRE(del->commit());
    });
    CHECK(occurrences(save, "-A CNI-SHARED -j CNI-ATT2") == 0);
    CHECK(occurrences(save, "-A CNI-OTHER -j CNI-ATT2") == 1);
    CHECK(occurrences(save, "-A CNI-SHARED") == 200);
    // A shared chain of a few rules (POSTROUTING on a node without ipMasq) is read, not probed by
    // handle first: the probe would cost as much and could not spare the read.
    REQUIRE(ns.sh("iptables-nft -t nat -N CNI-SMALL && iptables-nft -t nat -A CNI-SMALL -s 10.7.0.1 -j ACCEPT") == 0);
    inside(ns, [&] {
        auto add = fw::IptTable::open(fw::Family::v4, "nat", fw::Variant::nft);
        REQUIRE(add);
        REQUIRE(add->create_chain("CNI-ATT3"));
        REQUIRE(add->append_unique("CNI-ATT3", jump("ACCEPT", "10.1.0.3/32")));
        REQUIRE(add->append_unique("CNI-SMALL", jump("CNI-ATT3")));
        REQUIRE(add->commit());
        auto del = fw::IptTable::open(fw::Family::v4, "nat", fw::Variant::nft);
        REQUIRE(del);
        auto dumps = nft::chain_dumps_taken();
        auto probes = nft::handle_probes_taken();
        auto n = del->delete_if("CNI-SMALL", "CNI-ATT3");
        REQUIRE(n);
        CHECK(*n == 1);
        CHECK(nft::handle_probes_taken() == probes);
        CHECK(nft::chain_dumps_taken() == dumps + 1);  // CNI-SMALL's two rules
        REQUIRE(del->commit());
    });
    CHECK(occurrences(save, "-j CNI-ATT3") == 0);
    CHECK(occurrences(save, "-A CNI-SMALL") == 1);
}

TEST_CASE("the firewall's per-address rules are found and deleted by their recorded handles, without reading CNI-FORWARD", "[firewall]") {
    VariantPath node(fw::Variant::nft);
    TestNs ns("cnit-fwrec");
    const std::string save = "ip netns exec " + ns.name + " iptables-nft-save -t filter";
    const TempDir scratch;  // removed even when a REQUIRE ends the test early
    const std::string& dir = scratch.path;
    // The firewall's chains with 200 other attachments' rules, as one iptables-nft-restore makes them.
    std::string rules = "*filter\n:CNI-FORWARD - [0:0]\n:CNI-ADMIN - [0:0]\n"
                        "-A FORWARD -m comment --comment \"CNI firewall plugin rules\" -j CNI-FORWARD\n"
                        "-A CNI-FORWARD -m comment --comment \"CNI firewall plugin admin overrides\" -j CNI-ADMIN\n";
    for (int i = 0; i < 200; ++i) {
        std::string ip = "10.9." + std::to_string(i / 250) + "." + std::to_string(i % 250);
        rules += "-A CNI-FORWARD -d " + ip + "/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\n-A CNI-FORWARD -s " + ip + "/32 -j ACCEPT\n";
    }
    std::ofstream(dir + "/rules") << rules << "COMMIT\n";
    REQUIRE(ns.sh("iptables-nft-restore < " + dir + "/rules") == 0);
    std::filesystem::remove(dir + "/rules");
    firewall::ForwardSpec spec{{*net::IpAddr::parse("10.1.0.5")}, "CNI-ADMIN", "", "net", {"ctr", "eth0"}, dir};
    const std::string replies = "-A CNI-FORWARD -d 10.1.0.5/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT";
    const std::string from = "-A CNI-FORWARD -s 10.1.0.5/32 -j ACCEPT";
    auto record = [&] {
        auto h = firewall::ForwardRecord("net", {"ctr", "eth0"}, dir).load();
        return h ? h->v4.size() : 0;
    };
    inside(ns, [&] {
        auto dumps = nft::chain_dumps_taken();
        REQUIRE(setup_forward(spec));
        CHECK(nft::chain_dumps_taken() == dumps + 2);  // FORWARD's and CNI-ADMIN's, not CNI-FORWARD's 402 rules
        CHECK(record() == 2);
        REQUIRE(setup_forward(spec));  // again: found by the record, not added twice
        CHECK(occurrences(save, replies) == 1);
        CHECK(occurrences(save, from) == 1);
        dumps = nft::chain_dumps_taken();
        REQUIRE(firewall::iptables_forward().teardown(spec));
        CHECK(nft::chain_dumps_taken() == dumps);  // by handle alone
        CHECK(occurrences(save, "10.1.0.5") == 0);
        CHECK(occurrences(save, "-A CNI-FORWARD") == 401);
        CHECK(record() == 0);
    });
    // A stale record (its rules deleted by hand, their handles gone) or a broken one: DEL reads the chain.
    inside(ns, [&] { REQUIRE(setup_forward(spec)); });
    REQUIRE(ns.sh("iptables-nft -D CNI-FORWARD -s 10.1.0.5/32 -j ACCEPT && iptables-nft -A CNI-FORWARD -s 10.1.0.5/32 -j ACCEPT") == 0);
    inside(ns, [&] {
        auto dumps = nft::chain_dumps_taken();
        REQUIRE(firewall::iptables_forward().teardown(spec));
        CHECK(nft::chain_dumps_taken() == dumps + 1);
        CHECK(occurrences(save, "10.1.0.5") == 0);
        REQUIRE(setup_forward(spec));
        std::ofstream(dir + "/" + std::filesystem::directory_iterator(dir)->path().filename().string()) << "v4 1 x\n";
        CHECK(record() == 0);
        REQUIRE(firewall::iptables_forward().teardown(spec));
        CHECK(occurrences(save, "10.1.0.5") == 0);
        CHECK(occurrences(save, "-A CNI-FORWARD") == 401);
    });
    // A legacy node has no handles: no record, and both verbs work as before.
    {
        VariantPath legacy(fw::Variant::legacy);
        inside(ns, [&] {
            REQUIRE(setup_forward(spec));
            CHECK(record() == 0);
            CHECK(occurrences("ip netns exec " + ns.name + " iptables-legacy-save -t filter", from) == 1);
            REQUIRE(firewall::iptables_forward().teardown(spec));
            CHECK(occurrences("ip netns exec " + ns.name + " iptables-legacy-save -t filter", "10.1.0.5") == 0);
        });
    }
}
