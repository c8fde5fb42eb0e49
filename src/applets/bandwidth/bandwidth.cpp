// SPDX-License-Identifier: Apache-2.0
// bandwidth (docs/compatibility.md: bandwidth): shapes the container's traffic on the host side of
// its veth, chained after bridge/ptp. ingressRate/ingressBurst (bits/s, bits: toward the container)
// become a TBF on the host veth; egressRate/egressBurst (from the container) a TBF on an IFB device
// bwp<hash(network+containerID)> that the host veth's ingress redirects everything to.
// runtimeConfig.bandwidth applies when none of the four keys is in the config. TBF parameters are
// the reference's: rate/8 bytes per second, the burst as the bucket, limit = 25 ms at the rate plus
// the burst. Beyond the reference: a failed ADD removes the IFB and the qdiscs it added; DEL
// succeeds without a netns; ADD writes down what it shaped (shaped_record.hpp) so that GC removes
// the IFBs and qdiscs of this network's attachments that are gone, and nothing else; and unshapedSubnets or shapedSubnets (the lists of the reverted
// upstream PR #921, in the config or in runtimeConfig.bandwidth) exempt the listed subnets from
// shaping, or shape only them. With a list, each shaped device gets an HTB root instead of the TBF
// (shaping.hpp): a shaped class at the rate with the burst as its buffer, an unshaped one at 100
// Gbit/s, and u32 filters on the remote address (the source of traffic to the container on the
// veth, the destination of its traffic on the IFB). Without a list the qdiscs are the reference's
// TBFs, unchanged.
#include <limits>
#include <memory>
#include <set>

#include "applets/bandwidth/shaped_record.hpp"
#include "applets/bandwidth/shaping.hpp"
#include "core/applet.hpp"
#include "core/cni/netconf.hpp"
#include "core/iface/link_result.hpp"
#include "core/iface/sockets.hpp"
#include "core/iface/unlisted_records.hpp"
#include "core/nl/link.hpp"
#include "core/nl/tc.hpp"
#include "core/rollback.hpp"

