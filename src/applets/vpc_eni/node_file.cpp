// SPDX-License-Identifier: Apache-2.0
// Loading and validating the vpc-eni node file (see node_file.hpp).
#include "applets/vpc_eni/node_file.hpp"

#include <algorithm>
#include <bit>

#include "core/cni/json.hpp"
#include "core/cni/json_syntax.hpp"
#include "core/cni/request.hpp"
#include "core/ipam/store.hpp"
#include "core/os/fs.hpp"

namespace cni::vpc_eni {

net::IpAddr Eni::gateway() const { return subnet->network().next(); }

const Eni& NodeFile::primary() const {
    return *std::ranges::find_if(enis, [](const Eni& e) { return e.device_number == 0; });
}

bool Eni::holds(const net::IpAddr& ip) const {
    return std::ranges::find(secondary_ips, ip) != secondary_ips.end() ||
           std::ranges::any_of(ipv4_prefixes, [&](const net::IpNet& p) { return p.contains(ip); });
}

const Eni* NodeFile::eni_of(const net::IpAddr& ip) const {
    for (auto& e : enis)
        if (e.holds(ip)) return &e;
    return nullptr;
}

std::size_t NodeFile::address_count() const {
    std::size_t n = 0;
    for (auto& e : enis) n += e.secondary_ips.size() + e.ipv4_prefixes.size() * kPrefixAddresses;
    return n;
}

Status decode(const json::Value& v, Eni& out, const json::Where& w) {
    CNI_TRY(json::expect_object(v, w, "vpc.ENI"));
    return read_keys(v, kEniKeys, out, w.in("ENI"));
}

namespace {

constexpr std::string_view kConfiguredDir = "/etc/cni/";
constexpr std::string_view kDedicatedDir = "/etc/cni/vpc-eni/";  // its files need not be readable by all

std::string missing() { return "vpc-eni: nodeFile is missing: the node file describes the node's ENIs"; }
std::string in_file(const std::string& path) { return "vpc-eni: node file " + path + ": "; }
std::string absent(const std::string& path) { return "vpc-eni: node file " + path + " does not exist"; }

// The node file's secondary addresses (or its prefixes, by their first address), each once: a
// flat open-addressing table of pointers into the ENIs' lists, hashed by the address as a number. A node lists thousands, and this costs no allocation
// and no comparison per address beyond its own slot (a sort or std::unordered_set took a
// millisecond and more for 16,000), and 8 bytes a slot.
class AddressSet {
public:
    explicit AddressSet(std::size_t count) : slots_(std::bit_ceil(2 * count + 2)) {}
    bool insert(const net::IpAddr& ip, net::U128 value) {  // false when it is there already
        const std::size_t i = find(ip, value);
        if (slots_[i]) return false;
        slots_[i] = &ip;
        return true;
    }
    bool contains(const net::IpAddr& ip) const { return slots_[find(ip, ip.value())] != nullptr; }

private:
    // The slot holding `ip`, else the empty one where it would go.
    std::size_t find(const net::IpAddr& ip, net::U128 value) const {
        const std::size_t mask = slots_.size() - 1;
        std::size_t i = std::size_t(((std::uint64_t(value) ^ std::uint64_t(value >> 64)) * 0x9e3779b97f4a7c15ULL) >> 32) & mask;
        while (slots_[i] && *slots_[i] != ip) i = (i + 1) & mask;
        return i;
    }
    std::vector<const net::IpAddr*> slots_;
};

// The addresses of `net` as numbers: those under `mask` equal to `network`.
net::U128 mask_of(const net::IpNet& net) {
    const int ones = 128 - net.mask_bits + net.prefix;
    return ones == 0 ? net::U128(0) : ~net::U128(0) << (128 - ones);
}

// Why `dir` cannot be a stateDir or ipamDir, or "": node-setup marks it as the node's, and host-local
// refuses every store in a marked folder, so "/" or a folder holding the default store's would
// refuse every network that names no dataDir (docs/vpc-eni.md).
std::string unfit_folder(const std::string& dir) {
    if (!dir.starts_with("/")) return "is not an absolute path";
    if (os::has_dot_name(dir)) return "has \".\" or \"..\" in it";
    const auto names = os::path_names(dir);
    const auto store = os::path_names(ipam::kDefaultDataDir);
    if (names.size() <= store.size() && std::equal(names.begin(), names.end(), store.begin()))
        return "holds host-local's default store folder " + std::string(ipam::kDefaultDataDir) +
               ", which marking it as the node's would refuse; use a folder of its own";
    return "";
}

// The first ENI whose `list` holds `item`, as an error names it: "enis[K].<key>".
template <typename T>
std::string listed_in(const NodeFile& n, std::vector<T> Eni::*list, const T& item, std::string_view key) {
    for (std::size_t k = 0; k < n.enis.size(); ++k)
        if (std::ranges::find(n.enis[k].*list, item) != (n.enis[k].*list).end())
            return "enis[" + std::to_string(k) + "]." + std::string(key);
    return std::string(key);
}

// What of `subnet` a prefix (or one address, as a /32 or /128) may not hold: AWS reserves its
// first four addresses (the network's, the VPC router's, the DNS server's and one for later) and
// its last, in every subnet.
std::optional<net::IpAddr> reserved_in(const net::IpNet& prefix, const net::IpNet& subnet) {
    net::IpAddr a = subnet.network();
    for (int k = 0; k < 4; ++k, a = a.next())
        if (prefix.contains(a)) return a;
    if (prefix.contains(subnet.last())) return subnet.last();
    return std::nullopt;
}

std::string aws_reserves(const net::IpNet& subnet) {
    return "AWS reserves in subnet " + subnet.str() + " (its first four addresses and its last)";
}

// `ip` when it is one of the addresses AWS reserves in `subnet` (reserved_in).
std::optional<net::IpAddr> reserved_address(const net::IpAddr& ip, const net::IpNet& subnet) {
    return reserved_in(net::IpNet{ip, ip.bits(), ip.bits()}, subnet);
}

// The ENI whose primaryIp is `ip`, as an error names it: "enis[K]'s primaryIp", or "".
std::string primary_of(const NodeFile& n, const net::IpAddr& ip) {
    for (std::size_t k = 0; k < n.enis.size(); ++k)
        if (n.enis[k].primary_ip == ip) return "enis[" + std::to_string(k) + "]'s primaryIp";
    return "";
}

// Each ENI's ipv4Prefixes (docs/vpc-eni.md, Prefix mode): an IPv4 /28 with no host bits, in the
// ENI's subnet, holding neither the ENI's own address nor its gateway nor an address AWS
// reserves, nor any ENI's primary address or listed secondary address (all in `taken`), and no
// two overlapping (two /28s overlap only when they are one). A prefix costs 16 lookups in
// `taken` and one in its own table: linear in the addresses, once.
Status validate_prefixes(const NodeFile& n, const AddressSet& taken, const std::string& in) {
    std::size_t count = 0;
    for (auto& e : n.enis) count += e.ipv4_prefixes.size();
    if (count == 0) return {};
    AddressSet firsts(count);
    for (std::size_t i = 0; i < n.enis.size(); ++i) {
        const Eni& e = n.enis[i];
        for (auto& p : e.ipv4_prefixes) {
            const std::string at = in + "enis[" + std::to_string(i) + "]: ipv4Prefixes: " + p.str();
            if (!p.ip.is_v4() || p.mask_bits != 32 || p.prefix != kPrefixLength)
                return fail(at + " is not an IPv4 /28 (the prefixes AWS delegates)");
            if (p.ip != p.network()) return fail(at + " has host bits set: the prefix is " + p.masked().str());
            if (!e.subnet->contains(p.ip) || !e.subnet->contains(p.last())) return fail(at + " is not in subnet " + e.subnet->str());
            if (p.contains(*e.primary_ip)) return fail(at + " holds the ENI's own address " + e.primary_ip->str());
            if (p.contains(e.gateway())) return fail(at + " holds the ENI's gateway " + e.gateway().str());
            if (auto r = reserved_in(p, *e.subnet)) return fail(at + " holds " + r->str() + ", which " + aws_reserves(*e.subnet));
            if (!firsts.insert(p.ip, p.ip.value()))
                return fail(at + " is listed twice (also in " + listed_in(n, &Eni::ipv4_prefixes, p, "ipv4Prefixes") + ")");
            for (net::IpAddr a = p.ip;; a = a.next()) {
                if (taken.contains(a)) {
                    const std::string primary = primary_of(n, a);
                    return fail(at + " holds " + a.str() + ", " +
                                (primary.empty() ? "listed in " + listed_in(n, &Eni::secondary_ips, a, "secondaryIps") : primary));
                }
                if (a == p.last()) break;
            }
        }
    }
    return {};
}

Status validate(const NodeFile& n) {
    const std::string in = in_file(n.path);
    if (n.primary_interface.empty()) return fail(in + "primaryInterface is missing");
    if (auto st = validate_ifname(n.primary_interface); !st) return fail(in + "primaryInterface: " + st.error().msg);
    if (n.veth_prefix.empty() || n.veth_prefix.size() > 4 || !validate_ifname(n.veth_prefix))
        return fail(in + "vethPrefix \"" + n.veth_prefix + "\" must be 1 to 4 characters of an interface name");
    if (auto why = unfit_folder(n.state_dir); !why.empty()) return fail(in + "stateDir \"" + n.state_dir + "\" " + why);
    if (auto why = unfit_folder(n.ipam_dir); !why.empty()) return fail(in + "ipamDir \"" + n.ipam_dir + "\" " + why);
    if (n.vpc_cidrs.empty()) return fail(in + "vpcCidrs is missing");
    if (n.max_per_namespace < 0) return fail(in + "maxAddressesPerNamespace " + std::to_string(n.max_per_namespace) + " is negative");
    if (n.mtu < 576 || n.mtu > 9001) return fail(in + "mtu " + std::to_string(n.mtu) + " is not within 576..9001");
    // Every ENI's primary address first: no ENI's secondary or prefix address may be one of them.
    std::size_t addresses = n.enis.size();
    for (auto& e : n.enis) addresses += e.secondary_ips.size();
    AddressSet seen(addresses);
    for (std::size_t i = 0; i < n.enis.size(); ++i)
        if (const auto& ip = n.enis[i].primary_ip; ip && !seen.insert(*ip, ip->value()))
            return fail(in + "enis[" + std::to_string(i) + "]: primaryIp " + ip->str() + " is also " + primary_of(n, *ip));
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
        if (reserved_address(*e.primary_ip, *e.subnet))
            return fail(at + "primaryIp " + e.primary_ip->str() + " is an address " + aws_reserves(*e.subnet));
        for (std::size_t j = 0; j < i; ++j) {
            if (n.enis[j].device_number == e.device_number)
                return fail(at + "deviceNumber " + std::to_string(e.device_number) + " is also enis[" + std::to_string(j) + "]'s");
            if (n.enis[j].interface == e.interface) return fail(at + "interface " + e.interface + " is also enis[" + std::to_string(j) + "]'s");
        }
        const bool v4 = e.subnet->ip.is_v4();
        const net::U128 mask = mask_of(*e.subnet), network = e.subnet->ip.value() & mask;
        const net::U128 own = e.primary_ip->value(), gateway = e.gateway().value();
        for (auto& ip : e.secondary_ips) {
            const net::U128 v = ip.value();
            if (ip.is_v4() != v4 || (v & mask) != network)
                return fail(at + "secondaryIps: " + ip.str() + " is not in subnet " + e.subnet->str());
            if (v == own || v == gateway || !seen.insert(ip, v))
                return fail(at + "secondaryIps: " + ip.str() + " is listed twice, or is an ENI's primaryIp or its gateway");
            if (reserved_address(ip, *e.subnet))
                return fail(at + "secondaryIps: " + ip.str() + " is an address " + aws_reserves(*e.subnet));
        }
    }
    CNI_TRY(validate_prefixes(n, seen, in));
    auto primary = std::ranges::find_if(n.enis, [](const Eni& e) { return e.device_number == 0; });
    if (primary == n.enis.end()) return fail(in + "enis: no ENI has deviceNumber 0 (the primary ENI)");
    if (primary->interface != n.primary_interface)
        return fail(in + "primaryInterface " + n.primary_interface + " is not the interface of the ENI with deviceNumber 0 (" +
                    primary->interface + ")");
    return {};
}

// Where `offset` is in `text`: "line L, column C (byte B)", counted from 1 (B from 0).
std::string position(std::string_view text, std::size_t offset) {
    std::string_view before = text.substr(0, offset);
    const std::size_t line = std::size_t(std::ranges::count(before, '\n')) + 1;
    const std::size_t line_start = before.rfind('\n') == std::string_view::npos ? 0 : before.rfind('\n') + 1;
    return "line " + std::to_string(line) + ", column " + std::to_string(offset - line_start + 1) + " (byte " +
           std::to_string(offset) + ")";
}

constexpr const char* kRemovedNetworkCap = "maxAddressesPerNetwork";

// A key whose value does not decode: named with its place and what it should be, never with
// what the file holds there (a file named by a network config need not be one a tenant may read).
cni::Unexpected<Error> unreadable(const std::string& path, const std::string& at, const KeyDoc& doc) {
    return fail(in_file(path) + at + ": not a valid " + std::string(doc.type) + " (" + std::string(doc.doc) + ")");
}

// A key the file has that `keys` does not list, named (docs/vpc-eni.md promises the error) when
// it is a plain name of at most 64 letters, digits, '_' or '-', which any of the node file's keys
// is: a misspelling shows, and bytes of a file that is no node file do not.
template <class Keys>
Status unknown_keys(const std::string& path, const std::string& at, const json::Value& object, const Keys& keys) {
    for (auto m = object.MemberBegin(); m != object.MemberEnd(); ++m) {
        const std::string_view name(m->name.GetString(), m->name.GetStringLength());
        if (std::ranges::any_of(keys, [&](const auto& k) { return k.doc.key == name; })) continue;
        const bool plain = !name.empty() && name.size() <= 64 && std::ranges::all_of(name, [](char c) {
            return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        });
        return fail(in_file(path) + at + (plain ? "unknown key \"" + std::string(name) + "\"" : std::string("a key that is none of its keys")) +
                    " (cni-all vpc-eni --help and docs/vpc-eni.md list them)");
    }
    return {};
}

// The keys, each ENI's with its index: "enis[1].subnet".
Status read_node_keys(const std::string& path, const json::Value& doc, NodeFile& n) {
    // A cap counted by the network's name, which a config's writer chooses: a tenant naming its
    // network as the node's would fill the node network's count (docs/vpc-eni.md).
    if (json::find(doc, kRemovedNetworkCap))
        return fail(in_file(path) + kRemovedNetworkCap + " is no longer read: a network's name is its config writer's "
                    "choice, so a tenant's network of the node network's name would fill its count; use "
                    "maxAddressesPerNamespace (docs/vpc-eni.md)");
    CNI_TRY(unknown_keys(path, "", doc, kNodeFileKeys));
    const json::Where w{"NodeFile", ""};
    const KeyDoc* enis_doc = nullptr;
    for (auto& k : kNodeFileKeys) {
        if (k.doc.key == "enis") {
            enis_doc = &k.doc;
            continue;
        }
        if (!k.read(doc, k.doc.key, n, w)) return unreadable(path, std::string(k.doc.key), k.doc);
    }
    const json::Value* enis = json::find(doc, "enis");
    if (!enis || enis->IsNull()) return {};
    if (!enis->IsArray()) return unreadable(path, "enis", *enis_doc);
    for (std::size_t i = 0; i < enis->Size(); ++i) {
        const json::Value& e = (*enis)[rapidjson::SizeType(i)];
        const std::string at = "enis[" + std::to_string(i) + "]";
        Eni eni;
        if (!e.IsNull()) {
            if (!e.IsObject()) return unreadable(path, at, *enis_doc);
            CNI_TRY(unknown_keys(path, at + ": ", e, kEniKeys));
            for (auto& k : kEniKeys)
                if (!k.read(e, k.doc.key, eni, w.in("ENI"))) return unreadable(path, at + "." + std::string(k.doc.key), k.doc);
        }
        n.enis.push_back(std::move(eni));
    }
    return {};
}

}  // namespace

