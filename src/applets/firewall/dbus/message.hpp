// SPDX-License-Identifier: Apache-2.0
// The D-Bus wire format, as much of it as a plugin needs to ask a system service something:
// method calls whose arguments are strings, and the replies (method returns and errors) whose
// values are strings, object paths, booleans or 32-bit integers. Messages are written
// little-endian and read in either byte order. No fd passing, no containers in bodies: a reply
// with other types keeps the values before the first one it cannot read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/result.hpp"

namespace cni::firewall::dbus {

enum class Type : std::uint8_t { method_call = 1, method_return = 2, error = 3, signal = 4 };

struct MethodCall {
    std::string destination, path, interface, member;
    std::vector<std::string> args;  // signature "s..."
};

using Value = std::variant<std::string, bool, std::uint32_t>;

struct Message {
    Type type = Type::signal;
    std::uint32_t serial = 0;
    std::optional<std::uint32_t> reply_serial;
    std::string error_name;  // for Type::error
    std::string signature;
    std::vector<Value> body;
};

std::string encode(const MethodCall& call, std::uint32_t serial);

// How many bytes the message starting with these 16 bytes takes in all; an error when the
// header is not one of a D-Bus message.
Result<std::size_t> message_size(std::string_view fixed_header);

// One whole message (message_size bytes).
Result<Message> decode(std::string_view bytes);

}  // namespace cni::firewall::dbus
