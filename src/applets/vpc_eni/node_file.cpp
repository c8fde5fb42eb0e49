// SPDX-License-Identifier: Apache-2.0
// Loading and validating the vpc-eni node file (see node_file.hpp).
#include "applets/vpc_eni/node_file.hpp"

#include <algorithm>

#include "core/cni/request.hpp"
#include "core/os/fs.hpp"

namespace cni::vpc {

IpAddr Eni::gateway() const { return subnet->network().next(); }

const Eni& NodeFile::primary() const {
    return *std::ranges::find_if(enis, [](const Eni& e) { return e.device_number == 0; });
}

const Eni* NodeFile::eni_of(const IpAddr& ip) const {
    for (auto& e : enis)
        if (std::ranges::find(e.secondary_ips, ip) != e.secondary_ips.end()) return &e;
    return nullptr;
}

Status decode(const json::Value& v, Eni& out, const json::Where& w) {
    CNI_TRY(json::expect_object(v, w, "vpc.ENI"));
    return read_keys(v, kEniKeys, out, w.in("ENI"));
}

namespace {

Status validate(const NodeFile& n) {
    const std::string in = "vpc-eni: node file " + n.path + ": ";
    if (n.primary_interface.empty()) return fail(in + "primaryInterface is missing");
    if (auto st = validate_ifname(n.primary_interface); !st) return fail(in + "primaryInterface: " + st.error().msg);
    if (n.veth_prefix.empty() || n.veth_prefix.size() > 4 || !validate_ifname(n.veth_prefix))
        return fail(in + "vethPrefix \"" + n.veth_prefix + "\" must be 1 to 4 characters of an interface name");
    if (!n.state_dir.starts_with("/")) return fail(in + "stateDir \"" + n.state_dir + "\" is not an absolute path");
    if (n.vpc_cidrs.empty()) return fail(in + "vpcCidrs is missing");
    if (n.mtu < 576 || n.mtu > 9001) return fail(in + "mtu " + std::to_string(n.mtu) + " is not within 576..9001");
    std::vector<IpAddr> seen;
    for (std::size_t i = 0; i < n.enis.size(); ++i) {
        const Eni& e = n.enis[i];
        const std::string at = in + "enis[" + std::to_string(i) + "]: ";
        if (e.interface.empty()) return fail(at + "interface is missing");
        if (auto st = validate_ifname(e.interface); !st) return fail(at + "interface: " + st.error().msg);
        if (e.device_number < 0 || e.device_number > 250)
            return fail(at + "deviceNumber " + std::to_string(e.device_number) + " is not within 0..250");
        if (!e.subnet) return fail(at + "subnet is missing");
        if (!e.primary_ip) return fail(at + "primaryIp is missing");
        if (!e.subnet->contains(*e.primary_ip))
            return fail(at + "primaryIp " + e.primary_ip->str() + " is not in subnet " + e.subnet->str());
        for (std::size_t j = 0; j < i; ++j) {
            if (n.enis[j].device_number == e.device_number)
                return fail(at + "deviceNumber " + std::to_string(e.device_number) + " is also enis[" + std::to_string(j) + "]'s");
            if (n.enis[j].interface == e.interface) return fail(at + "interface " + e.interface + " is also enis[" + std::to_string(j) + "]'s");
        }
        for (auto& ip : e.secondary_ips) {
            if (!e.subnet->contains(ip)) return fail(at + "secondaryIps: " + ip.str() + " is not in subnet " + e.subnet->str());
            if (ip == *e.primary_ip || ip == e.gateway() || std::ranges::find(seen, ip) != seen.end())
                return fail(at + "secondaryIps: " + ip.str() + " is listed twice, or is the ENI's own address or its gateway");
            seen.push_back(ip);
        }
    }
    auto primary = std::ranges::find_if(n.enis, [](const Eni& e) { return e.device_number == 0; });
    if (primary == n.enis.end()) return fail(in + "enis: no ENI has deviceNumber 0 (the primary ENI)");
    if (primary->interface != n.primary_interface)
        return fail(in + "primaryInterface " + n.primary_interface + " is not the interface of the ENI with deviceNumber 0 (" +
                    primary->interface + ")");
    return {};
}

}  // namespace

Result<NodeFile> load_node_file(const std::string& path) {
    if (path.empty()) return fail("vpc-eni: nodeFile is missing: the node file describes the node's ENIs");
    CNI_TRY_ASSIGN(auto text, os::read_state_file(path));
    if (!text) return fail("vpc-eni: node file " + path + " does not exist");
    CNI_TRY_ASSIGN(auto doc, json::parse(*text));
    NodeFile n;
    n.path = path;
    json::Where w{"NodeFile", "", "vpc-eni: node file " + path + ": "};
    CNI_TRY(json::expect_object(doc, w, "vpc.NodeFile"));
    CNI_TRY(read_keys(doc, kNodeFileKeys, n, w));
    CNI_TRY(validate(n));
    return n;
}

}  // namespace cni::vpc