namespace cni::bandwidth {
namespace {

constexpr std::string_view kBandwidthVersions[] = {"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"};

// The keys, read at the top level and from runtimeConfig.bandwidth (Go's BandwidthEntry).
struct BandwidthEntry {
    std::uint64_t ingress_rate = 0, ingress_burst = 0, egress_rate = 0, egress_burst = 0;
    std::vector<std::string> unshaped_subnets, shaped_subnets;
};

constexpr std::array kBandwidthKeys{
    key<&BandwidthEntry::ingress_rate>("ingressRate", "bits per second into the container; 0: not shaped"),
    key<&BandwidthEntry::ingress_burst>("ingressBurst", "bits the ingress bucket holds"),
    key<&BandwidthEntry::egress_rate>("egressRate", "bits per second from the container; 0: not shaped"),
    key<&BandwidthEntry::egress_burst>("egressBurst", "bits the egress bucket holds"),
    key<&BandwidthEntry::unshaped_subnets>("unshapedSubnets", "CIDRs exempted from shaping"),
    key<&BandwidthEntry::shaped_subnets>("shapedSubnets", "the only CIDRs shaped (not with unshapedSubnets)"),
};

struct BandwidthConf {
    NetConf net;
    BandwidthEntry limits;
    std::vector<net::IpNet> subnets;  // from unshapedSubnets or shapedSubnets
    bool subnets_shaped = false;
};

// unshapedSubnets / shapedSubnets of one entry: at most one of them, every entry a CIDR.
Status take_subnets(const BandwidthEntry& e, BandwidthConf& c) {
    if (!e.unshaped_subnets.empty() && !e.shaped_subnets.empty())
        return fail("unshapedSubnets and shapedSubnets cannot be both specified, one of them should be discarded");
    c.subnets_shaped = !e.shaped_subnets.empty();
    c.subnets.clear();
    for (auto& text : c.subnets_shaped ? e.shaped_subnets : e.unshaped_subnets) {
        auto net = net::IpNet::parse(text);
        if (!net) return fail(std::string("bad subnet \"") + text + "\" provided in " + (c.subnets_shaped ? "shapedSubnets" : "unshapedSubnets"));
        c.subnets.push_back(*net);
    }
    return {};
}

// Whether `obj` names a limit (even as null): then runtimeConfig's limits are not looked at.
bool names_a_limit(const json::Value& obj) {
    for (auto name : {"ingressRate", "ingressBurst", "egressRate", "egressBurst"})
        if (json::find(obj, name)) return true;
    return false;
}

Status validate(std::uint64_t rate, std::uint64_t burst) {
    if (rate && !burst) return fail("if rate is set, burst must also be set");
    if (!rate && burst) return fail("if burst is set, rate must also be set");
    if (burst / 8 >= std::numeric_limits<std::uint32_t>::max()) return fail("burst cannot be more than 4GB");
    return {};
}

Result<BandwidthConf> parse_bandwidth_conf(const Request& req) {
    CNI_TRY_ASSIGN(auto nc, load_netconf(req.config, "PluginConf", kParseNetworkConf));
    BandwidthConf c;
    c.net = std::move(nc);
    const json::Where& w = c.net.where;
    BandwidthEntry top;
    CNI_TRY(read_keys(c.net.root(), kBandwidthKeys, top, w));
    c.limits = top;
    CNI_TRY(take_subnets(top, c));
    CNI_TRY_ASSIGN(auto rc, json::anonymous_struct(c.net.root(), "runtimeConfig", w,
                                                   R"(struct { Bandwidth *main.BandwidthEntry "json:\"bandwidth,omitempty\"" })"));
    CNI_TRY_ASSIGN(auto bw, json::struct_member(rc.object, "bandwidth", rc.inner, "main.BandwidthEntry"));
    if (bw) {
        BandwidthEntry runtime;
        CNI_TRY(read_keys(*bw, kBandwidthKeys, runtime, rc.inner.at("bandwidth").in("BandwidthEntry")));
        if (!names_a_limit(c.net.root())) {
            c.limits.ingress_rate = runtime.ingress_rate;
            c.limits.ingress_burst = runtime.ingress_burst;
            c.limits.egress_rate = runtime.egress_rate;
            c.limits.egress_burst = runtime.egress_burst;
        }
        if (c.subnets.empty()) CNI_TRY(take_subnets(runtime, c));
    }
    CNI_TRY(validate(c.limits.ingress_rate, c.limits.ingress_burst));
    CNI_TRY(validate(c.limits.egress_rate, c.limits.egress_burst));
    return c;
}

// One direction's shaping: match_source on the veth, the destination on the IFB (shaping.hpp).
Shaping shaping_of(const BandwidthConf& c, std::uint64_t rate, std::uint64_t burst, bool match_source) {
    return Shaping{rate, burst, c.subnets, c.subnets_shaped, match_source};
}

// The host side of CNI_IFNAME's veth, which prevResult must list outside any sandbox.
Result<nl::LinkInfo> host_veth(const nl::Socket& host, const CniResult& prev, const Context& ctx) {
    const Request& r = ctx.req;
    CNI_TRY_ASSIGN(auto io, iface::open_container(ctx));
    CNI_TRY_ASSIGN(auto inside, nl::require_link(io.container, r.ifname));
    if (inside.kind != "veth" || !inside.peer_index) return fail("bandwidth: " + r.ifname + " is not a veth: nothing to shape on the host");
    CNI_TRY_ASSIGN(auto peer, nl::find_link(host, inside.peer_index));
    if (peer)
        for (auto& i : prev.interfaces)
            if (i.sandbox.empty() && i.name == peer->name) return *peer;
    return fail("bandwidth: prevResult lists no host interface that is the peer of " + r.ifname);
}

// Writes down what ADD shapes, for GC, before it shapes; a failed ADD drops it again.
Status record_shaped(const ShapedRecord& rec, Rollback& undo) {
    CNI_TRY_ASSIGN(auto records, os::open_records("bandwidth", true));
    CNI_TRY(save_shaped(*records, rec));
    undo.push([dir = std::make_shared<os::Dir>(std::move(*records)), name = os::record_name(rec.container_id, rec.ifname)] {
        dir->remove(name);
    });
    return {};
}

Result<CniResult> bandwidth_add(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_bandwidth_conf(ctx.req));
    const Request& r = ctx.req;
    CNI_TRY_ASSIGN(auto prev, parse_prev_result(c.net, "failed to parse prevResult: "));
    const BandwidthEntry& l = c.limits;
    if (!l.ingress_rate && !l.egress_rate) return prev ? std::move(*prev) : CniResult{};
    if (!prev) return fail("must be called as chained plugin");
    CniResult result = std::move(*prev);
    CNI_TRY_ASSIGN(auto host, nl::Socket::open());
    CNI_TRY_ASSIGN(auto veth, host_veth(host, result, ctx));

