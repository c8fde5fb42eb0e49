// SPDX-License-Identifier: Apache-2.0
// Route netlink sockets with extended-ack error reporting (see socket.hpp).
#include "core/nl/socket.hpp"

#include <linux/netlink.h>
#include <netlink/errno.h>
#include <netlink/msg.h>
#include <sys/socket.h>

#include <string>
#include <vector>

#include "core/libnl/attr.hpp"
#include "core/os/errno_error.hpp"

namespace cni::nl {
namespace {

// libnl 3.7 has no extended-ack API: read NLMSGERR_ATTR_MSG from the error message ourselves.
int on_error(sockaddr_nl*, nlmsgerr* e, void* arg) {
    auto* last = static_cast<Socket::LastError*>(arg);
    last->errnum = -e->error;
    last->message.clear();
    auto* hdr = reinterpret_cast<nlmsghdr*>(reinterpret_cast<char*>(e) - NLMSG_HDRLEN);
    if (hdr->nlmsg_flags & NLM_F_ACK_TLVS) {
        std::size_t offset = sizeof(nlmsgerr);
        if (!(hdr->nlmsg_flags & NLM_F_CAPPED)) offset += e->msg.nlmsg_len - NLMSG_HDRLEN;
        std::size_t total = hdr->nlmsg_len - NLMSG_HDRLEN;
        if (offset < total) {
            auto* attrs = reinterpret_cast<nlattr*>(reinterpret_cast<char*>(e) + offset);
            int remaining = int(total - offset);
            nlattr* a;
            int rem;
            nla_for_each_attr(a, attrs, remaining, rem) {
                if (nla_type(a) == NLMSGERR_ATTR_MSG) last->message = libnl::attr_string(a);
            }
        }
    }
    return NL_STOP;  // libnl still returns the converted error code
}

}  // namespace

Result<Socket> Socket::open() {
    libnl::SockPtr s(nl_socket_alloc());
    if (!s) return fail("netlink: cannot allocate a socket");
    if (int err = nl_connect(s.get(), NETLINK_ROUTE); err < 0) return fail(std::string("netlink: connect: ") + nl_geterror(err));
    int one = 1;
    (void)::setsockopt(nl_socket_get_fd(s.get()), SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof one);
    auto last = std::make_unique<LastError>();
    nl_socket_modify_err_cb(s.get(), NL_CB_CUSTOM, on_error, last.get());
    return Socket(std::move(s), std::move(last));
}

Result<Socket> Socket::open_in(const os::Netns& ns) {
    CNI_TRY_ASSIGN(auto guard, os::NetnsGuard::enter(ns));
    return open();
}

Error Socket::error(int rc, std::string_view what) const {
    std::string text;
    if (last_->errnum > 0) text = os::errno_text(last_->errnum);
    else text = nl_geterror(rc);
    if (!last_->message.empty()) text += " (kernel: " + last_->message + ")";
    last_->errnum = 0;
    last_->message.clear();
    return Error{code::internal, std::string(what) + ": " + text, {}};
}

Status Socket::check(int rc, std::string_view what) const {
    if (rc >= 0) {
        last_->errnum = 0;
        last_->message.clear();
        return {};
    }
    return cni::Unexpected(error(rc, what));
}

namespace {

struct Asking {
    const std::function<void(nl_msg*)>* on_answer;
    bool acked = false;
};

int on_answer(nl_msg* msg, void* arg) {
    (*static_cast<Asking*>(arg)->on_answer)(msg);
    return NL_OK;
}

int on_ack(nl_msg*, void* arg) {
    static_cast<Asking*>(arg)->acked = true;
    return NL_STOP;
}

}  // namespace

Status Socket::ask(nl_msg* msg, const std::function<void(nl_msg*)>& answer, std::string_view what) const {
    // The socket's handlers (its error handler records the kernel's message) plus ours.
    std::unique_ptr<nl_cb, libnl::Deleter<nl_cb_put>> own(nl_socket_get_cb(sock_.get()));
    std::unique_ptr<nl_cb, libnl::Deleter<nl_cb_put>> cb(nl_cb_clone(own.get()));
    if (!cb) return fail(std::string(what) + ": out of memory");
    Asking asking{&answer};
    nl_cb_set(cb.get(), NL_CB_VALID, NL_CB_CUSTOM, on_answer, &asking);
    nl_cb_set(cb.get(), NL_CB_ACK, NL_CB_CUSTOM, on_ack, &asking);
    CNI_TRY(check(nl_send_auto(sock_.get(), msg), what));
    while (!asking.acked) CNI_TRY(check(nl_recvmsgs(sock_.get(), cb.get()), what));
    return {};
}

namespace {

struct Dumping {
    std::vector<std::string> messages;  // each nlmsghdr and its payload, as received
    bool interrupted = false;
};

int on_dumped(nl_msg* msg, void* arg) {
    auto* d = static_cast<Dumping*>(arg);
    const nlmsghdr* h = nlmsg_hdr(msg);
    if (h->nlmsg_flags & NLM_F_DUMP_INTR) d->interrupted = true;
    d->messages.emplace_back(reinterpret_cast<const char*>(h), h->nlmsg_len);
    return NL_OK;
}

}  // namespace

Status Socket::dump_messages(int type, const void* header, std::size_t size,
                             const std::function<void(const nlmsghdr*)>& on_message, std::string_view what) const {
    std::unique_ptr<nl_cb, libnl::Deleter<nl_cb_put>> own(nl_socket_get_cb(sock_.get()));
    for (int attempt = 0; attempt < 5; ++attempt) {
        std::unique_ptr<nl_cb, libnl::Deleter<nl_cb_put>> cb(nl_cb_clone(own.get()));
        if (!cb) return fail(std::string(what) + ": out of memory");
        Dumping d;
        nl_cb_set(cb.get(), NL_CB_VALID, NL_CB_CUSTOM, on_dumped, &d);
        CNI_TRY(check(nl_send_simple(sock_.get(), type, NLM_F_DUMP, const_cast<void*>(header), size), what));
        CNI_TRY(check(nl_recvmsgs(sock_.get(), cb.get()), what));
        if (d.interrupted) continue;
        for (auto& m : d.messages) on_message(reinterpret_cast<const nlmsghdr*>(m.data()));
        return {};
    }
    return fail(std::string(what) + ": the table changed during each of 5 dumps");
}

Result<libnl::CachePtr> Socket::dump(const CacheAlloc& alloc, std::string_view what) const {
    int rc = 0;
    for (int attempt = 0; attempt < 5; ++attempt) {
        nl_cache* raw = nullptr;
        rc = alloc(sock_.get(), &raw);
        if (rc >= 0) return libnl::CachePtr(raw);
        if (rc != -NLE_DUMP_INTR) break;  // libnl frees the partial cache itself
    }
    return cni::Unexpected(error(rc, what));
}

}  // namespace cni::nl
