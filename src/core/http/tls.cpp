// SPDX-License-Identifier: Apache-2.0
// TLS over mbedTLS (see tls.hpp): the configuration (CA chain, client certificate and key, a
// CTR-DRBG seeded from the system's entropy, TLS 1.2 at least, the server's certificate
// required), and the session driven over the caller's non-blocking socket by callbacks that
// turn EAGAIN into mbedTLS's want-read/want-write. mbedTLS checks a host name against the
// certificate; an address literal is checked here against the certificate's subjectAltName IP
// entries, which mbedTLS 2.28 lists but does not compare.
#include "core/http/tls.hpp"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/pk.h>
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
    Impl() {
        mbedtls_entropy_init(&entropy);
        mbedtls_ctr_drbg_init(&drbg);
        mbedtls_x509_crt_init(&ca);
        mbedtls_x509_crt_init(&cert);
        mbedtls_pk_init(&key);
        mbedtls_ssl_config_init(&conf);
    }
    ~Impl() {
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
    bool verified = false;
    Impl(int f, Endpoint e) : fd(f), to(std::move(e)) { mbedtls_ssl_init(&ssl); }
    ~Impl() { mbedtls_ssl_free(&ssl); }
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;
};

namespace {

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

}  // namespace

TlsConfig::TlsConfig(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TlsConfig::~TlsConfig() = default;

Result<std::shared_ptr<const TlsConfig>> TlsConfig::load(const TlsCredentials& in) {
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
    return std::shared_ptr<const TlsConfig>(new TlsConfig(std::move(c)));
}

TlsSession::TlsSession(const TlsConfig& config, int fd, const Endpoint& to) : impl_(std::make_unique<Impl>(fd, to)) {
    // Setup fails only without memory; the handshake then reports the session unusable.
    mbedtls_ssl_setup(&impl_->ssl, &config.impl().conf);
    if (!to.literal) mbedtls_ssl_set_hostname(&impl_->ssl, to.address.c_str());
    mbedtls_ssl_set_bio(&impl_->ssl, &impl_->fd, send_cb, recv_cb, nullptr);
}

TlsSession::~TlsSession() = default;

Result<Step> TlsSession::handshake() {
    const int r = mbedtls_ssl_handshake(&impl_->ssl);
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