    Rollback undo;
    // The record first: an ADD that dies after making the IFB leaves what GC finds it by.
    CNI_TRY(record_shaped(ShapedRecord{c.net.name, r.container_id, r.ifname, veth.name, veth.index}, undo));
    undo.push([&] { (void)nl::clear_qdiscs(host, veth.index); });
    if (l.ingress_rate) CNI_TRY(shape(host, veth.index, shaping_of(c, l.ingress_rate, l.ingress_burst, true)));
    if (l.egress_rate) {
        std::string name = ifb_name(c.net.name, r.container_id);
        CNI_TRY(nl::add_ifb(host, nl::NewLink{name, veth.mtu, "", 0, -1}));
        undo.push([&host, name] { (void)nl::delete_link(host, name); });
        CNI_TRY_ASSIGN(auto ifb, nl::require_link(host, name));
        CNI_TRY(nl::set_txqlen(host, ifb, 0));
        CNI_TRY(nl::set_link_up(host, ifb, true));
        CNI_TRY(nl::add_ingress_redirect(host, veth.index, ifb.index));
        CNI_TRY(shape(host, ifb.index, shaping_of(c, l.egress_rate, l.egress_burst, false)));
        result.interfaces.push_back(iface::host_interface(ifb));
    }
    undo.dismiss();
    return result;
}

Status bandwidth_del(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_bandwidth_conf(ctx.req));
    CNI_TRY_ASSIGN(auto host, nl::Socket::open());
    CNI_TRY(nl::delete_link(host, ifb_name(c.net.name, ctx.req.container_id)));  // the veth's qdiscs go with the veth
    if (auto records = os::open_records("bandwidth", false); records && *records)
        (*records)->remove(os::record_name(ctx.req.container_id, ctx.req.ifname));
    return {};
}

// What a gone attachment's ADD set up: its IFB (unless a valid attachment of the same container
// shares it: the name has no ifname in it) and the qdiscs on its host veth, if that same link
// is still there.
Status release_shaped(const nl::Socket& host, const ShapedRecord& rec, const std::set<std::string>& valid_ids) {
    Failures failures;
    if (!valid_ids.contains(rec.container_id)) failures.add(nl::delete_link(host, ifb_name(rec.network, rec.container_id)));
    auto veth = nl::find_link(host, rec.veth_index);
    if (veth && *veth && (*veth)->name == rec.veth && (*veth)->kind == "veth") failures.add(nl::clear_qdiscs(host, rec.veth_index));
    return failures.status();
}

// Beyond the reference (which has no GC): this network's records of attachments not in
// cni.dev/valid-attachments, and what they name.
Status bandwidth_gc(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_bandwidth_conf(ctx.req));
    if (!c.net.valid_attachments) return {};
    CNI_TRY_ASSIGN(auto unlisted, iface::unlisted_records("bandwidth", *c.net.valid_attachments));
    if (!unlisted) return {};
    std::set<std::string> valid_ids;
    for (auto& a : *c.net.valid_attachments) valid_ids.insert(a.container_id);
    CNI_TRY_ASSIGN(auto host, nl::Socket::open());
    Failures failures;
    for (auto& name : unlisted->names) {
        auto rec = load_shaped(unlisted->dir, name);
        if (rec && (!*rec || (*rec)->network != c.net.name)) continue;
        if (rec) failures.add(release_shaped(host, **rec, valid_ids));
        unlisted->dir.remove(name);  // one that does not decode names nothing to release
    }
    return failures.status("bandwidth: ");
}

Status bandwidth_check(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_bandwidth_conf(ctx.req));
    const Request& r = ctx.req;
    CNI_TRY_ASSIGN(auto prev, require_prev_result(c.net, "must be called as chained plugin"));
    const BandwidthEntry& l = c.limits;
    if (!l.ingress_rate && !l.egress_rate) return {};
    CNI_TRY_ASSIGN(auto host, nl::Socket::open());
    CNI_TRY_ASSIGN(auto veth, host_veth(host, prev, ctx));
    if (l.ingress_rate) CNI_TRY(check_shaped(host, veth.index, veth.name, shaping_of(c, l.ingress_rate, l.ingress_burst, true)));
    if (l.egress_rate) {
        std::string name = ifb_name(c.net.name, r.container_id);
        CNI_TRY_ASSIGN(auto ifb, nl::find_link(host, name));
        if (!ifb) return fail("bandwidth: the egress device " + name + " is missing");
        CNI_TRY(check_shaped(host, ifb->index, name, shaping_of(c, l.egress_rate, l.egress_burst, false)));
    }
    return {};
}

constexpr auto kBandwidthKeyDocs = docs_of(kBandwidthKeys);

}  // namespace

extern const Applet bandwidth_applet{
    .name = "bandwidth",
    .kind = AppletKind::meta,
    .summary = "rate-limit the container's traffic with TBF on its host veth and an IFB (chained)",
    .keys = kBandwidthKeyDocs,
    .help = "The limits may instead come from runtimeConfig bandwidth (the same keys) when none is set at the top level. "
            "Needs prevResult from a veth-based plugin (bridge, ptp).",
    .versions = kBandwidthVersions,
    .add = bandwidth_add,
    .del = bandwidth_del,
    .check = bandwidth_check,
    .gc = bandwidth_gc,
};

}  // namespace cni::bandwidth
