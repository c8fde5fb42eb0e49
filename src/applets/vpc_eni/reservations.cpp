// SPDX-License-Identifier: Apache-2.0
// vpc-eni-ipam's configuration and reservations (see reservations.hpp).
#include "applets/vpc_eni/reservations.hpp"

#include <algorithm>
#include <ctime>

#include "applets/vpc_eni/sha1.hpp"
#include "core/cni/cni_args.hpp"
#include "core/cni/request.hpp"
#include "core/ipam/allocator.hpp"
#include "core/os/node_folder.hpp"
#include "core/strings.hpp"

namespace cni::vpc_eni {
namespace {

constexpr const char* kAddresses = "addresses";    // the store, in ipamDir
constexpr const char* kNetworks = "networks";      // the networks' records, in ipamDir
constexpr const char* kNamespaces = "namespaces";  // the namespaces' markers, in ipamDir
constexpr std::size_t kRecordLimit = 4096;
constexpr std::string_view kLine = "\r\n";

// A name the CNI spec allows a network (and Kubernetes a namespace), which is also a plain folder name.
bool plain_name(std::string_view n) { return n.size() <= 255 && valid_id(n); }

bool valid(const Claim& c, const std::vector<net::Attachment>& attachments) {
    return std::ranges::any_of(attachments, [&](const net::Attachment& a) { return c.matches(a.container_id, a.ifname); });
}

// An entry of a records or markers folder that names an address (not a temporary file).
std::optional<net::IpAddr> address_named(const std::string& name) {
    auto ip = net::IpAddr::parse(name);
    if (!ip || ip->str() != name) return std::nullopt;
    return ip;
}

}  // namespace

Result<std::optional<os::Dir>> open_ipam_dir(const NodeFile& node, bool make) {
    if (make) CNI_TRY(os::mkdir_all(node.ipam_dir, 0755));
    CNI_TRY_ASSIGN(auto dir, os::Dir::open_trusted_if_exists(node.ipam_dir));
    if (dir) CNI_TRY(os::mark_node_folder(*dir, node.ipam_dir + ", vpc-eni-ipam's ipamDir"));
    return dir;
}

std::string Claim::text() const {
    return id + std::string(kLine) + ifname + std::string(kLine) + digest + std::string(kLine) + pod_namespace;
}

std::optional<Claim> Claim::parse(std::string_view text) {
    std::vector<std::string> parts;
    for (std::size_t at = 0;;) {
        const std::size_t end = text.find(kLine, at);
        parts.emplace_back(text.substr(at, end == std::string_view::npos ? end : end - at));
        if (end == std::string_view::npos) break;
        at = end + kLine.size();
    }
    if (parts.size() < 2 || parts[0].empty()) return std::nullopt;
    parts.resize(4);
    return Claim{parts[0], parts[1], parts[2], parts[3]};
}

bool Claim::matches(std::string_view want_id, std::string_view want_ifname) const {
    return id == trim_space(want_id) && ifname == want_ifname;
}

Claim claim_of(const Request& req, const NetConf& net) {
    Claim c{std::string(trim_space(req.container_id)), req.ifname, "", cni_arg(req.args, "K8S_POD_NAMESPACE").value_or("")};
    if (const json::Value* ipam = net.member("ipam")) c.digest = sha1_hex(json::write(*ipam, json::Style::compact, true));
    return c;
}

Result<EniIpamRequest> read_eni_ipam(const Request& req) {
    CNI_TRY_ASSIGN(auto nc, parse_ipam_netconf(req.config, "vpc.Net", "vpc.IPAMConfig"));
    const json::Value* ipam = nc.member("ipam");
    if (!ipam || ipam->IsNull()) return fail("IPAM config missing 'ipam' key");
    json::Where top{"Net", ""};
    CNI_TRY(json::expect_object(*ipam, top.at("ipam"), "vpc.IPAMConfig"));
    EniIpamConf c;
    CNI_TRY(read_keys(*ipam, kEniIpamKeys, c, top.at("ipam").in("IPAMConfig")));
    return EniIpamRequest{std::move(nc), std::move(c)};
}

ipam::RangeSet node_range_set(const NodeFile& node) {
    ipam::RangeSet set;
    std::size_t ranges = 0;
    for (auto& eni : node.enis) ranges += eni.secondary_ips.size() + eni.ipv4_prefixes.size();
    set.reserve(ranges);
    for (auto& eni : node.enis) {
        const net::IpNet subnet = eni.subnet->masked();
        const net::IpAddr gateway = eni.gateway();
        for (auto& ip : eni.secondary_ips) set.push_back(ipam::Range{subnet, ip, ip, gateway});
        for (auto& prefix : eni.ipv4_prefixes) set.push_back(ipam::Range{subnet, prefix.ip, prefix.last(), gateway});
    }
    return set;
}

Result<ipam::Pool> pool_for(const Request& req, EniIpamRequest& r, const NodeFile& node) {
    if (node.address_count() == 0) return fail("vpc-eni-ipam: node file " + node.path + " lists no secondaryIps and no ipv4Prefixes");
    CNI_TRY_ASSIGN(auto c, ipam::request_pool(req, r.net));
    c.data_dir = node.ipam_dir;
    c.name = kAddresses;
    c.ranges.push_back(node_range_set(node));
    CNI_TRY(ipam::check_ranges(c, c.ranges.size() - 1));
    return c;
}

namespace {

// ipamDir and its store, under the store's lock; nothing when either is missing (nothing made).
struct OpenedStore {
    os::Dir ipam;
    ipam::Store store;
};
Result<std::optional<OpenedStore>> open_existing_store(const NodeFile& node, const ipam::Store::Warn& warn) {
    CNI_TRY_ASSIGN(auto ipam, open_ipam_dir(node, false));
    if (!ipam) return std::optional<OpenedStore>{};
    CNI_TRY_ASSIGN(auto addresses, ipam->subdir_if_exists(kAddresses));
    if (!addresses) return std::optional<OpenedStore>{};
    CNI_TRY_ASSIGN(auto store, ipam::Store::open_in(*ipam, kAddresses, warn));
    return std::optional<OpenedStore>(OpenedStore{std::move(*ipam), std::move(store)});
}

std::string not_plain(const NodeFile& node, const std::string& network) {
    return "vpc-eni-ipam: network name \"" + network + "\" is not one a CNI network may have (letters, digits, '-', "
           "'_' and '.'): it names the network's folder in " + node.ipam_dir + "/" + kNetworks;
}

}  // namespace

Result<Reservations> Reservations::open(const NodeFile& node, const std::string& network, ipam::Store::Warn warn) {
    if (!plain_name(network)) return fail(not_plain(node, network));
    CNI_TRY_ASSIGN(auto ipam, open_ipam_dir(node, true));
    CNI_TRY_ASSIGN(auto store, ipam::Store::open_in(*ipam, kAddresses, warn));
    CNI_TRY_ASSIGN(auto networks, ipam->subdir(kNetworks, 0755));
    CNI_TRY_ASSIGN(auto records, networks.subdir(network, 0755));
    return Reservations(Caps{node.max_per_namespace, node.path}, std::move(store), std::move(*ipam),
                        std::move(networks), std::move(records), network, std::move(warn));
}

Result<std::optional<Reservations>> Reservations::open_existing(const NodeFile& node, const std::string& network,
                                                                ipam::Store::Warn warn) {
    constexpr std::nullopt_t none = std::nullopt;
    if (!plain_name(network)) return std::optional<Reservations>(none);  // ADD refused it
    CNI_TRY_ASSIGN(auto opened, open_existing_store(node, warn));
    if (!opened) return std::optional<Reservations>(none);
    CNI_TRY_ASSIGN(auto networks, opened->ipam.subdir_if_exists(kNetworks));
    if (!networks) return std::optional<Reservations>(none);
    CNI_TRY_ASSIGN(auto records, networks->subdir_if_exists(network));
    if (!records) return std::optional<Reservations>(none);
    return std::optional<Reservations>(Reservations(Caps{node.max_per_namespace, node.path},
                                                    std::move(opened->store), std::move(opened->ipam), std::move(*networks),
                                                    std::move(*records), network, std::move(warn)));
}

Status Reservations::check_caps(const Claim& claim) {
    if (caps_.per_namespace <= 0 || claim.pod_namespace.empty()) return {};
    const std::string ns = claim.pod_namespace.substr(0, 64);
    if (!plain_name(claim.pod_namespace))
        return fail("vpc-eni-ipam: K8S_POD_NAMESPACE \"" + ns + "\" is no namespace name, and maxAddressesPerNamespace counts by it");
    const std::int64_t held = namespace_count(claim.pod_namespace);
    if (held < caps_.per_namespace) return {};
    return fail("vpc-eni-ipam: namespace \"" + ns + "\" holds " + std::to_string(held) +
                " of the node's addresses, as many as maxAddressesPerNamespace (" + std::to_string(caps_.per_namespace) +
                ", in " + caps_.node_file + ") allows");
}

Status Reservations::admit(const Claim& claim) {
    auto admitted = check_caps(claim);
    if (!admitted) drop_empty();
    return admitted;
}

// The namespace's markers whose address is still reserved; the others are removed.
std::int64_t Reservations::namespace_count(const std::string& pod_namespace) {
    auto markers = ipam_.subdir_if_exists(kNamespaces);
    if (!markers || !*markers) return 0;
    auto mine = (*markers)->subdir_if_exists(pod_namespace);
    if (!mine || !*mine) return 0;
    std::int64_t held = 0;
    for (auto& name : (*mine)->names()) {
        auto ip = address_named(name);
        if (ip && store_.taken(*ip)) ++held;
        else if (ip) (*mine)->remove(name);  // its address went without its DEL (a crash)
    }
    return held;
}

Status Reservations::mark(const net::IpAddr& ip, const Claim& claim) {
    if (!plain_name(claim.pod_namespace)) return {};
    CNI_TRY_ASSIGN(auto markers, ipam_.subdir(kNamespaces, 0755));
    CNI_TRY_ASSIGN(auto mine, markers.subdir(claim.pod_namespace, 0755));
    return mine.write_atomic(ip.str(), claim.text(), 0600);
}

void Reservations::drop_record(const Record& r) {
    records_.remove(r.ip.str());
    if (!plain_name(r.claim.pod_namespace)) return;
    auto markers = ipam_.subdir_if_exists(kNamespaces);
    if (!markers || !*markers) return;
    auto mine = (*markers)->subdir_if_exists(r.claim.pod_namespace);
    if (!mine || !*mine) return;
    (*mine)->remove(r.ip.str());
    if ((*mine)->names().empty()) (*markers)->remove_dir(r.claim.pod_namespace);
}

void Reservations::drop_empty() {
    if (records_.names().empty()) networks_.remove_dir(network_);
}

Status Reservations::record(const std::vector<net::IpAddr>& ips, const Claim& claim) {
    Status st;
    for (auto& ip : ips) {
        st = records_.write_atomic(ip.str(), claim.text(), 0600);
        if (st) st = mark(ip, claim);
        if (!st) break;
    }
    if (!st) {
        for (auto& done : ips) drop_record(Record{done, claim});
        (void)store_.release_by_id(claim.id, claim.ifname);  // an ADD's own: no one else's holds (id, ifname)
        drop_empty();
    }
    store_.flush();
    return st;
}

std::vector<Reservations::Record> Reservations::held_records(std::string_view id, std::string_view ifname) {
    std::vector<Record> out;
    for (auto& ip : store_.held_by(id, ifname)) {
        auto text = records_.read_if_exists(ip.str(), kRecordLimit);
        if (!text || !*text) continue;
        if (auto claim = Claim::parse(**text); claim && claim->matches(id, ifname)) out.push_back(Record{ip, std::move(*claim)});
    }
    store_.flush();
    return out;
}

std::vector<net::IpAddr> Reservations::held(std::string_view id, std::string_view ifname) {
    std::vector<net::IpAddr> out;
    for (auto& r : held_records(id, ifname)) out.push_back(r.ip);
    return out;
}

Status Reservations::forget(const Record& r) {
    CNI_TRY(store_.release_if(r.ip, [&](const ipam::Owner& o) {
        return o.kind == ipam::OwnerKind::current && r.claim.matches(o.id, o.ifname);
    }));
    drop_record(r);
    return {};
}

Status Reservations::release(std::string_view id, std::string_view ifname) {
    Failures failures;
    for (auto& r : held_records(id, ifname)) failures.add(forget(r));
    store_.flush();
    drop_empty();
    return failures.status();
}

std::vector<Reservations::Record> Reservations::records() {
    std::vector<Record> out;
    for (auto& name : records_.names()) {
        auto ip = address_named(name);
        if (!ip) continue;
        auto text = records_.read_if_exists(name, kRecordLimit);
        if (!text || !*text) continue;
        if (auto claim = Claim::parse(**text)) out.push_back(Record{*ip, std::move(*claim)});
    }
    std::ranges::sort(out, {}, &Record::ip);
    return out;
}

bool Reservations::reserved_to(const Record& r) {
    return std::ranges::binary_search(store_.held_by(r.claim.id, r.claim.ifname), r.ip);
}

std::vector<net::IpAddr> Reservations::stale(const std::vector<net::Attachment>& valid_ones, std::string_view digest) {
    std::vector<net::IpAddr> out;
    for (auto& r : records())
        if (r.claim.digest == digest && !valid(r.claim, valid_ones) && reserved_to(r)) out.push_back(r.ip);
    store_.flush();
    return out;
}

Status Reservations::release_stale(const std::vector<net::Attachment>& valid_ones, std::string_view digest) {
    Failures failures;
    std::size_t others = 0;
    for (auto& r : records()) {
        if (!reserved_to(r)) drop_record(r);  // a record its reservation no longer backs
        else if (r.claim.digest != digest) ++others;
        else if (!valid(r.claim, valid_ones)) failures.add(forget(r));
    }
    if (others)
        warn_("vpc-eni-ipam GC: " + std::to_string(others) + " address(es) of network \"" + network_ +
              "\" were given under another ipam config of that name: left to their DEL");
    store_.flush();
    drop_empty();
    return failures.status("vpc-eni-ipam GC: ");
}

Status release_unrecorded(const NodeFile& node, ipam::Store::Warn warn) {
    CNI_TRY_ASSIGN(auto opened, open_existing_store(node, warn));
    if (!opened) return {};
    std::vector<std::string> recorded;
    if (auto networks = opened->ipam.subdir_if_exists(kNetworks); networks && *networks)
        for (auto& network : (*networks)->names())
            if (auto records = (*networks)->subdir_if_exists(network); records && *records)
                for (auto& name : (*records)->names()) recorded.push_back(std::move(name));
    std::ranges::sort(recorded);
    CNI_TRY_ASSIGN(auto addresses, opened->ipam.subdir_if_exists(kAddresses));
    const std::time_t before = std::time(nullptr) - kUnrecordedGraceSeconds;
    Failures failures;
    for (auto& [ip, owner] : opened->store.reservations()) {
        if (owner.kind != ipam::OwnerKind::current || std::ranges::binary_search(recorded, ip.str())) continue;
        auto st = addresses ? addresses->stat(ip.str()) : std::nullopt;
        if (!st || st->st_mtime > before) continue;  // an ADD may be about to record it
        failures.add(opened->store.release_if(ip, [&held = owner](const ipam::Owner& o) { return o.matches(held.id, held.ifname); }));
    }
    opened->store.flush();
    return failures.status("vpc-eni-ipam GC: ");
}

Status node_status(const Context& ctx, const ipam::Pool& pool, const NodeFile& node) {
    CNI_TRY_ASSIGN(auto opened, open_existing_store(node, ctx.warn));
    if (!opened) return {};  // no store: every address is free
    auto status = ipam::pool_status_in(ctx, pool, opened->store);
    if (!status) return cni::Unexpected(explain_exhaustion(std::move(status).error(), pool, node, opened->store));
    return status;
}

Error explain_exhaustion(Error failed, const ipam::Pool& pool, const NodeFile& node, ipam::Store& store) {
    if (pool.ranges.empty()) return failed;
    std::string enis;
    for (auto& e : node.enis)
        if (!e.secondary_ips.empty() || !e.ipv4_prefixes.empty()) enis += (enis.empty() ? "" : ", ") + e.interface;
    if (!ipam::has_free_address(store, pool.ranges.back(), int(pool.ranges.size()) - 1)) {
        failed.msg = "vpc-eni-ipam: no free address on ENIs " + enis + " (" + std::to_string(node.address_count()) +
                     " addresses, all reserved)";
        return failed;
    }
    const std::string listed = ipam::str(pool.ranges.back());  // a requested address's error names the set
    if (auto at = failed.msg.find(listed); at != std::string::npos) failed.msg.replace(at, listed.size(), "the node's addresses (ENIs " + enis + ")");
    return failed;
}

Result<std::optional<Reservations>> reservations_of(const Context& ctx, const std::string& node_file,
                                                    const std::string& network) {
    auto node = load_configured_node_file(node_file);
    if (!node) {
        ctx.warn(node.error().msg + "; no reservation can be found");
        return std::optional<Reservations>{};
    }
    return Reservations::open_existing(*node, network, ctx.warn);
}

Result<std::vector<net::IpAddr>> reserved_for(const Context& ctx, const std::string& node_file, const std::string& network) {
    CNI_TRY_ASSIGN(auto held, reservations_of(ctx, node_file, network));
    if (!held) return std::vector<net::IpAddr>{};
    return held->held(ctx.req.container_id, ctx.req.ifname);
}

Status release_for(const Context& ctx, const std::string& node_file, const std::string& network) {
    CNI_TRY_ASSIGN(auto held, reservations_of(ctx, node_file, network));
    return held ? held->release(ctx.req.container_id, ctx.req.ifname) : Status{};
}

Result<std::vector<net::IpAddr>> stale_addresses(const Context& ctx) {
    CNI_TRY_ASSIGN(auto r, read_eni_ipam(ctx.req));
    if (!r.net.valid_attachments) return std::vector<net::IpAddr>{};
    CNI_TRY_ASSIGN(auto held, reservations_of(ctx, r.ipam.node_file, r.net.name));
    if (!held) return std::vector<net::IpAddr>{};
    return held->stale(*r.net.valid_attachments, claim_of(ctx.req, r.net).digest);
}

}  // namespace cni::vpc_eni
