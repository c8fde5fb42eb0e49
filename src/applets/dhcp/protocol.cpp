// SPDX-License-Identifier: Apache-2.0
// The applet <-> daemon wire format and the client call (see protocol.hpp).
#include "applets/dhcp/protocol.hpp"

#include <sys/socket.h>


#include "core/cni/request.hpp"
#include "core/os/errno_error.hpp"
#include "core/os/unique_fd.hpp"
#include "core/os/unix_socket.hpp"

namespace cni::dhcp {
namespace {

constexpr std::pair<Op, std::string_view> kOpNames[] = {
    {Op::add, "add"}, {Op::del, "del"}, {Op::check, "check"}, {Op::gc, "gc"}, {Op::status, "status"},
};

std::string_view op_name(Op op) {
    for (auto& [o, n] : kOpNames)
        if (o == op) return n;
    return "";
}

}  // namespace

std::string encode_request(const DaemonRequest& r) {
    json::Document d(rapidjson::kObjectType);
    auto& a = d.GetAllocator();
    json::set(d, "op", json::str(op_name(r.op), a), a);
    json::set(d, "containerID", json::str(r.container_id, a), a);
    json::set(d, "netns", json::str(r.netns, a), a);
    json::set(d, "ifName", json::str(r.ifname, a), a);
    json::set(d, "args", json::str(r.args, a), a);
    json::set(d, "path", json::str(r.path, a), a);
    json::set(d, "config", json::str(r.config, a), a);
    return json::write(d, json::Style::compact, false);
}

Result<DaemonRequest> decode_request(std::string_view text) {
    auto d = json::parse(text);
    if (!d) return fail(code::decoding_failure, "dhcp daemon: malformed request: " + d.error().msg);
    if (!d->IsObject()) return fail(code::decoding_failure, "dhcp daemon: malformed request: not a JSON object");
    DaemonRequest r;
    json::Where w{"DaemonRequest", ""};
    std::string op;
    CNI_TRY(json::field(*d, "op", op, w));
    bool known = false;
    for (auto& [o, n] : kOpNames)
        if (n == op) r.op = o, known = true;
    if (!known) return fail(code::decoding_failure, "dhcp daemon: unknown op \"" + op + "\"");
    CNI_TRY(json::field(*d, "containerID", r.container_id, w));
    CNI_TRY(json::field(*d, "netns", r.netns, w));
    CNI_TRY(json::field(*d, "ifName", r.ifname, w));
    CNI_TRY(json::field(*d, "args", r.args, w));
    CNI_TRY(json::field(*d, "path", r.path, w));
    CNI_TRY(json::field(*d, "config", r.config, w));
    return r;
}

std::string encode_reply(const DaemonReply& r) {
    if (!r) return "{\"error\":" + encode_error(r.error()) + "}";
    if (!*r) return "{}";
    auto text = encode_result(**r, "1.1.0");
    if (!text) return "{\"error\":" + encode_error(text.error()) + "}";
    json::Document d(rapidjson::kObjectType);
    auto& a = d.GetAllocator();
    json::set(d, "result", json::str(*text, a), a);
    return json::write(d, json::Style::compact, false);
}

DaemonReply decode_reply(std::string_view text) {
    auto d = json::parse(text);
    if (!d || !d->IsObject()) return fail(code::decoding_failure, "malformed reply from the DHCP daemon: " + std::string(text.substr(0, 200)));
    if (const auto* e = json::find(*d, "error"); e && e->IsObject()) return cni::Unexpected(decode_error(*e));
    const auto* res = json::find(*d, "result");
    if (!res) return std::optional<CniResult>{};
    if (!res->IsString()) return fail(code::decoding_failure, "malformed reply from the DHCP daemon: result is not a string");
    CNI_TRY_ASSIGN(auto doc, json::parse(std::string_view(res->GetString(), res->GetStringLength())));
    CNI_TRY_ASSIGN(auto result, decode_result(doc, "1.1.0"));
    return std::optional<CniResult>(std::move(result));
}

DaemonReply call_daemon(const std::string& socket_path, const DaemonRequest& r, int unreachable_code) {
    auto dial_error = [&](int err) {
        return fail(unreachable_code, "error dialing DHCP daemon: dial unix " + socket_path + ": connect: " + os::errno_text(err));
    };
    auto fd = os::connect_unix(socket_path);
    if (!fd) return dial_error(fd.error());
    // A daemon that refuses (a peer other than root, or a connection past those it serves at
    // once) closes without reading: the send may fail, and what it answered is still read.
    int send_err = os::send_all(fd->get(), encode_request(r));
    ::shutdown(fd->get(), SHUT_WR);
    auto reply = os::recv_all(fd->get(), kMaxConfigBytes);
    if (!reply) return fail("reading the DHCP daemon's answer on " + socket_path + ": " + os::errno_text(reply.error()));
    if (reply->empty())
        return fail(code::try_again_later, "the DHCP daemon on " + socket_path + " closed the connection without an answer" +
                                               (send_err ? " (sending the request: " + os::errno_text(send_err) + ")" : "") +
                                               " (as it does while it serves as many requests as it takes at once); try again");
    return decode_reply(*reply);
}

}  // namespace cni::dhcp
