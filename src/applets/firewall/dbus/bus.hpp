// SPDX-License-Identifier: Apache-2.0
// A connection to a D-Bus message bus for method calls: the address (unix:path= or
// unix:abstract=, the first usable of a ;-separated list, %-escapes decoded), SASL EXTERNAL
// authentication with the caller's uid, Hello, then calls that wait for their own reply (and
// drop signals meanwhile) up to a deadline. One connection per plugin call, blocking, no
// threads: what the reference's godbus does for the firewall plugin, without the library.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "applets/firewall/dbus/message.hpp"
#include "core/os/unique_fd.hpp"
#include "core/result.hpp"

namespace cni::firewall::dbus {

inline constexpr const char* kDefaultSystemBus = "unix:path=/run/dbus/system_bus_socket";

// The socket address a bus address names: a path, or "@name" for an abstract socket.
Result<std::string> socket_of(std::string_view address);

class Bus {
public:
    // Connects and authenticates; `address` empty means the system bus's default.
    static Result<Bus> connect(std::string_view address,
                               std::chrono::milliseconds timeout = std::chrono::seconds(25));

    // The reply's body, or the D-Bus error as "<error name>: <message>" (code 999).
    Result<std::vector<Value>> call(const MethodCall& call);

    const std::string& address() const { return address_; }

private:
    Bus(os::UniqueFd fd, std::string address, std::chrono::milliseconds timeout)
        : fd_(std::move(fd)), address_(std::move(address)), timeout_(timeout) {}
    Status send(std::string_view bytes);
    Result<std::string> read_exact(std::size_t n);
    Result<std::string> read_line();
    Status authenticate();
    Result<Message> reply_to(std::uint32_t serial);

    os::UniqueFd fd_;
    std::string address_;
    std::chrono::milliseconds timeout_;
    std::chrono::steady_clock::time_point deadline_{};
    std::uint32_t next_serial_ = 1;
};

}  // namespace cni::firewall::dbus
