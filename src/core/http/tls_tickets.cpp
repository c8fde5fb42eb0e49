// SPDX-License-Identifier: Apache-2.0
// The session files of tls_tickets.hpp: opened relative to the folder, without following a
// link or blocking on a FIFO, checked on the opened descriptor before a byte is read.
#include "core/http/tls_tickets.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace cni::http {

std::optional<TicketStore> TicketStore::open(const std::string& path) {
    auto dir = os::Dir::open_trusted(path, 0700);
    if (!dir) return std::nullopt;
    return TicketStore(std::move(*dir));
}

std::optional<std::string> TicketStore::load(const std::string& name) const {
    os::UniqueFd fd = dir_.open_regular(name, O_RDONLY);
    if (!fd) return std::nullopt;
    struct stat st{};
    if (::fstat(fd.get(), &st) != 0 || st.st_uid != ::geteuid() || (st.st_mode & 07777) != 0600 ||
        st.st_size <= 0 || std::size_t(st.st_size) > kTicketFileLimit)
        return std::nullopt;
    auto bytes = os::read_all(fd.get(), kTicketFileLimit);
    if (!bytes) return std::nullopt;
    return std::move(*bytes);
}

void TicketStore::save(const std::string& name, std::string_view bytes) const {
    if (!dir_.stat(name) && dir_.names().size() >= kTicketFilesMax) return;
    (void)dir_.write_atomic(name, bytes, 0600);
}

void TicketStore::forget(const std::string& name) const { (void)dir_.remove(name); }

}  // namespace cni::http
