// SPDX-License-Identifier: Apache-2.0
// The legacy iptables entry decoder (fw::detail::EntryCodec), without a kernel: the rules our
// plugins write read back as themselves in both families, and an entry that only resembles one
// (a mask that is no prefix, address bits outside the mask, a wildcard mask on a plain name) or
// that is malformed (truncated, a match size below its header, a comment without terminator)
// reads as foreign, and so does a goto (-g), with go_to set. tests/fuzz/iptables_rule drives the
// same decoder with any bytes.
#include <catch2/catch.hpp>

#include "core/fw/iptables_impl.hpp"  // first: net/if.h before the kernel headers

#include <linux/netfilter/xt_addrtype.h>
#include <linux/netfilter/xt_conntrack.h>
#include <linux/netfilter_ipv4/ip_tables.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
#include <netinet/in.h>

using namespace cni;
using namespace cni::fw;

namespace {

const detail::RevisionProbe kNewest = [](bool, const char*, std::uint8_t) { return true; };

net::IpNet cidr(const char* text) { return *net::IpNet::parse(text); }

std::vector<IptRule> our_rules(bool v6) {
    IptRule dnat;
    dnat.comment = "dnat name: \"net\" id: \"c1\"";
    dnat.proto = IPPROTO_TCP;
    dnat.matches = {MultiportDst{{8080, 8443}}};
    dnat.target = "CNI-DN-0123456789abcdef01234";
    IptRule to;
    to.proto = IPPROTO_UDP;
    to.dst = cidr(v6 ? "fd00::/64" : "10.0.0.0/8");
    to.dst_inverted = true;
    to.matches = {DstPort{53}, AddrType{0, XT_ADDRTYPE_LOCAL, false, false}};
    to.target = "DNAT";
    to.target_args = DnatTo{*net::IpAddr::parse(v6 ? "fd00::2" : "10.22.0.2"), 5353};
    IptRule masq;
    masq.src = cidr(v6 ? "fd00:1::/64" : "10.22.0.0/16");
    masq.out_iface = "eth+";
    masq.in_iface = "cni0";
    masq.in_inverted = true;
    masq.matches = {CtState{XT_CONNTRACK_STATE_BIT(IP_CT_ESTABLISHED), false}, MarkMatch{0x2000, 0x2000, true}};
    masq.target = "MASQUERADE";
    IptRule mark;
    mark.target = "MARK";
    mark.target_args = SetXMark{0x2000, 0x2000};
    IptRule connmark;
    connmark.target = "CONNMARK";
    connmark.target_args = ConnMark{true, 0, 0xffffffff, 0xffffffff};
    IptRule primary_eni;  // vpc-eni's NodePort connmark: addrtype with --limit-iface-in
    primary_eni.in_iface = "eth0";
    primary_eni.comment = "AWS, primary ENI";
    primary_eni.matches = {AddrType{.dst = XT_ADDRTYPE_LOCAL, .limit_iface_in = true}};
    primary_eni.target = "CONNMARK";
    primary_eni.target_args = ConnMark{false, 0x80, 0x80, 0xffffffff};
    return {dnat, to, masq, mark, connmark, primary_eni};
}

const detail::EntryCodec& codec(bool v6) { return v6 ? detail::entry_codec_v6() : detail::entry_codec_v4(); }

}  // namespace

TEST_CASE("iptables entries: the rules we write read back as themselves, in both families", "[fw]") {
    for (bool v6 : {false, true})
        for (const auto& rule : our_rules(v6)) {
            auto bytes = codec(v6).build(rule, kNewest);
            auto listed = codec(v6).describe(bytes, rule.target);
            CHECK_FALSE(listed.foreign);
            CHECK(listed.rule == rule);
        }
}