Result<NodeFile> parse_node_file(const std::string& path, std::string_view text, bool validated) {
    std::string buffer;  // the document's strings
    auto doc = json::parse_large(text, buffer);
    if (!doc) {
        auto error = json::find_syntax_error(text);
        return fail(code::decoding_failure,
                    in_file(path) + "not valid JSON" + (error ? " at " + position(text, error->offset) : std::string()));
    }
    if (!doc->IsObject()) return fail(code::decoding_failure, in_file(path) + "not a JSON object");
    NodeFile n;
    n.path = path;
    CNI_TRY(read_node_keys(path, *doc, n));
    if (validated) CNI_TRY(validate(n));
    return n;
}

Result<NodeFile> load_node_file(const std::string& path) {
    if (path.empty()) return fail(missing());
    CNI_TRY_ASSIGN(auto text, os::read_state_file(path, kNodeFileLimit));
    if (!text) return fail(absent(path));
    return parse_node_file(path, *text);
}

Result<std::optional<NodeFile>> load_node_settings(const std::string& path) {
    CNI_TRY_ASSIGN(auto text, os::read_state_file(path, kNodeFileLimit));
    if (!text) return std::optional<NodeFile>{};
    CNI_TRY_ASSIGN(auto n, parse_node_file(path, *text, false));
    return std::optional<NodeFile>{std::move(n)};
}

