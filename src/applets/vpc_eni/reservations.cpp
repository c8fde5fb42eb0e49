// SPDX-License-Identifier: Apache-2.0
// vpc-eni-ipam's configuration and reservations (see reservations.hpp).
#include "applets/vpc_eni/reservations.hpp"

#include <algorithm>

#include "core/strings.hpp"

namespace cni::vpc_eni {
namespace {

constexpr const char* kAddresses = "addresses";  // the store, in ipamDir
constexpr const char* kNetworks = "networks";    // the networks' records, in ipamDir
constexpr std::size_t kRecordLimit = 4096;

// A name the CNI spec allows a network, which is also a plain folder name.
bool plain_name(std::string_view n) {
    return !n.empty() && n.size() <= 255 && n != "." && n != ".." &&
           std::ranges::all_of(n, [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'; });
}

bool valid(const ipam::Owner& o, const std::vector<net::Attachment>& attachments) {
    return std::ranges::any_of(attachments, [&](const net::Attachment& a) { return o.matches(a.container_id, a.ifname); });
}

}  // namespace

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
    set.reserve(node.address_count());
    for (auto& eni : node.enis) {
        const net::IpNet subnet = eni.subnet->masked();
        const net::IpAddr gateway = eni.gateway();
        for (auto& ip : eni.secondary_ips) set.push_back(ipam::Range{subnet, ip, ip, gateway});
    }
    return set;
}

Result<ipam::Pool> pool_for(const Request& req, EniIpamRequest& r, const NodeFile& node) {
    if (node.address_count() == 0) return fail("vpc-eni-ipam: node file " + node.path + " lists no secondaryIps");
    CNI_TRY_ASSIGN(auto c, ipam::request_pool(req, r.net));
    c.data_dir = node.ipam_dir;
    c.name = kAddresses;
    c.ranges.push_back(node_range_set(node));
    CNI_TRY(ipam::check_ranges(c, c.ranges.size() - 1));
    return c;
}

Result<Reservations> Reservations::open(const NodeFile& node, const std::string& network, ipam::Store::Warn warn) {
    if (!plain_name(network))
        return fail("vpc-eni-ipam: network name \"" + network + "\" is not one a CNI network may have (letters, digits, '-', "
                    "'_' and '.'): it names the network's folder in " + node.ipam_dir + "/" + kNetworks);
    CNI_TRY_ASSIGN(auto store, ipam::Store::open(node.ipam_dir, kAddresses, std::move(warn)));
    CNI_TRY_ASSIGN(auto root, os::Dir::open(node.ipam_dir));  // made by the store's open
    CNI_TRY_ASSIGN(auto networks, root.subdir(kNetworks, 0755));
    CNI_TRY_ASSIGN(auto records, networks.subdir(network, 0755));
    return Reservations(std::move(store), std::move(records));
}

Status Reservations::record(const std::vector<net::IpAddr>& ips, std::string_view id, std::string_view ifname) {
    const std::string owner = std::string(trim_space(id)) + "\r\n" + std::string(ifname);  // as the reservation says it
    for (auto& ip : ips) {
        if (auto st = records_.write(ip.str(), owner, 0600); !st) {
            for (auto& done : ips) records_.remove(done.str());
            (void)store_.release_by_id(id, ifname);  // an ADD's own: no one else's holds (id, ifname)
            store_.flush();
            return st;
        }
    }
    store_.flush();
    return {};
}

std::vector<net::IpAddr> Reservations::held(std::string_view id, std::string_view ifname) {
    std::vector<net::IpAddr> out;
    for (auto& ip : store_.held_by(id, ifname)) {
        auto text = records_.read_if_exists(ip.str(), kRecordLimit);
        if (text && *text && ipam::OwnerView::parse(**text).matches(id, ifname)) out.push_back(ip);
    }
    store_.flush();
    return out;
}

Status Reservations::release(std::string_view id, std::string_view ifname) {
    Failures failures;
    for (auto& ip : held(id, ifname)) {
        auto released = store_.release_if(ip, [&](const ipam::Owner& o) { return o.matches(id, ifname); });
        if (released) records_.remove(ip.str());
        failures.add(released);
    }
    store_.flush();
    return failures.status();
}

std::vector<Reservations::Record> Reservations::records() {
    std::vector<Record> out;
    for (auto& name : records_.names()) {
        auto ip = net::IpAddr::parse(name);
        if (!ip || ip->str() != name) continue;
        if (auto text = records_.read_if_exists(name, kRecordLimit); text && *text)
            out.push_back(Record{*ip, ipam::Owner::parse(**text)});
    }
    std::ranges::sort(out, {}, &Record::ip);
    return out;
}

bool Reservations::reserved_to(const Record& r) {
    return r.owner.kind == ipam::OwnerKind::current && std::ranges::binary_search(store_.held_by(r.owner.id, r.owner.ifname), r.ip);
}

std::vector<net::IpAddr> Reservations::stale(const std::vector<net::Attachment>& valid_ones) {
    std::vector<net::IpAddr> out;
    for (auto& r : records())
        if (!valid(r.owner, valid_ones) && reserved_to(r)) out.push_back(r.ip);
    store_.flush();
    return out;
}

Status Reservations::release_stale(const std::vector<net::Attachment>& valid_ones) {
    Failures failures;
    for (auto& r : records()) {
        const bool reserved = reserved_to(r);
        if (reserved && valid(r.owner, valid_ones)) continue;
        if (reserved) {
            auto released = store_.release_if(r.ip, [&](const ipam::Owner& o) { return o.matches(r.owner.id, r.owner.ifname); });
            failures.add(released);
            if (!released) continue;
        }
        records_.remove(r.ip.str());  // released, or a record its reservation no longer backs
    }
    store_.flush();
    return failures.status("vpc-eni-ipam GC: ");
}

Result<std::optional<Reservations>> reservations_of(const Context& ctx) {
    CNI_TRY_ASSIGN(auto r, read_eni_ipam(ctx.req));
    auto node = load_configured_node_file(r.ipam.node_file);
    if (!node) {
        ctx.warn(node.error().msg + "; no reservation can be found");
        return std::optional<Reservations>{};
    }
    if (!plain_name(r.net.name)) return std::optional<Reservations>{};  // ADD refused it
    CNI_TRY_ASSIGN(auto held, Reservations::open(*node, r.net.name, ctx.warn));
    return std::optional<Reservations>(std::move(held));
}

Result<std::vector<net::IpAddr>> reserved_for(const Context& ctx) {
    CNI_TRY_ASSIGN(auto held, reservations_of(ctx));
    if (!held) return std::vector<net::IpAddr>{};
    return held->held(ctx.req.container_id, ctx.req.ifname);
}

Result<std::vector<net::IpAddr>> stale_addresses(const Context& ctx) {
    CNI_TRY_ASSIGN(auto r, read_eni_ipam(ctx.req));
    if (!r.net.valid_attachments) return std::vector<net::IpAddr>{};
    CNI_TRY_ASSIGN(auto held, reservations_of(ctx));
    if (!held) return std::vector<net::IpAddr>{};
    return held->stale(*r.net.valid_attachments);
}

}  // namespace cni::vpc_eni
