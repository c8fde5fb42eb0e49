// SPDX-License-Identifier: Apache-2.0
// TLS sessions kept across processes (docs/design.md, The HTTP client; docs/cluster-ipam.md,
// Security): a folder of root's, chosen by the calling code and never by a config, holding one
// file per endpoint and credentials, each an mbedTLS session (its ticket and master secret) that
// the next process offers to resume. Everything read from it is only a hint: a file that is not
// exactly as this code writes it (a regular file of ours, 0600, of bounded size) is ignored,
// and a session that does not load or resume only costs a full handshake.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "core/os/fs.hpp"

namespace cni::http {

// The largest session file read (a saved session with the server's certificate is about 1 KB).
inline constexpr std::size_t kTicketFileLimit = 16384;
// The most entries the folder may hold for a new file to be saved: each endpoint a config names
// (a tenant's, without root's endpoints file) may add one, so the folder, in memory on tmpfs,
// stays within about 4 MB; past it a new endpoint only goes without resumption.
inline constexpr std::size_t kTicketFilesMax = 256;

class TicketStore {
public:
    // The folder at `path` (Dir::open_trusted: no link on the way, only root may change it;
    // made 0700 when it is the last component that is missing); nothing when it cannot be
    // opened so.
    static std::optional<TicketStore> open(const std::string& path);
    explicit TicketStore(os::Dir dir) : dir_(std::move(dir)) {}

    // The file's bytes when `name` is a regular file (never through a link) owned by us, of mode
    // 0600 exactly and at most kTicketFileLimit bytes; nothing otherwise.
    std::optional<std::string> load(const std::string& name) const;
    // Written whole through an exclusive temporary renamed over `name` (best effort); a new
    // name only while the folder holds fewer than kTicketFilesMax entries.
    void save(const std::string& name, std::string_view bytes) const;
    void forget(const std::string& name) const;

private:
    os::Dir dir_;
};

}  // namespace cni::http
