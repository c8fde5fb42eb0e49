// SPDX-License-Identifier: Apache-2.0
// TLS over mbedTLS (see tls.hpp): the configuration (CA chain, client certificate and key, a
// CTR-DRBG seeded from the system's entropy, TLS 1.2 at least, the server's certificate
// required), and the session driven over the caller's non-blocking socket by callbacks that
// turn EAGAIN into mbedTLS's want-read/want-write. mbedTLS checks a host name against the
// certificate; an address literal is checked here against the certificate's subjectAltName IP
// entries, which mbedTLS 2.28 lists but does not compare. A saved session (tls_tickets.hpp) is
// named by the SHA-256 of the endpoint and the credentials' contents, offered only while it is
// younger than kSessionMaxAge and its server certificate has not expired, and watched through
// the handshake's states: a resumed handshake goes from the server's hello to its
// ChangeCipherSpec without the server's certificate.
#include "core/http/tls.hpp"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/pk.h>
#include <mbedtls/sha256.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>

namespace cni::http {

struct TlsConfig::Impl {
    mbedtls_entropy_context entropy;
    mbedtls_ctr_drbg_context drbg;
    mbedtls_x509_crt ca;
    mbedtls_x509_crt cert;
    mbedtls_pk_context key;
    mbedtls_ssl_config conf;
    std::optional<TicketStore> tickets;
    mbedtls_sha256_context credentials;  // fed the CA, certificate and key; each session's name goes on from it
    Impl() {
        mbedtls_sha256_init(&credentials);
        mbedtls_entropy_init(&entropy);
        mbedtls_ctr_drbg_init(&drbg);
        mbedtls_x509_crt_init(&ca);
        mbedtls_x509_crt_init(&cert);
        mbedtls_pk_init(&key);
        mbedtls_ssl_config_init(&conf);
    }
    ~Impl() {
        mbedtls_sha256_free(&credentials);
        mbedtls_ssl_config_free(&conf);
        mbedtls_pk_free(&key);
        mbedtls_x509_crt_free(&cert);
        mbedtls_x509_crt_free(&ca);
        mbedtls_ctr_drbg_free(&drbg);
        mbedtls_entropy_free(&entropy);
    }
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;
};

struct TlsSession::Impl {
    mbedtls_ssl_context ssl;
    int fd;
    Endpoint to;
    const TlsConfig::Impl& config;
    std::string ticket_name;   // the saved session's file (empty: none kept)
    std::string offered;       // the ticket of the saved session offered (empty: none)
    bool saw_certificate = false;
    Impl(int f, Endpoint e, const TlsConfig::Impl& c) : fd(f), to(std::move(e)), config(c) { mbedtls_ssl_init(&ssl); }
    ~Impl() { mbedtls_ssl_free(&ssl); }
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;
};

namespace {

// The oldest saved session offered: a resumed handshake trusts the server's certificate as it
// was verified when the session began (docs/cluster-ipam.md, Security).
constexpr std::time_t kSessionMaxAge = 3600;

std::string mbedtls_text(int ret) {
    char buf[160];
    mbedtls_strerror(ret, buf, sizeof buf);
    return buf;
}

int send_cb(void* ctx, const unsigned char* buf, size_t len) {
    const ssize_t n = ::send(*static_cast<int*>(ctx), buf, len, MSG_NOSIGNAL);
    if (n >= 0) return int(n);
    if (errno == EAGAIN || errno == EINTR) return MBEDTLS_ERR_SSL_WANT_WRITE;
    return MBEDTLS_ERR_NET_SEND_FAILED;
}

int recv_cb(void* ctx, unsigned char* buf, size_t len) {
    const ssize_t n = ::recv(*static_cast<int*>(ctx), buf, len, 0);
    if (n >= 0) return int(n);
    if (errno == EAGAIN || errno == EINTR) return MBEDTLS_ERR_SSL_WANT_READ;
    return errno == ECONNRESET ? MBEDTLS_ERR_NET_CONN_RESET : MBEDTLS_ERR_NET_RECV_FAILED;
}

// A want-read/want-write as the step to poll for; any other failure as an error.
Result<Step> step_of(int ret, std::string_view doing) {
    if (ret == MBEDTLS_ERR_SSL_WANT_READ) return Step{0, POLLIN};
    if (ret == MBEDTLS_ERR_SSL_WANT_WRITE) return Step{0, POLLOUT};
    return fail(code::try_again_later, std::string(doing) + ": " + mbedtls_text(ret));
}

// Whether the certificate has a subjectAltName IP entry equal to `address`.
bool has_ip(const mbedtls_x509_crt& crt, const std::string& address) {
    unsigned char want[16];
    std::size_t want_len = 4;
    if (::inet_pton(AF_INET, address.c_str(), want) != 1) {
        if (::inet_pton(AF_INET6, address.c_str(), want) != 1) return false;
        want_len = 16;
    }
    for (const mbedtls_x509_sequence* s = &crt.subject_alt_names; s && s->buf.p; s = s->next)
        if (s->buf.tag == (MBEDTLS_ASN1_CONTEXT_SPECIFIC | 7) && s->buf.len == want_len &&
            std::memcmp(s->buf.p, want, want_len) == 0)
            return true;
    return false;
}

// Feeds `text` with its length first, so that no two lists of texts feed the same bytes.
void feed(mbedtls_sha256_context& h, std::string_view text) {
    const std::uint64_t n = text.size();
    unsigned char len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
    mbedtls_sha256_update_ret(&h, len, sizeof len);
    mbedtls_sha256_update_ret(&h, reinterpret_cast<const unsigned char*>(text.data()), text.size());
}

// The file name of the session of `to` with the configuration's credentials: 64 hex digits.
std::string ticket_name(const TlsConfig::Impl& c, const Endpoint& to) {
    mbedtls_sha256_context h;
    mbedtls_sha256_init(&h);
    mbedtls_sha256_clone(&h, &c.credentials);
    feed(h, to.address);
    feed(h, std::to_string(to.port));
    unsigned char sum[32];
    mbedtls_sha256_finish_ret(&h, sum);
    mbedtls_sha256_free(&h);
    static const char hex[] = "0123456789abcdef";
    std::string out;
    for (unsigned char b : sum) (out += hex[b >> 4]) += hex[b & 15];
    return out;
}

std::string ticket_of(const mbedtls_ssl_session& s) { return std::string(reinterpret_cast<const char*>(s.ticket), s.ticket ? s.ticket_len : 0); }

// `bytes` as a session still worth offering, set on `ssl`: its ticket; empty when it does not
// load (another version or build of mbedTLS, garbage), has no ticket, is too old, or its server
// certificate has expired.
std::string offer(mbedtls_ssl_context& ssl, const std::string& bytes) {
    mbedtls_ssl_session s;
    mbedtls_ssl_session_init(&s);
    bool ok = mbedtls_ssl_session_load(&s, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()) == 0;
    const std::time_t now = std::time(nullptr);
    ok = ok && s.ticket_len > 0 && s.start <= now && now - s.start < kSessionMaxAge && s.peer_cert &&
         !mbedtls_x509_time_is_past(&s.peer_cert->valid_to) && mbedtls_ssl_set_session(&ssl, &s) == 0;
    std::string ticket = ok ? ticket_of(s) : std::string();
    mbedtls_ssl_session_free(&s);
    return ticket;
}

// The session `ssl` ended its handshake with, serialized; empty when it cannot be.
std::string saved_session(const mbedtls_ssl_context& ssl) {
    mbedtls_ssl_session s;
    mbedtls_ssl_session_init(&s);
    std::string out;
    if (mbedtls_ssl_get_session(&ssl, &s) == 0) {
        std::size_t n = 0;
        mbedtls_ssl_session_save(&s, nullptr, 0, &n);
        out.resize(n);
        if (n == 0 || n > kTicketFileLimit ||
            mbedtls_ssl_session_save(&s, reinterpret_cast<unsigned char*>(out.data()), n, &n) != 0)
            out.clear();
    }
    mbedtls_ssl_session_free(&s);
    return out;
}

}  // namespace

TlsConfig::TlsConfig(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TlsConfig::~TlsConfig() = default;

Result<std::shared_ptr<const TlsConfig>> TlsConfig::load(const TlsCredentials& in, std::optional<TicketStore> tickets) {
    auto c = std::make_unique<Impl>();
    auto bad = [](std::string_view what, const std::string& name, int ret) {
        return fail(code::invalid_config, std::string(what) + " \"" + name + "\": " + mbedtls_text(ret));
    };
    // mbedTLS reads PEM text up to and with its NUL.
    auto pem = [](const std::string& text) { return std::pair(reinterpret_cast<const unsigned char*>(text.c_str()), text.size() + 1); };
    if (in.cert_pem.empty() != in.key_pem.empty())
        return fail(code::invalid_config, "a client certificate and its key go together");
    if (auto [p, n] = pem(in.ca_pem); int r = mbedtls_x509_crt_parse(&c->ca, p, n)) return bad("CA file", in.ca_name, r);
    if (!in.cert_pem.empty()) {
        if (auto [p, n] = pem(in.cert_pem); int r = mbedtls_x509_crt_parse(&c->cert, p, n))
            return bad("certificate file", in.cert_name, r);
        if (auto [p, n] = pem(in.key_pem); int r = mbedtls_pk_parse_key(&c->key, p, n, nullptr, 0))
            return bad("key file", in.key_name, r);
        if (int r = mbedtls_pk_check_pair(&c->cert.pk, &c->key); r != 0)
            return fail(code::invalid_config, "key file \"" + in.key_name + "\" is not the key of certificate \"" +
                                                  in.cert_name + "\": " + mbedtls_text(r));
    }
    static const char personalization[] = "cni-all http";
    if (int r = mbedtls_ctr_drbg_seed(&c->drbg, mbedtls_entropy_func, &c->entropy,
                                      reinterpret_cast<const unsigned char*>(personalization), sizeof personalization - 1);
        r != 0)
        return fail("seeding TLS's random generator: " + mbedtls_text(r));
    if (int r = mbedtls_ssl_config_defaults(&c->conf, MBEDTLS_SSL_IS_CLIENT, MBEDTLS_SSL_TRANSPORT_STREAM, MBEDTLS_SSL_PRESET_DEFAULT);
        r != 0)
        return fail("TLS defaults: " + mbedtls_text(r));
    mbedtls_ssl_conf_min_version(&c->conf, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);
    mbedtls_ssl_conf_authmode(&c->conf, MBEDTLS_SSL_VERIFY_REQUIRED);
    mbedtls_ssl_conf_ca_chain(&c->conf, &c->ca, nullptr);
    mbedtls_ssl_conf_rng(&c->conf, mbedtls_ctr_drbg_random, &c->drbg);
    if (!in.cert_pem.empty())
        if (int r = mbedtls_ssl_conf_own_cert(&c->conf, &c->cert, &c->key); r != 0) return bad("certificate file", in.cert_name, r);
    mbedtls_ssl_conf_session_tickets(&c->conf, tickets ? MBEDTLS_SSL_SESSION_TICKETS_ENABLED : MBEDTLS_SSL_SESSION_TICKETS_DISABLED);
    mbedtls_sha256_starts_ret(&c->credentials, 0);
    for (const std::string* text : {&in.ca_pem, &in.cert_pem, &in.key_pem}) feed(c->credentials, *text);
    c->tickets = std::move(tickets);
    return std::shared_ptr<const TlsConfig>(new TlsConfig(std::move(c)));
}

TlsSession::TlsSession(const TlsConfig& config, int fd, const Endpoint& to, bool resume)
    : impl_(std::make_unique<Impl>(fd, to, config.impl())) {
    // Setup fails only without memory; the handshake then reports the session unusable.
    mbedtls_ssl_setup(&impl_->ssl, &config.impl().conf);
    if (!to.literal) mbedtls_ssl_set_hostname(&impl_->ssl, to.address.c_str());
    mbedtls_ssl_set_bio(&impl_->ssl, &impl_->fd, send_cb, recv_cb, nullptr);
    if (const auto& tickets = config.impl().tickets) {
        impl_->ticket_name = ticket_name(config.impl(), to);
        if (auto bytes = resume ? tickets->load(impl_->ticket_name) : std::nullopt) impl_->offered = offer(impl_->ssl, *bytes);
    }
}

TlsSession::~TlsSession() = default;

bool TlsSession::offered() const { return !impl_->offered.empty(); }
bool TlsSession::resumed() const { return offered() && !impl_->saw_certificate && impl_->ssl.state == MBEDTLS_SSL_HANDSHAKE_OVER; }

Result<Step> TlsSession::handshake() {
    auto r = handshake_steps();
    if (!r && offered()) impl_->config.tickets->forget(impl_->ticket_name);
    // The session as it ends, when it has a ticket the file does not hold: a full handshake's, or
    // a resumed one's to which the server gave a new ticket.
    const mbedtls_ssl_session* ended = impl_->ssl.session;
    if (r && r->wait == 0 && impl_->config.tickets && ended && ended->ticket_len > 0 && ticket_of(*ended) != impl_->offered)
        if (const std::string bytes = saved_session(impl_->ssl); !bytes.empty()) impl_->config.tickets->save(impl_->ticket_name, bytes);
    return r;
}

Result<Step> TlsSession::handshake_steps() {
    // mbedtls_ssl_handshake's loop, watching for the state that reads the server's certificate.
    int r = 0;
    while (impl_->ssl.state != MBEDTLS_SSL_HANDSHAKE_OVER) {
        if (impl_->ssl.state == MBEDTLS_SSL_SERVER_CERTIFICATE) impl_->saw_certificate = true;
        if ((r = mbedtls_ssl_handshake_step(&impl_->ssl)) != 0) break;
    }
    if (r == MBEDTLS_ERR_X509_CERT_VERIFY_FAILED) {
        char info[256];
        mbedtls_x509_crt_verify_info(info, sizeof info, "", mbedtls_ssl_get_verify_result(&impl_->ssl));
        std::string why = info;
        while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
        for (auto& c : why) c = c == '\n' ? ';' : c;
        return fail(code::try_again_later, "TLS handshake: the server's certificate is refused: " + why);
    }
    if (r == MBEDTLS_ERR_NET_SEND_FAILED || r == MBEDTLS_ERR_NET_RECV_FAILED || r == MBEDTLS_ERR_NET_CONN_RESET ||
        r == MBEDTLS_ERR_SSL_CONN_EOF || r == MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE)
        return fail(code::try_again_later, "TLS handshake: the server ended it (" + mbedtls_text(r) +
                                               "): does it require a client certificate, or refuse this one?");
    if (r != 0) return step_of(r, "TLS handshake");
    if (impl_->to.literal) {
        const mbedtls_x509_crt* peer = mbedtls_ssl_get_peer_cert(&impl_->ssl);
        if (!peer || !has_ip(*peer, impl_->to.address))
            return fail(code::try_again_later, "TLS handshake: the server's certificate is refused: it does not name the address " +
                                                   impl_->to.address + " (subjectAltName IP)");
    }
    return Step{};
}

Result<Step> TlsSession::write(std::string_view data) {
    const int r = mbedtls_ssl_write(&impl_->ssl, reinterpret_cast<const unsigned char*>(data.data()), data.size());
    if (r >= 0) return Step{std::size_t(r), 0};
    return step_of(r, "TLS write");
}

Result<Step> TlsSession::read(char* buf, std::size_t size) {
    const int r = mbedtls_ssl_read(&impl_->ssl, reinterpret_cast<unsigned char*>(buf), size);
    if (r >= 0) return Step{std::size_t(r), 0};
    if (r == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY || r == MBEDTLS_ERR_NET_CONN_RESET || r == MBEDTLS_ERR_SSL_CONN_EOF) return Step{};
    return step_of(r, "TLS read");
}

}  // namespace cni::http
