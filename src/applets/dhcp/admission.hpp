// SPDX-License-Identifier: Apache-2.0
// How many requests the dhcp daemon serves at once (docs/dhcp.md: Limits). At most
// kMaxConnections connections; of them at most kMaxAcquisitions ADDs waiting for a lease (one
// against a silent or absent server waits up to -resendtimeout, 208 s by default), and at most
// kMaxAcquisitionsPerNetwork of one network's (its name). An ADD past either bound is answered at
// once with code 11 (try again later), so a network whose server is down, or many networks, leave
// kReservedConnections to DEL, CHECK, GC and STATUS, and room to other networks' ADDs. The bounds
// are fixed: nothing a network config says moves them.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "core/result.hpp"

namespace cni::dhcp {

inline constexpr int kMaxConnections = 64;
inline constexpr int kReservedConnections = 16;
inline constexpr int kMaxAcquisitions = kMaxConnections - kReservedConnections;
inline constexpr int kMaxAcquisitionsPerNetwork = 8;

class Acquisitions {
public:
    // One ADD's place, given back when the ticket goes.
    class Ticket {
    public:
        Ticket(Ticket&& o) noexcept : owner_(std::exchange(o.owner_, nullptr)), network_(std::move(o.network_)) {}
        Ticket& operator=(Ticket&&) = delete;
        ~Ticket() {
            if (owner_) owner_->leave(network_);
        }

    private:
        friend class Acquisitions;
        Ticket(Acquisitions* owner, std::string network) : owner_(owner), network_(std::move(network)) {}
        Acquisitions* owner_;
        std::string network_;
    };

    // A place for an ADD of `network`, or code 11 saying which bound it met ("8 ADDs of network ...").
    Result<Ticket> admit(const std::string& network);

private:
    void leave(const std::string& network);

    std::mutex mu_;
    int total_ = 0;
    std::map<std::string, int, std::less<>> per_network_;  // only networks with a place held
};

}  // namespace cni::dhcp
