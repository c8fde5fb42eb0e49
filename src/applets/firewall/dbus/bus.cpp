// SPDX-License-Identifier: Apache-2.0
// The bus connection: address parsing, connect, the SASL handshake (a NUL byte, "AUTH EXTERNAL
// <uid in hex>", "OK <guid>", "BEGIN"), Hello, and calls matched to their replies by serial,
// every read bounded by the call's deadline.
#include "applets/firewall/dbus/bus.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>

#include "core/os/errno_error.hpp"
#include "core/os/unix_socket.hpp"

namespace cni::firewall::dbus {
namespace {

std::string unescape(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
            std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
            out.push_back(char(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
            i += 2;
        } else {
            out.push_back(s[i]);
        }
    }
    return out;
}

std::string hex(std::string_view s) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    for (unsigned char c : s) {
        out.push_back(kDigits[c >> 4]);
        out.push_back(kDigits[c & 15]);
    }
    return out;
}

}  // namespace

Result<std::string> socket_of(std::string_view address) {
    std::string_view rest = address;
    while (!rest.empty()) {
        auto end = rest.find(';');
        std::string_view one = rest.substr(0, end);
        rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end + 1);
        if (!one.starts_with("unix:")) continue;
        std::string_view keys = one.substr(5);
        while (!keys.empty()) {
            auto comma = keys.find(',');
            std::string_view kv = keys.substr(0, comma);
            keys = comma == std::string_view::npos ? std::string_view{} : keys.substr(comma + 1);
            if (kv.starts_with("path=")) return unescape(kv.substr(5));
            if (kv.starts_with("abstract=")) return "@" + unescape(kv.substr(9));
        }
    }
    return fail("D-Bus address \"" + std::string(address) + "\" names no unix socket (path= or abstract=)");
}

Result<Bus> Bus::connect(std::string_view address, std::chrono::milliseconds timeout) {
    std::string addr(address.empty() ? kDefaultSystemBus : address);
    CNI_TRY_ASSIGN(auto where, socket_of(addr));
    auto fd = os::connect_unix(where);
    if (!fd) return fail("D-Bus: cannot connect to " + addr + ": " + os::errno_text(fd.error()));
    Bus bus(std::move(*fd), addr, timeout);
    bus.deadline_ = std::chrono::steady_clock::now() + timeout;
    CNI_TRY(bus.authenticate());
    CNI_TRY(bus.call({"org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "Hello", {}}));
    return bus;
}

Status Bus::send(std::string_view bytes) {
    if (int err = os::send_all(fd_.get(), bytes)) return fail("D-Bus: writing to " + address_ + ": " + os::errno_text(err));
    return {};
}

Result<std::string> Bus::read_exact(std::size_t n) {
    std::string out(n, '\0');
    std::size_t got = 0;
    while (got < n) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - std::chrono::steady_clock::now());
        pollfd p{fd_.get(), POLLIN, 0};
        int r = left.count() > 0 ? ::poll(&p, 1, int(left.count())) : 0;
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return fail("D-Bus: waiting for " + address_ + ": " + os::errno_text(errno));
        if (r == 0) return fail("D-Bus: no reply from " + address_ + " within " + std::to_string(timeout_.count()) + " ms");
        ssize_t k = ::read(fd_.get(), out.data() + got, n - got);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return fail("D-Bus: reading from " + address_ + ": " + os::errno_text(errno));
        if (k == 0) return fail("D-Bus: " + address_ + " closed the connection");
        got += std::size_t(k);
    }
    return out;
}

Result<std::string> Bus::read_line() {
    std::string line;
    while (!line.ends_with("\r\n")) {
        if (line.size() > 4096) return fail("D-Bus: overlong authentication reply from " + address_);
        CNI_TRY_ASSIGN(auto c, read_exact(1));
        line += c;
    }
    line.resize(line.size() - 2);
    return line;
}

Status Bus::authenticate() {
    CNI_TRY(send(std::string_view("\0", 1)));
    CNI_TRY(send("AUTH EXTERNAL " + hex(std::to_string(::geteuid())) + "\r\n"));
    CNI_TRY_ASSIGN(auto answer, read_line());
    if (!answer.starts_with("OK ")) return fail("D-Bus: " + address_ + " refused authentication: " + answer);
    return send("BEGIN\r\n");
}

Result<Message> Bus::reply_to(std::uint32_t serial) {
    for (;;) {
        CNI_TRY_ASSIGN(auto head, read_exact(16));
        CNI_TRY_ASSIGN(auto size, message_size(head));
        CNI_TRY_ASSIGN(auto rest, read_exact(size - 16));
        CNI_TRY_ASSIGN(auto m, decode(head + rest));
        if ((m.type == Type::method_return || m.type == Type::error) && m.reply_serial == serial) return m;
    }
}

Result<std::vector<Value>> Bus::call(const MethodCall& c) {
    deadline_ = std::chrono::steady_clock::now() + timeout_;
    std::uint32_t serial = next_serial_++;
    CNI_TRY(send(encode(c, serial)));
    CNI_TRY_ASSIGN(auto m, reply_to(serial));
    if (m.type == Type::error) {
        std::string text = m.error_name;
        if (!m.body.empty())
            if (auto* s = std::get_if<std::string>(&m.body[0])) text += ": " + *s;
        return fail(text);
    }
    return std::move(m.body);
}

}  // namespace cni::firewall::dbus
