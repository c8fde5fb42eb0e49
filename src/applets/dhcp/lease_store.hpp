// SPDX-License-Identifier: Apache-2.0
// The daemon's leases on disk (beyond the reference, which keeps them in memory only and so
// stops renewing every pod's address when it restarts: plugins #235/#767). One JSON file per
// attachment under the lease directory (default /run/cni/dhcp: tmpfs, so a reboot - which also
// ends every pod - starts clean), written atomically after every ACK and removed on release.
// A record holds what is needed to resume: the attachment's identity and netns, the plugin
// config (for the options), CNI_ARGS, and the last ACK with the server's link address. A DHCPv6
// lease is a record of its own (its file named from the key and "ipv6"), holding the last REPLY,
// the IAID and the pod's address (and the REPLY to an Information-request, when one was sent), so
// a dual-stack attachment's two lease threads never write one file. A lease that moved to another
// address than the one its ADD gave the pod also holds that one ("given"), so a restarted daemon's
// CHECK still fails.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "applets/dhcp/client.hpp"
#include "applets/dhcp/client6.hpp"

namespace cni::dhcp {

struct LeaseRecord {
    std::string key;  // containerID/netName/ifName
    std::string container_id, net_name, ifname, netns, config, args;
    Lease lease;
    bool v6 = false;  // which of the two leases the record holds: lease or lease6
    Lease6 lease6;
    std::optional<net::IpAddr> given = std::nullopt;  // the pod's address, when the lease moved from it
};

inline void put_lease(LeaseRecord& r, const Lease& l) { r.lease = l; }
inline void put_lease(LeaseRecord& r, const Lease6& l) {
    r.v6 = true;
    r.lease6 = l;
}

class LeaseStore {
public:
    explicit LeaseStore(std::string dir) : dir_(std::move(dir)) {}
    Status save(const LeaseRecord& r) const;
    void remove(const std::string& key) const;  // both leases of the attachment
    // Every readable record; unreadable files are reported through `bad` and removed.
    std::vector<LeaseRecord> load_all(const std::function<void(const std::string&)>& bad) const;
    const std::string& dir() const { return dir_; }

private:
    std::string path_for(const std::string& key, bool v6) const;
    std::string dir_;
};

std::string encode_record(const LeaseRecord& r);
// Refuses a record whose boundAt is before 1970 or after 2099.
Result<LeaseRecord> decode_record(std::string_view text);

}  // namespace cni::dhcp
