// SPDX-License-Identifier: Apache-2.0
// Top-level CNI dispatch: env + stdin -> Request -> verb -> one print -> exit code.
#include "dispatch.hpp"

#include <unistd.h>

#include <cerrno>
#include <exception>

#include "core/os/errno_error.hpp"
#include "core/run.hpp"
#include "registry.hpp"

namespace cni {

Result<std::string> read_bounded(int fd, std::size_t limit) {
    std::string data;
    char buf[65536];
    while (true) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n == 0) return data;
        if (n < 0) {
            if (errno == EINTR) continue;
            return fail(code::io_failure, "error reading from stdin: " + os::errno_text(errno));
        }
        if (data.size() + std::size_t(n) > limit)
            return fail(code::io_failure, "error reading from stdin: the network configuration is larger than " +
                                              std::to_string(limit >> 20) + " MiB");
        data.append(buf, std::size_t(n));
    }
}

int run_cni(const Applet& a, std::span<const std::string> environ, int stdin_fd, std::FILE* out, std::FILE* err) {
    auto print_error = [&](const Error& e) {
        std::fputs(encode_error(e).c_str(), out);
        std::fflush(out);
        return 1;
    };
    auto req = read_request(environ, [&](std::size_t limit) { return read_bounded(stdin_fd, limit); });
    if (!req) {
        if (req.error().about) {
            std::fprintf(err, "CNI %.*s plugin v%.*s\n", int(a.name.size()), a.name.data(),
                         int(cni_all_version().size()), cni_all_version().data());
            std::string list;
            for (auto v : a.versions) list += (list.empty() ? "" : ", ") + std::string(v);
            std::fprintf(err, "CNI protocol versions supported: %s\n", list.c_str());
            return 0;
        }
        return print_error(req.error().error);
    }
    if (req->command == Command::version) {
        std::fputs(version_info_json(a.versions).c_str(), out);
        return std::fflush(out) == 0 ? 0 : 1;
    }
    Context ctx{*req, [err](std::string_view line) {
                    std::fwrite(line.data(), 1, line.size(), err);
                    std::fputc('\n', err);
                },
                nullptr};
    // Errors are values; an exception escaping a verb is a bug, answered as a CNI error rather
    // than an abort the runtime would retry forever.
    Result<Outcome> outcome = fail("internal error");
    try {
        outcome = run_verb(a, ctx);
    } catch (const std::exception& e) {
        return print_error(Error{code::internal, std::string(a.name) + ": internal error: " + e.what(), {}});
    }
    if (!outcome) return print_error(outcome.error());
    if (outcome->result) {
        auto text = encode_result(*outcome->result, outcome->conf_version);
        if (!text) return print_error(text.error());
        std::fputs(text->c_str(), out);
    }
    return std::fflush(out) == 0 ? 0 : 1;
}

}  // namespace cni
