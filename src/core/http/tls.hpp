// SPDX-License-Identifier: Apache-2.0
// TLS for the HTTP client (docs/design.md, The HTTP client), over mbedTLS: the CA that signs the
// servers' certificates, and optionally a client certificate and key, loaded once and shared by
// every connection; per connection, a TLS 1.2 session whose handshake verifies the server's
// certificate against the CA and the endpoint's host name or address (a subjectAltName IP entry
// for an address literal). With a TicketStore, each connection first offers the session saved
// for its endpoint and credentials (tls_tickets.hpp), and saves the one it ends with, so a new
// process resumes without public-key work (docs/cluster-ipam.md, Security). mbedTLS's types stay
// inside tls.cpp.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "core/http/tls_tickets.hpp"
#include "core/http/url.hpp"
#include "core/result.hpp"

namespace cni::http {

// The credentials as PEM text (read by the caller from where it trusts), each with the name it
// was read from, for messages only.
struct TlsCredentials {
    std::string ca_name, ca_pem;      // the certificates that sign the servers'
    std::string cert_name, cert_pem;  // this client's certificate (empty: none), with the key
    std::string key_name, key_pem;    // its private key, unencrypted
};

class TlsConfig {
public:
    // The credentials parsed; an error names the credential and what is wrong with it, never
    // what it holds. `tickets`: where sessions are kept across processes (none: every
    // connection makes a full handshake).
    static Result<std::shared_ptr<const TlsConfig>> load(const TlsCredentials& c,
                                                         std::optional<TicketStore> tickets = std::nullopt);
    ~TlsConfig();
    struct Impl;
    const Impl& impl() const { return *impl_; }

private:
    explicit TlsConfig(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// What one non-blocking step did: moved `bytes`, or needs the socket ready for `wait` (POLLIN or
// POLLOUT) before it is tried again. A read of 0 bytes with nothing to wait for is the close.
struct Step {
    std::size_t bytes = 0;
    short wait = 0;
};

// One connection's TLS session over a connected non-blocking socket it does not own; the caller
// polls the socket as each step asks.
class TlsSession {
public:
    // `resume`: offer the session saved for `to` and these credentials, if there is a good one.
    TlsSession(const TlsConfig& config, int fd, const Endpoint& to, bool resume = true);
    ~TlsSession();
    TlsSession(const TlsSession&) = delete;
    TlsSession& operator=(const TlsSession&) = delete;
    // The handshake, then (wait 0) the server's certificate checked against the CA and the
    // endpoint's name or address; an error says why it was refused.
    // A failed handshake that offered a saved session forgets it (the caller may try once more
    // without: offered()).
    Result<Step> handshake();
    bool offered() const;  // a saved session was offered
    bool resumed() const;  // the finished handshake resumed it (no certificate was sent)
    Result<Step> write(std::string_view data);
    Result<Step> read(char* buf, std::size_t size);
    struct Impl;

private:
    Result<Step> handshake_steps();
    std::unique_ptr<Impl> impl_;
};

}  // namespace cni::http
