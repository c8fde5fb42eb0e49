// SPDX-License-Identifier: Apache-2.0
// host-device (docs/compatibility.md: host-device): moves an existing host link into the container
// as CNI_IFNAME, found by `device`, `hwaddr`, `kernelpath` (/sys/devices/...), `pciBusID` or
// runtimeConfig `deviceID` (a PCI address, else an auxiliary-bus device). The rename happens in a
// temporary namespace so it cannot clash with names on either side; the original name is kept in
// the link's alias. A PCI device bound to vfio-pci/uio_pci_generic/igb_uio is a DPDK device:
// nothing moves and the result only names it. Optional IPAM; dns always replaced. A failed ADD
// brings the device back; DEL releases IPAM (also with an empty CNI_NETNS, which the reference
// skips) and moves the device back under its original name.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "core/applet.hpp"
#include "core/cni/netconf.hpp"
#include "core/iface/check.hpp"
#include "core/iface/configure.hpp"
#include "core/iface/link_result.hpp"
#include "core/iface/sockets.hpp"
#include "core/ipam/delegate.hpp"
#include "core/net/mac.hpp"
#include "core/nl/link.hpp"
#include "core/rollback.hpp"
#include "core/strings.hpp"

namespace cni::host_device {
namespace {

constexpr const char* kSysBusPci = "/sys/bus/pci/devices/";
constexpr const char* kSysBusAux = "/sys/bus/auxiliary/devices/";

struct HostDeviceConf {
    NetConf net;
    std::string device, hwaddr, kernelpath, pci_bus_id, aux_device;
    bool dpdk = false;
};

bool exists(const std::string& path) {
    struct stat st{};
    return ::lstat(path.c_str(), &st) == 0;
}

// The entries of a directory, sorted (Go os.ReadDir).
std::vector<std::string> list_dir(const std::string& dir) {
    std::vector<std::string> out;
    std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
    if (!d) return out;
    while (dirent* e = ::readdir(d.get()))
        if (std::string_view(e->d_name) != "." && std::string_view(e->d_name) != "..") out.emplace_back(e->d_name);
    std::sort(out.begin(), out.end());
    return out;
}

// The driver a PCI device is bound to ("" if none).
std::string pci_driver(const std::string& address) {
    char buf[4096];
    ssize_t n = ::readlink((kSysBusPci + address + "/driver").c_str(), buf, sizeof buf - 1);
    if (n <= 0) return "";
    std::string target(buf, std::size_t(n));
    return target.substr(target.rfind('/') + 1);
}

constexpr std::array kHostDeviceKeys{
    key<&HostDeviceConf::device>("device", "the host link's name"),
    key<&HostDeviceConf::hwaddr>("hwaddr", "the host link's MAC"),
    key<&HostDeviceConf::kernelpath>("kernelpath", "the device's /sys/devices/... path"),
    key<&HostDeviceConf::pci_bus_id>("pciBusID", "the PCI address (also runtimeConfig deviceID, PCI or auxiliary)"),
    key<&HostDeviceConf::dpdk>("DPDKMode", "set from the PCI device's driver; a DPDK-bound device is only named, not moved"),
};

Result<HostDeviceConf> parse_host_device_conf(const Request& req) {
    CNI_TRY_ASSIGN(auto c, load_config(req.config, kHostDeviceKeys));
    const json::Value& root = c.net.root();
    const json::Where& w = c.net.where;
    std::string device_id;
    CNI_TRY_ASSIGN(auto rc, json::anonymous_struct(root, "runtimeConfig", w,
                                                   R"(struct { DeviceID string "json:\"deviceID,omitempty\"" })"));
    if (rc.object) CNI_TRY(json::field(*rc.object, "deviceID", device_id, rc.inner));
    // Both name an entry of a sysfs bus directory: a path ("../../..") would look elsewhere.
    for (auto [key, value] : {std::pair{"runtime config DeviceID", &device_id}, std::pair{"pciBusID", &c.pci_bus_id}})
        if (!value->empty() && (value->find('/') != std::string::npos || *value == "." || *value == ".."))
            return fail(code::invalid_config, std::string(key) + " " + go_quote(*value) + " is not a device name");
    if (c.kernelpath.find("/../") != std::string::npos || c.kernelpath.ends_with("/.."))
        return fail(code::invalid_config, "kernel device path " + go_quote(c.kernelpath) + " must not contain \"..\"");
    if (!device_id.empty()) {
        if (exists(kSysBusPci + device_id)) c.pci_bus_id = device_id;
        else if (exists(kSysBusAux + device_id)) c.aux_device = device_id;
        else return fail("runtime config DeviceID " + device_id + " not found or unsupported");
    }
    if (!c.pci_bus_id.empty()) {
        std::string driver = pci_driver(c.pci_bus_id);
        c.dpdk = driver == "vfio-pci" || driver == "uio_pci_generic" || driver == "igb_uio";
    }
    if (c.device.empty() && c.hwaddr.empty() && c.kernelpath.empty() && c.pci_bus_id.empty() && c.aux_device.empty())
        return fail("specify either \"device\", \"hwaddr\", \"kernelpath\" or \"pciBusID\"");
    return c;
}

// The first link named in a sysfs "net" directory.
Result<nl::LinkInfo> first_link_in(const nl::Socket& host, const std::string& net_dir) {
    auto names = list_dir(net_dir);
    for (auto& name : names) {
        CNI_TRY_ASSIGN(auto link, nl::find_link(host, name));
        if (link) return *link;
    }
    return fail("failed to find network devices at \"" + net_dir + "\"");
}

Result<nl::LinkInfo> find_device(const nl::Socket& host, const HostDeviceConf& c) {
    if (!c.device.empty()) {
        CNI_TRY_ASSIGN(auto link, nl::find_link(host, c.device));
        if (!link) return fail("failed to find host device: Link not found");
        return *link;
    }
    if (!c.hwaddr.empty()) {
        auto mac = net::parse_mac(c.hwaddr);
        if (!mac) return fail("failed to parse MAC address \"" + c.hwaddr + "\"");
        CNI_TRY_ASSIGN(auto link, nl::find_link_by_mac(host, *mac));
        if (!link) return fail("failed to find host device: failed to find physical interface");
        return *link;
    }
    if (!c.kernelpath.empty()) {
        if (c.kernelpath.front() != '/' || !c.kernelpath.starts_with("/sys/devices/"))
            return fail("kernel device path \"" + c.kernelpath + "\" must be absolute and begin with /sys/devices/");
        return first_link_in(host, c.kernelpath + "/net");
    }
    if (!c.pci_bus_id.empty()) {
        std::string net_dir = kSysBusPci + c.pci_bus_id + "/net";
        if (!exists(net_dir)) {
            for (auto& entry : list_dir(kSysBusPci + c.pci_bus_id))
                if (entry.starts_with("virtio") && exists(kSysBusPci + c.pci_bus_id + "/" + entry + "/net")) {
                    net_dir = kSysBusPci + c.pci_bus_id + "/" + entry + "/net";
                    break;
                }
            if (!exists(net_dir)) return fail("no net directory under pci device " + c.pci_bus_id);
        }
        return first_link_in(host, net_dir);
    }
    return first_link_in(host, kSysBusAux + c.aux_device + "/net");
}

// Move `link` from the socket's namespace through a temporary namespace, renamed `to` and with
// alias `alias`, into `target`; returns the socket-side steps' undo through the caller.
Status move_renamed(const nl::Socket& from, const nl::LinkInfo& link, const std::string& to, const std::string& alias,
                    const os::Netns& target) {
    if (link.up()) CNI_TRY(nl::set_link_up(from, link, false));  // a link is renamed only while down
    CNI_TRY_ASSIGN(auto temp, os::Netns::create_anonymous());
    if (auto st = nl::move_link(from, link, temp.fd()); !st)
        return fail("failed to move \"" + link.name + "\" to tmp netns: " + st.error().msg);
    CNI_TRY_ASSIGN(auto ts, nl::Socket::open_in(temp));
    CNI_TRY_ASSIGN(auto parked, nl::require_link(ts, link.name));
    auto back = [&] { (void)nl::move_link(ts, parked, os::Netns::current()->fd()); };
    if (to != link.name)
        if (auto st = nl::rename_link(ts, parked, to); !st) {
            back();
            return fail("failed to rename device \"" + link.name + "\" to \"" + to + "\": " + st.error().msg);
        }
    CNI_TRY_ASSIGN(parked, nl::require_link(ts, to));
    CNI_TRY(nl::set_alias(ts, parked, alias));
    if (auto st = nl::move_link(ts, parked, target.fd()); !st) {
        (void)nl::rename_link(ts, parked, link.name);
        CNI_TRY_ASSIGN(parked, nl::require_link(ts, link.name));
        back();
        return fail("failed to move \"" + to + "\" to container ns: " + st.error().msg);
    }
    return {};
}

Result<CniResult> host_device_add(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_host_device_conf(ctx.req));
    const Request& r = ctx.req;
    CNI_TRY_ASSIGN(auto io, iface::open_host_and_container(ctx));
    if (c.dpdk) {  // the device stays where it is
        CniResult result;
        result.interfaces = {iface::container_interface(r, "")};
        return result;
    }
    CNI_TRY_ASSIGN(auto device, find_device(io.host, c));
    CNI_TRY(move_renamed(io.host, device, r.ifname, device.name, io.ns));
    Rollback undo;
    undo.push([&] {
        if (auto moved = nl::find_link(io.container, r.ifname); moved && *moved)
            (void)move_renamed(io.container, **moved, device.name, "", io.host_ns);
        if (device.up())
            if (auto again = nl::find_link(io.host, device.name); again && *again) (void)nl::set_link_up(io.host, **again, true);
    });
    CNI_TRY_ASSIGN(auto link, nl::require_link(io.container, r.ifname));
    if (auto st = nl::set_link_up(io.container, link, true); !st) return fail("failed to set \"" + r.ifname + "\" up: " + st.error().msg);
    CNI_TRY_ASSIGN(auto result, iface::link_result(ctx, link, c.net.ipam_type, undo));
    if (!c.net.ipam_type.empty()) CNI_TRY(iface::configure_iface(io.container, io.ns, r.ifname, result));
    result.dns = c.net.dns;
    undo.dismiss();
    return result;
}

Status host_device_del(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_host_device_conf(ctx.req));
    const Request& r = ctx.req;
    if (!c.net.ipam_type.empty()) CNI_TRY(ipam::delegate_del(ctx, c.net.ipam_type, r.config));
    if (c.dpdk) return {};
    CNI_TRY_ASSIGN(auto io, iface::open_container_if_exists(ctx));
    if (!io) return {};
    CNI_TRY_ASSIGN(auto link, nl::find_link(io->container, r.ifname));
    if (!link) return {};
    if (link->alias.empty()) return fail("failed to find the host device name of \"" + r.ifname + "\": its alias is empty");
    CNI_TRY_ASSIGN(auto host_ns, os::Netns::current());
    return move_renamed(io->container, *link, link->alias, "", host_ns);
}

Status host_device_check(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, parse_host_device_conf(ctx.req));
    CNI_TRY(ipam::check_of_optional_ipam(ctx, c.net.ipam_type));
    CNI_TRY_ASSIGN(auto prev, require_prev_result(c.net, "Required prevResult missing"));
    if (c.dpdk) return {};
    CNI_TRY_ASSIGN(auto io, iface::open_container(ctx));
    CNI_TRY(iface::check_interface(io.container, ctx.req, prev, {""}));  // a moved device's kind is its own
    return {};
}

constexpr auto kHostDeviceKeysDocs = docs_of(kHostDeviceKeys);

}  // namespace

extern const Applet host_device_applet{
    .name = "host-device",
    .kind = AppletKind::main,
    .summary = "move an existing host link into the container",
    .keys = kHostDeviceKeysDocs,
    .help = "Moves an existing host link (one of the keys names it) into the container, renamed CNI_IFNAME. ipam is "
            "optional; dns replaces the result's.",
    .versions = kAllVersions,
    .add = host_device_add,
    .del = host_device_del,
    .check = host_device_check,
    .status = ipam::status_of_optional<parse_host_device_conf>,
};

}  // namespace cni::host_device
