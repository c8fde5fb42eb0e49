// SPDX-License-Identifier: Apache-2.0
// Encoding of method calls and decoding of messages in the D-Bus wire format: a 16-byte fixed
// header (byte order, type, flags, version, body length, serial, header-field array length),
// the header fields as (code, variant) structs aligned to 8, padding to 8, then the body, each
// value aligned to its own size.
#include "applets/firewall/dbus/message.hpp"

namespace cni::firewall::dbus {
namespace {

constexpr std::size_t kMaxMessage = 1u << 20;  // far more than any reply a plugin asks for

enum Field : std::uint8_t { path = 1, interface = 2, member = 3, error_name = 4, reply_serial = 5, destination = 6, signature = 8 };

class Writer {
public:
    void align(std::size_t n) {
        while (out.size() % n) out.push_back('\0');
    }
    void u8(std::uint8_t v) { out.push_back(char(v)); }
    void u32(std::uint32_t v) {
        align(4);
        for (int i = 0; i < 4; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
    }
    void str(std::string_view s) {
        u32(std::uint32_t(s.size()));
        out.append(s);
        out.push_back('\0');
    }
    void sig(std::string_view s) {
        u8(std::uint8_t(s.size()));
        out.append(s);
        out.push_back('\0');
    }
    void field(Field code, char type, std::string_view value) {
        align(8);
        u8(code);
        sig(std::string_view(&type, 1));
        type == 'g' ? sig(value) : str(value);
    }
    std::string out;
};

class Reader {
public:
    Reader(std::string_view b, bool little) : b_(b), little_(little) {}
    std::size_t pos = 0;

    Status align(std::size_t n) {
        std::size_t to = (pos + n - 1) / n * n;
        if (to > b_.size()) return truncated();
        pos = to;
        return {};
    }
    Result<std::uint8_t> u8() {
        if (pos + 1 > b_.size()) return truncated();
        return std::uint8_t(b_[pos++]);
    }
    Result<std::uint32_t> u32() {
        CNI_TRY(align(4));
        if (pos + 4 > b_.size()) return truncated();
        std::uint32_t v = 0;
        for (int i = 0; i < 4; ++i) {
            auto byte = std::uint32_t(std::uint8_t(b_[pos + std::size_t(i)]));
            v |= little_ ? byte << (8 * i) : byte << (8 * (3 - i));
        }
        pos += 4;
        return v;
    }
    Result<std::string> str() {
        CNI_TRY_ASSIGN(auto n, u32());
        return bytes(n);
    }
    Result<std::string> sig() {
        CNI_TRY_ASSIGN(auto n, u8());
        return bytes(n);
    }

private:
    Result<std::string> bytes(std::size_t n) {
        if (pos + n + 1 > b_.size() || b_[pos + n] != '\0') return truncated();
        std::string s(b_.substr(pos, n));
        pos += n + 1;
        return s;
    }
    static cni::Unexpected<Error> truncated() { return fail("D-Bus: truncated or malformed message"); }
    std::string_view b_;
    bool little_;
};

std::uint32_t fixed_u32(std::string_view b, std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) {
        auto byte = std::uint32_t(std::uint8_t(b[at + i]));
        v |= b[0] == 'l' ? byte << (8 * i) : byte << (8 * (3 - i));
    }
    return v;
}

}  // namespace

std::string encode(const MethodCall& call, std::uint32_t serial) {
    Writer body;
    std::string signature;
    for (auto& a : call.args) {
        body.str(a);
        signature += 's';
    }
    Writer w;
    w.u8('l');
    w.u8(std::uint8_t(Type::method_call));
    w.u8(0);  // flags: a reply is expected
    w.u8(1);  // protocol version
    w.u32(std::uint32_t(body.out.size()));
    w.u32(serial);
    w.u32(0);  // the header fields' length, set below
    w.field(path, 'o', call.path);
    if (!call.interface.empty()) w.field(interface, 's', call.interface);
    w.field(member, 's', call.member);
    w.field(destination, 's', call.destination);
    if (!signature.empty()) w.field(Field::signature, 'g', signature);
    auto fields_len = std::uint32_t(w.out.size() - 16);
    for (int i = 0; i < 4; ++i) w.out[std::size_t(12 + i)] = char((fields_len >> (8 * i)) & 0xff);
    w.align(8);
    return w.out + body.out;
}

Result<std::size_t> message_size(std::string_view h) {
    if (h.size() < 16 || (h[0] != 'l' && h[0] != 'B') || h[3] != 1) return fail("D-Bus: not a D-Bus message");
    std::size_t fields = fixed_u32(h, 12), body = fixed_u32(h, 4);
    std::size_t total = 16 + (fields + 7) / 8 * 8 + body;
    if (fields > kMaxMessage || body > kMaxMessage || total > kMaxMessage)
        return fail("D-Bus: message of " + std::to_string(total) + " bytes is too large");
    return total;
}

Result<Message> decode(std::string_view b) {
    CNI_TRY_ASSIGN(auto size, message_size(b));
    if (b.size() != size) return fail("D-Bus: truncated or malformed message");
    Message m;
    auto type = std::uint8_t(b[1]);
    if (type < 1 || type > 4) return fail("D-Bus: unknown message type " + std::to_string(type));
    m.type = Type(type);
    m.serial = fixed_u32(b, 8);
    Reader r(b, b[0] == 'l');
    r.pos = 16;
    const std::size_t fields_end = 16 + fixed_u32(b, 12);
    while (r.pos < fields_end) {
        CNI_TRY(r.align(8));
        CNI_TRY_ASSIGN(auto code, r.u8());
        CNI_TRY_ASSIGN(auto sig, r.sig());
        const char t = sig.size() == 1 ? sig[0] : '?';
        if (t == 's' || t == 'o') {
            CNI_TRY_ASSIGN(auto v, r.str());
            if (code == error_name) m.error_name = std::move(v);
        } else if (t == 'u') {
            CNI_TRY_ASSIGN(auto v, r.u32());
            if (code == reply_serial) m.reply_serial = v;
        } else if (t == 'g') {
            CNI_TRY_ASSIGN(auto v, r.sig());
            if (code == signature) m.signature = std::move(v);
        } else {
            return fail("D-Bus: header field " + std::to_string(code) + " of unexpected type " + sig);
        }
    }
    r.pos = fields_end;
    CNI_TRY(r.align(8));
    for (char t : m.signature) {
        if (t == 's' || t == 'o') {
            CNI_TRY_ASSIGN(auto v, r.str());
            m.body.emplace_back(std::move(v));
        } else if (t == 'b' || t == 'u') {
            CNI_TRY_ASSIGN(auto v, r.u32());
            if (t == 'b') m.body.emplace_back(v != 0);
            else m.body.emplace_back(v);
        } else {
            break;  // a type this reader does not know: keep what came before it
        }
    }
    return m;
}

}  // namespace cni::firewall::dbus