Status validate_node_file(const NodeFile& n) { return validate(n); }

std::string encode_node_file(const NodeFile& n) {
    json::Document d;
    d.SetObject();
    auto& a = d.GetAllocator();
    auto strings = [&](const auto& list) {
        json::Value out(rapidjson::kArrayType);
        for (auto& item : list) out.PushBack(json::str(item.str(), a), a);
        return out;
    };
    json::set(d, "primaryInterface", json::str(n.primary_interface, a), a);
    json::set(d, "vpcCidrs", strings(n.vpc_cidrs), a);
    json::set(d, "nodePortSupport", json::Value(n.node_port_support), a);
    json::set(d, "podEniSupport", json::Value(n.pod_eni_support), a);
    json::set(d, "mtu", json::Value(n.mtu), a);
    json::Value enis(rapidjson::kArrayType);
    for (auto& e : n.enis) {
        json::Value o(rapidjson::kObjectType);
        json::set(o, "interface", json::str(e.interface, a), a);
        json::set(o, "deviceNumber", json::Value(e.device_number), a);
        json::set(o, "subnet", json::str(e.subnet ? e.subnet->str() : "", a), a);
        json::set(o, "primaryIp", json::str(e.primary_ip ? e.primary_ip->str() : "", a), a);
        json::set(o, "secondaryIps", strings(e.secondary_ips), a);
        if (!e.ipv4_prefixes.empty()) json::set(o, "ipv4Prefixes", strings(e.ipv4_prefixes), a);
        enis.PushBack(std::move(o), a);
    }
    json::set(d, "enis", std::move(enis), a);
    json::set(d, "vethPrefix", json::str(n.veth_prefix, a), a);
    if (!n.firewall_backend.empty()) json::set(d, "firewallBackend", json::str(n.firewall_backend, a), a);
    json::set(d, "stateDir", json::str(n.state_dir, a), a);
    json::set(d, "ipamDir", json::str(n.ipam_dir, a), a);
    json::set(d, "maxAddressesPerNamespace", json::Value(n.max_per_namespace), a);
    return json::write(d, json::Style::indented, false) + "\n";
}

Result<NodeFile> load_configured_node_file(const std::string& path) {
    if (path.empty()) return fail(missing());
    // One refusal for every reason, so that it tells nothing about what is there.
    auto unusable = [&] {
        return fail("vpc-eni: nodeFile \"" + path + "\" is not a usable node file: a network config may name only a " +
                    "regular file under " + std::string(kConfiguredDir) + " that only root may write, in " +
                    std::string(kDedicatedDir) + " or readable by all (docs/vpc-eni.md)");
    };
    if (!path.starts_with(kConfiguredDir)) return unusable();
    const bool dedicated = path.starts_with(kDedicatedDir);
    auto text = os::read_trusted_file(path, kNodeFileLimit, !dedicated);
    if (!text || !*text) return unusable();
    return parse_node_file(path, **text);
}

}  // namespace cni::vpc_eni
