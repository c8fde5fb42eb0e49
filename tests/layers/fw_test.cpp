// SPDX-License-Identifier: Apache-2.0
// Root tests of IptTable inside throwaway namespaces, in both variants (legacy x_tables through
// libiptc, and iptables-nft's form in nf_tables): ipMasq rules are exactly the ones `iptables`
// writes for the reference's command lines - the variant's iptables binary finds and deletes
// ours, and our teardown removes ones the binary wrote - for IPv4 and IPv6; and every rule shape
// portmap and firewall use (ports, multiport, addrtype, mark, conntrack, interfaces, MARK, DNAT)
// reads back from the binary's rule and is found by `iptables -C` when we write it; in nf_tables
// our rule's expressions are the binary's, one by one. The node's variant follows the first
// `iptables` in PATH (by its resolved name, else its --version), or with none the kernel's tables. A table's first use in a fresh
// namespace by several processes at once succeeds for all. A rule differing in a compared field
// is not found; GC and the firewall's DEL remove rules the Go plugins wrote with iptables-nft.
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <unistd.h>

#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/xt_addrtype.h>
#include <linux/netfilter/xt_conntrack.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "applets/firewall/forward.hpp"
#include "applets/portmap/host_ports.hpp"
#include "core/fw/driver.hpp"
#include "core/fw/ipmasq.hpp"
#include "core/fw/iptables.hpp"
#include "core/fw/names.hpp"
#include "core/fw/xtables_nft.hpp"
#include "core/os/netns.hpp"
#include "test_ns.hpp"

using namespace cni;

namespace {

// The variant's iptables tool for a family: "iptables-legacy", "ip6tables-nft", ...
std::string tool(fw::Variant variant, bool v6) {
    return std::string(v6 ? "ip6tables" : "iptables") + (variant == fw::Variant::nft ? "-nft" : "-legacy");
}

const char* name_of(fw::Variant v) { return v == fw::Variant::nft ? "nft" : "legacy"; }


// The nat rules of the namespace as the variant's iptables-save prints them ("-A ..." and
// user chain lines only).
std::string nat_rules(const TestNs& ns, bool v6 = false, fw::Variant variant = fw::Variant::legacy) {
    std::string all = run("ip netns exec " + ns.name + " " + tool(variant, v6) + "-save -t nat");
    std::string out;
    std::size_t pos = 0;
    while (pos < all.size()) {
        auto end = all.find('\n', pos);
        std::string line = all.substr(pos, end - pos);
        if (line.starts_with("-A ") || line.starts_with(":CNI")) out += line.substr(0, line.find(" [")) + "\n";
        pos = end == std::string::npos ? all.size() : end + 1;
    }
    return out;
}

const std::string kChain = "CNI-e2e8cd5c6ebacde4cecc8b58";  // chain_name("CNI-", "mynet", "1234567890abcdef")
const fw::Masquerade kOwner{"mynet", "1234567890abcdef", "eth0", {}};

// ipMasq's verbs through its drivers (fw::masquerade()), as bridge and ptp call them.
Status setup_ipmasq(fw::Driver d, std::vector<net::IpNet> ips, fw::Masquerade m) {
    m.ips = std::move(ips);
    Rollback undo;
    auto st = fw::masquerade().setup(d, m, undo);
    if (st) undo.dismiss();
    return st;
}
Status check_ipmasq(fw::Driver d, std::vector<net::IpNet> ips, fw::Masquerade m) {
    m.ips = std::move(ips);
    return fw::masquerade().check(d, m);
}
Status teardown_ipmasq(const fw::Masquerade& m) { return fw::masquerade().teardown_all(m); }
Status gc_ipmasq(std::string_view network, const std::vector<net::Attachment>& keep) { return fw::masquerade().gc_all(network, keep); }
const std::string kComment = "--comment \"name: \\\"mynet\\\" id: \\\"1234567890abcdef\\\"\"";

}  // namespace

TEST_CASE("a table's first use in a fresh namespace succeeds for each of 8 processes at once", "[fw]") {
    // The kernel makes every first user instantiate the table and the losers' lookups fail with
    // EEXIST (iptables_impl.hpp): before the retry, about one fresh namespace in 20 had a
    // failed open, or a "nat is unusable" that sent ipMasq to nftables.
    VariantPath legacy(fw::Variant::legacy);  // a legacy node: the only one that makes legacy tables
    int failed = 0;
    for (int round = 0; round < 60; ++round) {
        TestNs ns("cnifu");
        // Each uses nat first: opening it, or the backend probe.
        failed += at_once(ns, [](int i) {
            return i % 2 ? fw::IptTable::legacy_nat_usable() : bool(fw::IptTable::open(fw::Family::v4, "nat", fw::Variant::legacy));
        });
    }
    CHECK(failed == 0);
}