TEST_CASE("iptables entries: a header that only resembles ours reads as foreign", "[fw]") {
    IptRule rule;
    rule.src = cidr("10.22.0.0/16");
    rule.in_iface = "cni0";
    rule.target = "ACCEPT";
    const auto good = codec(false).build(rule, kNewest);
    REQUIRE_FALSE(codec(false).describe(good, "ACCEPT").foreign);
    auto* e = reinterpret_cast<const ipt_entry*>(good.data());
    const std::size_t smsk = reinterpret_cast<const unsigned char*>(&e->ip.smsk) - good.data();
    const std::size_t src = reinterpret_cast<const unsigned char*>(&e->ip.src) - good.data();
    const std::size_t in_mask = reinterpret_cast<const unsigned char*>(e->ip.iniface_mask) - good.data();
    auto changed = [&](std::size_t at, unsigned char value) {
        auto bytes = good;
        bytes[at] = value;
        return codec(false).describe(bytes, "ACCEPT");
    };
    CHECK_FALSE(changed(smsk + 2, 0xff).foreign);     // 10.22.0.0/24: another rule of ours, not a foreign one
    CHECK(changed(smsk + 1, 0x00).foreign);           // 10.22.0.0 under 255.0.0.0: bits outside the mask
    CHECK(changed(smsk + 0, 0x0f).foreign);           // 15.255.0.0 is no prefix
    CHECK(changed(src + 3, 0x01).foreign);            // 10.22.0.1/16: a host bit set
    CHECK(changed(in_mask + 7, 0xff).foreign);        // a mask longer than "cni0" + NUL
    CHECK(changed(in_mask + 4, 0x00).foreign);        // "cni0" without its NUL masked: a wildcard in disguise
}

TEST_CASE("iptables entries: a goto (-g) reads as one, and as foreign, in both families", "[fw]") {
    IptRule rule;
    rule.in_iface = "sxother";
    rule.target = "SX-AGENT";
    for (bool v6 : {false, true}) {
        auto bytes = codec(v6).build(rule, kNewest);
        auto jump = codec(v6).describe(bytes, rule.target);
        CHECK_FALSE(jump.foreign);
        CHECK_FALSE(jump.go_to);
        if (v6) reinterpret_cast<ip6t_entry*>(bytes.data())->ipv6.flags |= IP6T_F_GOTO;
        else reinterpret_cast<ipt_entry*>(bytes.data())->ip.flags |= IPT_F_GOTO;
        auto go_to = codec(v6).describe(bytes, rule.target);
        CHECK(go_to.go_to);
        CHECK(go_to.foreign);  // never taken for our jump to the same chain
        CHECK(go_to.rule.target == "SX-AGENT");
    }
}

TEST_CASE("iptables entries: malformed entries read as foreign without reading past them", "[fw]") {
    IptRule rule = our_rules(false)[0];
    const auto good = codec(false).build(rule, kNewest);
    auto* e = reinterpret_cast<const ipt_entry*>(good.data());
    const std::size_t first_match = sizeof(ipt_entry);
    SECTION("cut short anywhere") {
        for (std::size_t n = 0; n < good.size(); ++n) {
            std::vector<unsigned char> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
            auto listed = codec(false).describe(cut, rule.target);
            CHECK((listed.foreign || listed.rule != rule));
        }
    }
    SECTION("a match smaller than its own header") {
        auto bytes = good;
        reinterpret_cast<xt_entry_match*>(bytes.data() + first_match)->u.match_size = 8;
        CHECK(codec(false).describe(bytes, rule.target).foreign);
    }
    SECTION("a match running past the target") {
        auto bytes = good;
        reinterpret_cast<xt_entry_match*>(bytes.data() + first_match)->u.match_size = static_cast<std::uint16_t>(e->target_offset + 8);
        CHECK(codec(false).describe(bytes, rule.target).foreign);
    }
    SECTION("a comment without its terminator") {
        auto bytes = good;
        auto* m = reinterpret_cast<xt_entry_match*>(bytes.data() + first_match);
        std::memset(m->data, 'x', m->u.match_size - sizeof(xt_entry_match));
        CHECK(codec(false).describe(bytes, rule.target).foreign);
    }
    SECTION("a target offset past the entry") {
        auto bytes = good;
        reinterpret_cast<ipt_entry*>(bytes.data())->target_offset = static_cast<std::uint16_t>(bytes.size() + 8);
        CHECK(codec(false).describe(bytes, rule.target).foreign);
    }
}