TEST_CASE("the node's variant is the first iptables in PATH: by its resolved name, else by its --version; with none, the kernel's tables", "[fw]") {
    const std::string dir = "/tmp/cnit-variant-" + std::to_string(::getpid());
    const std::string saved = std::getenv("PATH");
    auto with_path = [&](const std::string& path) {
        ::setenv("PATH", path.c_str(), 1);
        auto v = fw::node_variant();
        ::setenv("PATH", saved.c_str(), 1);
        return v;
    };
    std::filesystem::create_directories(dir + "/a");
    std::filesystem::create_directories(dir + "/b");
    // A wrapper under another name (as kube-proxy images install one) answers --version.
    auto wrapper = [&](const std::string& sub, const std::string& version) {
        std::string path = dir + "/" + sub + "/iptables";
        std::FILE* f = std::fopen(path.c_str(), "w");
        REQUIRE(f);
        std::fprintf(f, "#!/bin/sh\necho '%s'\n", version.c_str());
        std::fclose(f);
        std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    };
    wrapper("a", "iptables v1.8.9 (nf_tables)");
    wrapper("b", "iptables v1.8.9 (legacy)");
    CHECK(with_path(dir + "/a:" + saved) == fw::Variant::nft);
    CHECK(with_path(dir + "/b:" + dir + "/a") == fw::Variant::legacy);  // the first one in PATH
    {
        // No iptables at all: the kernel decides, as kube-proxy's iptables-wrapper does. A rule
        // or chain in a legacy table of either family means legacy; else nf_tables answers here.
        TestNs ns("cnit-var");
        auto bare = [&](const std::string& path) { return inside(ns, [&] { return with_path(path); }); };
        auto legacy_tables = [&] { return run("ip netns exec " + ns.name + " cat /proc/net/ip_tables_names /proc/net/ip6_tables_names"); };
        CHECK(bare(dir) == fw::Variant::nft);
        CHECK(bare("") == fw::Variant::nft);
        CHECK(legacy_tables().empty());  // asking made none
        REQUIRE(ns.sh("iptables-legacy -t nat -S >/dev/null && ip6tables-legacy -t filter -S >/dev/null") == 0);
        CHECK(bare(dir) == fw::Variant::nft);  // empty legacy tables hold nothing
        REQUIRE(ns.sh("ip6tables-legacy -t filter -A INPUT -j ACCEPT") == 0);
        CHECK(bare(dir) == fw::Variant::legacy);
        REQUIRE(ns.sh("ip6tables-legacy -t filter -F INPUT && iptables-legacy -t nat -N KUBE-SERVICES") == 0);
        CHECK(bare(dir) == fw::Variant::legacy);  // a chain of its own, without rules
        REQUIRE(ns.sh("iptables-legacy -t nat -X KUBE-SERVICES") == 0);
        CHECK(bare(dir) == fw::Variant::nft);
        CHECK(legacy_tables() == "nat\nfilter\n");  // asking made no other table
    }
    {
        VariantPath nft(fw::Variant::nft);  // a symlink to iptables-nft: xtables-nft-multi
        CHECK(fw::node_variant() == fw::Variant::nft);
    }
    {
        VariantPath legacy(fw::Variant::legacy);
        CHECK(fw::node_variant() == fw::Variant::legacy);
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("the firewall driver is chosen in one place: configured, else firewalld if the applet has it and it runs, else iptables", "[fw]") {
    using fw::Driver;
    CHECK(fw::choose_driver(Driver::nftables, {Driver::iptables, Driver::nftables}) == Driver::nftables);
    CHECK(fw::choose_driver(Driver::iptables, {Driver::iptables, Driver::firewalld}, [] { return true; }) == Driver::iptables);
    CHECK(fw::choose_driver(std::nullopt, {Driver::iptables, Driver::firewalld}, [] { return true; }) == Driver::firewalld);
    CHECK(fw::choose_driver(std::nullopt, {Driver::iptables, Driver::firewalld}, [] { return false; }) == Driver::iptables);
    CHECK(fw::choose_driver(std::nullopt, {Driver::iptables, Driver::nftables}, [] { return true; }) == Driver::iptables);
    {
        VariantPath nft(fw::Variant::nft);  // iptables usable: the reference keeps iptables
        CHECK(fw::choose_driver(std::nullopt, {Driver::iptables, Driver::nftables}) == Driver::iptables);
    }
    for (Driver d : {Driver::iptables, Driver::nftables, Driver::firewalld}) CHECK(fw::driver_named(fw::name_of(d)) == d);
    CHECK_FALSE(fw::driver_named("pf"));
    CHECK_FALSE(fw::driver_named(""));
}

TEST_CASE("ipMasq rules are the reference's, byte for byte, for IPv4 and IPv6, in the PATH's variant", "[fw]") {
    for (fw::Variant variant : fw::kVariants) {
        INFO("variant " << name_of(variant));
        VariantPath path(variant);
        CHECK(fw::node_variant() == variant);
        TestNs ns("cnit-fw");
        std::vector<net::IpNet> ips = {*net::IpNet::parse("10.1.0.5/24"), *net::IpNet::parse("fd01::5/64")};
        REQUIRE(inside(ns, [&] { return setup_ipmasq(fw::Driver::iptables, ips, kOwner); }));
        REQUIRE(inside(ns, [&] { return setup_ipmasq(fw::Driver::iptables, ips, kOwner); }));  // no duplicates
        CHECK(nat_rules(ns, false, variant) == ":" + kChain + " -\n"
                               "-A POSTROUTING -s 10.1.0.5/32 -m comment " + kComment + " -j " + kChain + "\n"
                               "-A " + kChain + " -d 10.1.0.0/24 -m comment " + kComment + " -j ACCEPT\n"
                               "-A " + kChain + " ! -d 224.0.0.0/4 -m comment " + kComment + " -j MASQUERADE\n");
        CHECK(nat_rules(ns, true, variant) == ":" + kChain + " -\n"
                                     "-A POSTROUTING -s fd01::5/128 -m comment " + kComment + " -j " + kChain + "\n"
                                     "-A " + kChain + " -d fd01::/64 -m comment " + kComment + " -j ACCEPT\n"
                                     "-A " + kChain + " ! -d ff00::/8 -m comment " + kComment + " -j MASQUERADE\n");
        CHECK(nat_rules(ns, false, fw::other(variant)).empty());  // nothing in the other variant
        CHECK(inside(ns, [&] { return check_ipmasq(fw::Driver::iptables, ips, kOwner); }));
        // The iptables binary recognises our rules as the ones the reference's command lines make.
        std::string c = " -m comment --comment \"name: \\\"mynet\\\" id: \\\"1234567890abcdef\\\"\"";
        const std::string ipt = tool(variant, false), ip6t = tool(variant, true);
        CHECK(ns.sh(ipt + " -t nat -C POSTROUTING -s 10.1.0.5 -j " + kChain + c) == 0);
        CHECK(ns.sh(ipt + " -t nat -C " + kChain + " -d 10.1.0.5/24 -j ACCEPT" + c) == 0);
        CHECK(ns.sh(ipt + " -t nat -C " + kChain + " ! -d 224.0.0.0/4 -j MASQUERADE" + c) == 0);
        CHECK(ns.sh(ip6t + " -t nat -D " + kChain + " ! -d ff00::/8 -j MASQUERADE" + c) == 0);
        CHECK_FALSE(inside(ns, [&] { return check_ipmasq(fw::Driver::iptables, ips, kOwner); }));
        REQUIRE(inside(ns, [&] { return teardown_ipmasq(kOwner); }));
        CHECK(nat_rules(ns, false, variant).empty());
        CHECK(nat_rules(ns, true, variant).empty());
        REQUIRE(inside(ns, [&] { return teardown_ipmasq(kOwner); }));  // idempotent
    }
}

namespace {

// The reference's ipMasq rules for kOwner and 10.1.0.5/24, written by an iptables binary.
void write_masq_rules(const TestNs& ns, const std::string& iptables) {
    const std::string c = " -m comment " + kComment;
    REQUIRE(ns.sh(iptables + " -t nat -N " + kChain) == 0);
    REQUIRE(ns.sh(iptables + " -t nat -A " + kChain + " -d 10.1.0.0/24 -j ACCEPT" + c) == 0);
    REQUIRE(ns.sh(iptables + " -t nat -A " + kChain + " ! -d 224.0.0.0/4 -j MASQUERADE" + c) == 0);
    REQUIRE(ns.sh(iptables + " -t nat -A POSTROUTING -s 10.1.0.5 -j " + kChain + c) == 0);
}

}  // namespace

TEST_CASE("teardown removes rules written by either iptables binary, legacy form included", "[fw]") {
    for (fw::Variant variant : fw::kVariants) {
        INFO("written by " << tool(variant, false));
        TestNs ns("cnit-fw");
        std::string c = " -m comment " + kComment;
        const std::string ipt = tool(variant, false);
        write_masq_rules(ns, ipt);
        REQUIRE(ns.sh(ipt + " -t nat -A POSTROUTING -s 10.1.0.5/24 -j " + kChain + c) == 0);  // pre-0.8 form
        REQUIRE(ns.sh(ipt + " -t nat -A POSTROUTING -s 10.9.0.0/16 -j MASQUERADE") == 0);   // not ours
        std::vector<net::IpNet> ips = {*net::IpNet::parse("10.1.0.5/24")};
        CHECK(inside(ns, [&] { return check_ipmasq(fw::Driver::iptables, ips, kOwner); }));
        REQUIRE(inside(ns, [&] { return teardown_ipmasq(kOwner); }));
        CHECK(nat_rules(ns, false, variant) == "-A POSTROUTING -s 10.9.0.0/16 -j MASQUERADE\n");
    }
}

namespace {

// The namespace's ipMasq nft table as `nft list` prints it, without handles; "" when absent.
std::string masq_table(const TestNs& ns) {
    return run("ip netns exec " + ns.name + " nft list table inet cni_plugins_masquerade 2>/dev/null");
}

}  // namespace

TEST_CASE("ipMasq nftables backend: the reference's table, chains and rules, as nft lists them", "[fw]") {
    TestNs ns("cnit-fw");
    std::vector<net::IpNet> ips = {*net::IpNet::parse("10.1.0.5/24"), *net::IpNet::parse("fd01::5/64")};
    std::string c = fw::nft_masq_comment(kOwner);
    REQUIRE(inside(ns, [&] { return setup_ipmasq(fw::Driver::nftables, ips, kOwner); }));
    REQUIRE(inside(ns, [&] { return setup_ipmasq(fw::Driver::nftables, ips, kOwner); }));  // replaces, no duplicates
    CHECK(masq_table(ns) ==
          "table inet cni_plugins_masquerade {\n"
          "\tcomment \"Masquerading for plugins from github.com/containernetworking/plugins\"\n"
          "\tchain masq_checks {\n"
          "\t\tcomment \"Masquerade traffic from certain IPs to any (non-multicast) IP outside their subnet\"\n"
          "\t\tip saddr 10.1.0.5 ip daddr != 10.1.0.0/24 masquerade comment \"" + c + "\"\n"
          "\t\tip6 saddr fd01::5 ip6 daddr != fd01::/64 masquerade comment \"" + c + "\"\n"
          "\t}\n\n"
          "\tchain postrouting {\n"
          "\t\ttype nat hook postrouting priority srcnat; policy accept;\n"
          "\t\tip daddr 224.0.0.0/4 return\n"
          "\t\tip6 daddr ff00::/8 return\n"
          "\t\tgoto masq_checks\n"
          "\t}\n"
          "}\n");
    CHECK(inside(ns, [&] { return check_ipmasq(fw::Driver::nftables, ips, kOwner); }));
    // Another attachment's rule, written by the nft binary as the reference writes it, stays.
    fw::Masquerade other{"mynet", "other", "eth0", {}};
    REQUIRE(ns.sh("nft add rule inet cni_plugins_masquerade masq_checks ip saddr == 10.1.0.6 ip daddr != 10.1.0.0/24 "
                  "masquerade comment \\\"" + fw::nft_masq_comment(other) + "\\\"") == 0);
    REQUIRE(inside(ns, [&] { return teardown_ipmasq(kOwner); }));
    CHECK_FALSE(inside(ns, [&] { return check_ipmasq(fw::Driver::nftables, ips, kOwner); }));
    std::string left = masq_table(ns);
    CHECK(left.find("10.1.0.5") == std::string::npos);
    CHECK(left.find("fd01::5") == std::string::npos);
    CHECK(left.find("10.1.0.6") != std::string::npos);
    REQUIRE(inside(ns, [&] { return teardown_ipmasq(kOwner); }));  // idempotent
    // GC keeps what is valid and removes the rest, the reference's rule included.
    REQUIRE(inside(ns, [&] { return setup_ipmasq(fw::Driver::nftables, ips, kOwner); }));
    REQUIRE(inside(ns, [&] { return gc_ipmasq("mynet", {net::Attachment{"1234567890abcdef", "eth0"}}); }));
    left = masq_table(ns);
    CHECK(left.find("10.1.0.5") != std::string::npos);
    CHECK(left.find("10.1.0.6") == std::string::npos);
}

TEST_CASE("ipMasq teardown without nft rules or with no table at all succeeds", "[fw]") {
    TestNs ns("cnit-fw");
    REQUIRE(inside(ns, [&] { return teardown_ipmasq(kOwner); }));
    REQUIRE(inside(ns, [&] { return gc_ipmasq("mynet", {}); }));
    CHECK(masq_table(ns).empty());
}

TEST_CASE("rules beyond what IptRule describes are listed as foreign, never matched", "[fw]") {
    for (fw::Variant variant : fw::kVariants) {
        for (const char* extra : {"-m ttl --ttl-eq 64", "-p tcp --sport 99"}) {
            INFO(name_of(variant) << ": " << extra);
            TestNs ns("cnit-fw");
            REQUIRE(ns.sh(tool(variant, false) + " -t nat -A POSTROUTING -s 10.1.0.5 " + extra + " -j ACCEPT") == 0);
            auto listed = inside(ns, [&] {
                auto nat = fw::IptTable::open(fw::Family::v4, "nat", variant);
                REQUIRE(nat);
                return nat->rules("POSTROUTING");
            });
            REQUIRE(listed);
            REQUIRE(listed->size() == 1);
            CHECK((*listed)[0].foreign);
            CHECK((*listed)[0].rule.target == "ACCEPT");
            CHECK((*listed)[0].rule.src->str() == "10.1.0.5/32");
        }
    }
}

namespace {

struct Shape {
    const char* args;  // the iptables command line after "-A <chain>"
    fw::IptRule rule;
    const char* table = "nat";
};

// Enough of a rule to see why two differ.
std::string show(const fw::IptRule& r) {
    std::string s = "src=" + (r.src ? r.src->str() : "") + (r.src_inverted ? "!" : "") + " dst=" + (r.dst ? r.dst->str() : "") +
                    (r.dst_inverted ? "!" : "") + " p=" + std::to_string(r.proto) + " i=" + r.in_iface + (r.in_inverted ? "!" : "") +
                    " o=" + r.out_iface + (r.out_inverted ? "!" : "") + " comment=" + r.comment + " target=" + r.target +
                    " args=" + std::to_string(r.target_args.index()) + " matches=";
    for (auto& m : r.matches) {
        s += std::to_string(m.index());
        if (auto* mp = std::get_if<fw::MultiportDst>(&m))
            for (auto p : mp->ports) s += ":" + std::to_string(p);
    }
    if (auto* x = std::get_if<fw::SetXMark>(&r.target_args)) s += " xmark=" + std::to_string(x->mark) + "/" + std::to_string(x->mask);
    if (auto* d = std::get_if<fw::DnatTo>(&r.target_args)) s += " dnat=" + d->ip.str() + ":" + std::to_string(d->port);
    if (auto* n = std::get_if<fw::SnatTo>(&r.target_args)) s += " snat=" + n->ip.str() + (n->random_fully ? " fully-random" : "");
    if (auto* c = std::get_if<fw::ConnMark>(&r.target_args))
        s += " connmark=" + std::string(c->restore ? "restore " : "set ") + std::to_string(c->ctmark) + "/" +
             std::to_string(c->ctmask) + "/" + std::to_string(c->nfmask);
    return s;
}

fw::IptRule base(std::string target) {
    fw::IptRule r;
    r.target = std::move(target);
    return r;
}

std::vector<Shape> shapes(bool v6) {
    std::vector<Shape> out;
    auto ip = [&](const char* v4, const char* v6s) { return *net::IpNet::parse(v6 ? v6s : v4); };
    {
        auto r = base("CNI-DN-0123456789abcdef01234");
        r.comment = "dnat name: \"net\" id: \"c1\"";
        r.proto = IPPROTO_TCP;
        r.matches = {fw::MultiportDst{{8080, 8443}}};
        out.push_back({"-m comment --comment \"dnat name: \\\"net\\\" id: \\\"c1\\\"\" -m multiport -p tcp --destination-ports 8080,8443 -j CNI-DN-0123456789abcdef01234", r});
    }
    for (auto [proto, name] : {std::pair{IPPROTO_TCP, "tcp"}, {IPPROTO_UDP, "udp"}, {IPPROTO_SCTP, "sctp"}}) {
        auto r = base("DNAT");
        r.proto = proto;
        r.matches = {fw::DstPort{8080}};
        r.target_args = fw::DnatTo{ip("10.1.0.5/32", "fd00::5/128").ip, 80};
        static std::string args[3];
        std::string& a = args[proto == IPPROTO_TCP ? 0 : proto == IPPROTO_UDP ? 1 : 2];
        a = std::string("-p ") + name + " --dport 8080 -j DNAT --to-destination " + (v6 ? "[fd00::5]:80" : "10.1.0.5:80");
        out.push_back({a.c_str(), r});
    }
    {
        auto r = base("CNI-HOSTPORT-SETMARK");
        r.proto = IPPROTO_UDP;
        r.matches = {fw::DstPort{53}};
        r.dst = ip("192.0.2.7/32", "2001:db8::7/128");
        r.src = ip("10.1.0.0/16", "fd00::/64");
        out.push_back({v6 ? "-p udp --dport 53 -d 2001:db8::7 -s fd00::/64 -j CNI-HOSTPORT-SETMARK"
                          : "-p udp --dport 53 -d 192.0.2.7 -s 10.1.0.0/16 -j CNI-HOSTPORT-SETMARK", r});
    }
    {
        auto r = base("MARK");
        r.comment = "CNI portfwd masquerade mark";
        r.target_args = fw::SetXMark{0x2000, 0x2000};
        out.push_back({"-m comment --comment \"CNI portfwd masquerade mark\" -j MARK --set-xmark 0x2000/0x2000", r});
    }
    {
        auto r = base("MASQUERADE");
        r.matches = {fw::MarkMatch{0x2000, 0x2000}};
        out.push_back({"-m mark --mark 0x2000/0x2000 -j MASQUERADE", r});
    }
    {
        auto r = base("CNI-HOSTPORT-DNAT");
        r.matches = {fw::AddrType{.dst = XT_ADDRTYPE_LOCAL}};
        out.push_back({"-m addrtype --dst-type LOCAL -j CNI-HOSTPORT-DNAT", r});
    }
    {  // vpc-eni's SNAT and outbound connmark
        auto r = base("SNAT");
        r.comment = "AWS, SNAT";
        r.matches = {fw::AddrType{.dst = XT_ADDRTYPE_LOCAL, .dst_inverted = true}};
        r.target_args = fw::SnatTo{ip("10.1.0.5/32", "fd00::5/128").ip, true};
        out.push_back({v6 ? "-m comment --comment \"AWS, SNAT\" -m addrtype ! --dst-type LOCAL -j SNAT --to-source fd00::5 --random-fully"
                          : "-m comment --comment \"AWS, SNAT\" -m addrtype ! --dst-type LOCAL -j SNAT --to-source 10.1.0.5 --random-fully",
                       r});
    }
    {
        auto r = base("CONNMARK");
        r.in_iface = "eni+";
        r.target_args = fw::ConnMark{true, 0, 0x80, 0x80};
        out.push_back({"-i eni+ -j CONNMARK --restore-mark --nfmask 0x80 --ctmask 0x80", r, "mangle"});
    }
    {
        auto r = base("CONNMARK");
        r.target_args = fw::ConnMark{false, 0x80, 0x80, 0xffffffff};  // iptables leaves nfmask all ones
        out.push_back({"-j CONNMARK --set-xmark 0x80/0x80", r, "mangle"});
    }
    {
        auto r = base("ACCEPT");
        r.dst = ip("10.1.0.5/32", "fd00::5/128");
        r.matches = {fw::CtState{XT_CONNTRACK_STATE_BIT(IP_CT_RELATED) | XT_CONNTRACK_STATE_BIT(IP_CT_ESTABLISHED), false}};
        out.push_back({v6 ? "-d fd00::5/128 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT"
                          : "-d 10.1.0.5/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT", r, "filter"});
    }
    {
        auto r = base("DROP");
        r.src = ip("127.0.0.0/8", "::1/128");
        r.src_inverted = true;
        r.dst = r.src;
        r.matches = {fw::CtState{XT_CONNTRACK_STATE_BIT(IP_CT_RELATED) | XT_CONNTRACK_STATE_BIT(IP_CT_ESTABLISHED) |
                                     XT_CONNTRACK_STATE_DNAT, true}};
        out.push_back({v6 ? "! -s ::1/128 -d ::1/128 -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP"
                          : "! -s 127.0.0.0/8 -d 127.0.0.0/8 -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP", r, "filter"});
    }
    {
        auto r = base("CNI-ISOLATION-STAGE-2");
        r.in_iface = "cni0";
        r.out_iface = "cni0";
        r.out_inverted = true;
        r.comment = "CNI firewall plugin rules (ingressPolicy: same-bridge)";
        out.push_back({"-i cni0 ! -o cni0 -m comment --comment \"CNI firewall plugin rules (ingressPolicy: same-bridge)\" "
                       "-j CNI-ISOLATION-STAGE-2", r, "filter"});
    }
    return out;
}

}  // namespace

namespace {

// The expressions of chain CNI-T's rules in nf_tables as `nft --debug=netlink` prints them,
// without handles.
std::string nft_expressions(const TestNs& ns, bool v6, const std::string& table) {
    return run("ip netns exec " + ns.name + " nft --debug=netlink list chain " + (v6 ? "ip6 " : "ip ") + table +
               " CNI-T 2>&1 | grep '^  \\['");
}

}  // namespace

TEST_CASE("portmap and firewall rule shapes: read from iptables' rules, found by iptables -C when written by us", "[fw][portmap][firewall]") {
    for (fw::Variant variant : fw::kVariants)
    for (bool v6 : {false, true}) {
        const std::string tool_name = tool(variant, v6);
        const auto family = v6 ? fw::Family::v6 : fw::Family::v4;
        for (auto& shape : shapes(v6)) {
            INFO(tool_name << ": " << shape.args);
            const bool custom = !shape.rule.target.empty() && shape.rule.target.starts_with("CNI-");
            const std::string table = shape.table;
            TestNs ns("cnit-fw");
            const std::string t = tool_name + " -t " + table;
            if (custom) REQUIRE(ns.sh(t + " -N " + shape.rule.target) == 0);
            REQUIRE(ns.sh(t + " -N CNI-T") == 0);
            // The binary's rule, read back by us.
            if (shape.rule.proto == IPPROTO_SCTP && ns.sh(t + " -A CNI-T " + shape.args + " 2>/dev/null") != 0) {
                WARN("this kernel has no sctp match; the sctp shape is not checked here");
                continue;
            }
            REQUIRE(ns.sh(t + " -F CNI-T") == 0);
            REQUIRE(ns.sh(t + " -A CNI-T " + shape.args) == 0);
            const std::string binary_form = variant == fw::Variant::nft ? nft_expressions(ns, v6, table) : "";
            auto listed = inside(ns, [&] {
                auto nat = fw::IptTable::open(family, table, variant);
                REQUIRE(nat);
                return nat->rules("CNI-T");
            });
            REQUIRE(listed);
            REQUIRE(listed->size() == 1);
            CHECK_FALSE((*listed)[0].foreign);
            CHECK(show((*listed)[0].rule) == show(shape.rule));
            CHECK((*listed)[0].rule == shape.rule);
            // Ours, found by the binary; in nf_tables, expression for expression the binary's.
            REQUIRE(ns.sh(t + " -F CNI-T") == 0);
            auto wrote = inside(ns, [&]() -> Status {
                auto nat = fw::IptTable::open(family, table, variant);
                REQUIRE(nat);
                CNI_TRY(nat->append_unique("CNI-T", shape.rule));
                CNI_TRY(nat->append_unique("CNI-T", shape.rule));  // unique: once
                return nat->commit();
            });
            REQUIRE(wrote);
            if (variant == fw::Variant::nft) {
                CHECK_FALSE(binary_form.empty());
                CHECK(nft_expressions(ns, v6, table) == binary_form);
            }
            CHECK(ns.sh(t + " -C CNI-T " + shape.args) == 0);
            CHECK(ns.sh(t + " -D CNI-T " + shape.args) == 0);
            CHECK(ns.sh("test -z \"$(" + tool_name + "-save -t " + table + " | grep -- \"-A CNI-T\")\"") == 0);
        }
    }
}

namespace {

// A rule that differs from `r` in one thing.
std::vector<std::pair<std::string, fw::IptRule>> changed(const fw::IptRule& r, bool v6) {
    std::vector<std::pair<std::string, fw::IptRule>> out;
    auto with = [&](std::string what, auto&& change) {
        fw::IptRule c = r;
        change(c);
        out.emplace_back(std::move(what), std::move(c));
    };
    with("target", [](fw::IptRule& c) { c.target = c.target == "RETURN" ? "ACCEPT" : "RETURN"; });
    with("comment", [](fw::IptRule& c) { c.comment += "x"; });
    with("protocol", [](fw::IptRule& c) { c.proto = c.proto == IPPROTO_TCP ? IPPROTO_UDP : IPPROTO_TCP; });
    with("destination", [&](fw::IptRule& c) { c.dst = *net::IpNet::parse(v6 ? "2001:db8:9::/48" : "198.51.100.0/24"); });
    with("source prefix", [&](fw::IptRule& c) {
        c.src = c.src ? net::IpNet{c.src->network(), c.src->prefix - 1, c.src->mask_bits}.masked() : *net::IpNet::parse(v6 ? "fd09::1/128" : "10.9.9.9/32");
    });
    with("source negation", [](fw::IptRule& c) {
        if (!c.src) c.src = *net::IpNet::parse("10.9.9.9/32");
        c.src_inverted = !c.src_inverted;
    });
    with("in interface", [](fw::IptRule& c) { c.in_iface += "x"; });
    with("out interface negation", [](fw::IptRule& c) {
        if (c.out_iface.empty()) c.out_iface = "eth+";
        c.out_inverted = !c.out_inverted;
    });
    if (auto* d = std::get_if<fw::DnatTo>(&r.target_args))
        with("DNAT port", [d](fw::IptRule& c) { c.target_args = fw::DnatTo{d->ip, std::uint16_t(d->port + 1)}; });
    if (auto* x = std::get_if<fw::SetXMark>(&r.target_args))
        with("MARK value", [x](fw::IptRule& c) { c.target_args = fw::SetXMark{x->mark ^ 1, x->mask}; });
    for (std::size_t i = 0; i < r.matches.size(); ++i) {
        std::visit([&](auto& m) {
            using M = std::decay_t<decltype(m)>;
            with("match " + std::to_string(i), [i](fw::IptRule& c) {
                auto& changed = std::get<M>(c.matches[i]);
                if constexpr (std::is_same_v<M, fw::DstPort>) changed.port += 1;
                else if constexpr (std::is_same_v<M, fw::MultiportDst>) changed.ports[0] += 1;
                else if constexpr (std::is_same_v<M, fw::MarkMatch>) changed.mark ^= 1;
                else if constexpr (std::is_same_v<M, fw::CtState>) changed.inverted = !changed.inverted;
                else if constexpr (std::is_same_v<M, fw::AddrType>) changed.dst_inverted = !changed.dst_inverted;
                else changed.src_inverted = !changed.src_inverted;
            });
        }, r.matches[i]);
    }
    return out;
}

// ipMasq's shapes, with a prefix that is not whole bytes.
std::vector<Shape> masq_shapes(bool v6) {
    auto net = [&](const char* a, const char* b) { return *net::IpNet::parse(v6 ? b : a); };
    auto accept = base("ACCEPT");
    accept.dst = net("10.1.0.0/20", "fd01::/60");
    accept.comment = "name: \"n\" id: \"c\"";
    auto masquerade = base("MASQUERADE");
    masquerade.dst = net("224.0.0.0/4", "ff00::/8");
    masquerade.dst_inverted = true;
    masquerade.comment = accept.comment;
    auto jump = base("CNI-0123456789abcdef01234567");
    jump.src = net("10.1.0.5/32", "fd01::5/128");
    jump.comment = accept.comment;
    const std::string c = " -m comment --comment \"name: \\\"n\\\" id: \\\"c\\\"\"";
    static std::string args[2][3];
    auto& a = args[v6];
    a[0] = std::string(v6 ? "-d fd01::/60" : "-d 10.1.0.0/20") + c + " -j ACCEPT";
    a[1] = std::string(v6 ? "! -d ff00::/8" : "! -d 224.0.0.0/4") + c + " -j MASQUERADE";
    a[2] = std::string(v6 ? "-s fd01::5" : "-s 10.1.0.5") + c + " -j CNI-0123456789abcdef01234567";
    return {{a[0].c_str(), accept}, {a[1].c_str(), masquerade}, {a[2].c_str(), jump}};
}

}  // namespace

TEST_CASE("iptables-nft's form of each rule shape is found in nf_tables, a rule differing in a field is not", "[fw]") {
    for (bool v6 : {false, true}) {
        const std::string tool = v6 ? "ip6tables-nft" : "iptables-nft";
        const auto family = v6 ? fw::Family::v6 : fw::Family::v4;
        auto all = shapes(v6);
        for (auto& s : masq_shapes(v6)) all.push_back(s);
        for (auto& shape : all) {
            INFO((v6 ? "v6: " : "v4: ") << shape.args);
            TestNs ns("cnit-fw");
            const std::string t = tool + " -t " + shape.table;
            if (shape.rule.target.starts_with("CNI-")) REQUIRE(ns.sh(t + " -N " + shape.rule.target) == 0);
            REQUIRE(ns.sh(t + " -N CNI-T") == 0);
            if (ns.sh(t + " -A CNI-T " + shape.args + " 2>/dev/null") != 0) {
                REQUIRE(shape.rule.proto == IPPROTO_SCTP);
                WARN("this kernel has no sctp match; the sctp shape is not checked here");
                continue;
            }
            inside(ns, [&] {
                auto table = fw::IptTable::open(family, shape.table, fw::Variant::nft);
                REQUIRE(table);
                CHECK(table->has_chain("CNI-T"));
                CHECK_FALSE(table->has_chain("CNI-U"));
                CHECK(*table->has_rule("CNI-T", shape.rule));
                CHECK_FALSE(*table->has_rule("POSTROUTING", shape.rule));
                for (auto& [what, other] : changed(shape.rule, v6)) {
                    INFO("changed: " << what << ": " << show(other));
                    CHECK_FALSE(*table->has_rule("CNI-T", other));
                }
            });
        }
    }
}

TEST_CASE("ipMasq CHECK and firewall DEL on rules the Go plugins wrote with iptables-nft", "[fw][firewall]") {
    TestNs ns("cnit-fw");
    std::string c = " -m comment " + kComment;
    write_masq_rules(ns, "iptables-nft");
    std::vector<net::IpNet> ips = {*net::IpNet::parse("10.1.0.5/24")};
    CHECK(inside(ns, [&] { return check_ipmasq(fw::Driver::iptables, ips, kOwner); }));
    CHECK_FALSE(inside(ns, [&] { return check_ipmasq(fw::Driver::iptables, {*net::IpNet::parse("10.1.0.6/24")}, kOwner); }));
    REQUIRE(ns.sh("iptables-nft -t nat -D " + kChain + " ! -d 224.0.0.0/4 -j MASQUERADE" + c) == 0);
    auto missing = inside(ns, [&] { return check_ipmasq(fw::Driver::iptables, ips, kOwner); });
    REQUIRE_FALSE(missing);
    CHECK(missing.error().msg == "ipMasq chain " + kChain + " lacks the rules for 10.1.0.5/24");  // the node variant's answer

    // The firewall's per-address rules: DEL removes the address's two, not another's.
    REQUIRE(ns.sh("iptables-nft -N CNI-FORWARD") == 0);
    for (const char* ip : {"10.1.0.5", "10.1.0.6"}) {
        REQUIRE(ns.sh(std::string("iptables-nft -A CNI-FORWARD -d ") + ip + "/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT") == 0);
        REQUIRE(ns.sh(std::string("iptables-nft -A CNI-FORWARD -s ") + ip + "/32 -j ACCEPT") == 0);
    }
    firewall::ForwardSpec spec{{*net::IpAddr::parse("10.1.0.5")}, "CNI-ADMIN", "", "net", {"id", "eth0"}};
    REQUIRE(inside(ns, [&] { return firewall::iptables_forward().teardown(spec); }));
    CHECK(run("ip netns exec " + ns.name + " iptables-nft-save -t filter | grep '^-A CNI-FORWARD'") ==
          "-A CNI-FORWARD -d 10.1.0.6/32 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\n"
          "-A CNI-FORWARD -s 10.1.0.6/32 -j ACCEPT\n");
}

TEST_CASE("ipMasq and portmap GC remove stale chains the Go plugins wrote with iptables-nft, and keep valid ones", "[fw][portmap]") {
    TestNs ns("cnit-fw");
    auto comment = [](const std::string& text) {
        std::string quoted;
        for (char ch : text) quoted += ch == '"' ? std::string("\\\"") : std::string(1, ch);
        return " -m comment --comment \"" + quoted + "\"";
    };
    for (const char* id : {"kept-1", "gone-2"}) {
        std::string masq = fw::chain_name("CNI-", "mynet", id), dnat = fw::chain_name("CNI-DN-", "mynet", id);
        std::string c = comment(fw::masq_comment("mynet", id));
        REQUIRE(ns.sh("iptables-nft -t nat -N " + masq) == 0);
        REQUIRE(ns.sh("iptables-nft -t nat -A " + masq + " ! -d 224.0.0.0/4 -j MASQUERADE" + c) == 0);
        REQUIRE(ns.sh("iptables-nft -t nat -A POSTROUTING -s 10.1.0.5 -j " + masq + c) == 0);
        REQUIRE(ns.sh("iptables-nft -t nat -N " + dnat) == 0);
        REQUIRE(ns.sh("iptables-nft -t nat -A " + dnat + " -p tcp --dport 8080 -j DNAT --to-destination 10.1.0.5:80") == 0);
        REQUIRE(ns.sh("iptables-nft -t nat -N CNI-HOSTPORT-DNAT 2>/dev/null; iptables-nft -t nat -A CNI-HOSTPORT-DNAT" +
                      comment(portmap::dnat_comment("mynet", id)) + " -p tcp -m multiport --destination-ports 8080 -j " + dnat) == 0);
    }
    REQUIRE(inside(ns, [&] { return gc_ipmasq("mynet", {{"kept-1", "eth0"}}); }));
    REQUIRE(inside(ns, [&] { return portmap::iptables_host_ports().gc("mynet", {{"kept-1", "eth0"}}); }));
    std::string left = run("ip netns exec " + ns.name + " iptables-nft-save -t nat | grep -c -- '-A '");
    CHECK(left == "4\n");  // kept-1's four rules
    for (const char* prefix : {"CNI-", "CNI-DN-"}) {
        std::string save = "ip netns exec " + ns.name + " iptables-nft-save -t nat | grep -c -- ";
        CHECK(run(save + fw::chain_name(prefix, "mynet", "kept-1")) != "0\n");
        CHECK(run(save + fw::chain_name(prefix, "mynet", "gone-2")) == "0\n");
    }
}
