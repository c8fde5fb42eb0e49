// SPDX-License-Identifier: Apache-2.0
// Top-level CNI dispatch: env + stdin -> Request -> verb -> one print -> exit code, and the
// call's log line when logging is on (core/log/logger.hpp).
#include "dispatch.hpp"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <exception>

#include "core/cni/json.hpp"
#include "core/log/logger.hpp"
#include "core/os/errno_error.hpp"
#include "core/run.hpp"
#include "core/strings.hpp"
#include "in_process.hpp"
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

namespace {

// " net=<name> id=<container id> ifname=<ifname> netns=<path>" for a call's log line.
std::string call_summary(const Request& req) {
    std::string net;
    if (auto doc = json::parse(req.config); doc && doc->IsObject())
        if (const json::Value* n = json::find_exact(*doc, "name"); n && n->IsString()) net.assign(n->GetString(), n->GetStringLength());
    return " net=" + go_quote(net) + " id=" + go_quote(req.container_id) + " ifname=" + go_quote(req.ifname) +
           " netns=" + go_quote(req.netns);
}

std::string milliseconds_since(std::chrono::steady_clock::time_point start) {
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count();
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2fms", double(us) / 1000.0);
    return buf;
}

// A result on one line, for the log.
std::string compact_json(const std::string& text) {
    auto doc = json::parse(text);
    return doc ? json::write(*doc, json::Style::compact, false) : text;
}

}  // namespace

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
    // The call's log (off unless the node's settings turn it on; docs/logging.md): its steps at
    // debug level, its warnings, and one line when it ends.
    const log::CallSettings log_settings = log::call_settings(environ, req->config);
    const log::Logger logger(log_settings.settings);
    const std::string who = std::string(a.name) + " " + req->command_text;
    const auto started = std::chrono::steady_clock::now();
    Context ctx{*req,
                [&](std::string_view line) {
                    std::fwrite(line.data(), 1, line.size(), err);
                    std::fputc('\n', err);
                    logger.write(log::Level::info, who + " warning: " + std::string(line));
                },
                nullptr, {}, in_process_applet};
    if (!log_settings.held.empty()) logger.write(log::Level::info, who + " " + log_settings.held);
    if (logger.enabled(log::Level::debug)) {
        ctx.debug = [&](std::string_view step) { logger.write(log::Level::debug, who + " " + std::string(step)); };
        ctx.step("config: " + req->config);
        for (const auto& key : log_settings.ignored)
            ctx.step("the network's " + key + " is ignored: only the node's settings choose the log (docs/logging.md)");
    }
    auto finish = [&](const Error* e, const std::string& result) {
        if (!logger.enabled(e ? log::Level::error : log::Level::info)) return;
        std::string line = who + call_summary(*req) + " " + milliseconds_since(started);
        if (e) line += " error code=" + std::to_string(e->code) + " msg=" + go_quote(e->msg);
        else line += " ok" + (result.empty() ? std::string() : " result=" + result);
        logger.write(e ? log::Level::error : log::Level::info, line);
    };
    auto fail_with = [&](const Error& e) {
        finish(&e, "");
        return print_error(e);
    };
    // Errors are values; an exception escaping a verb is a bug, answered as a CNI error rather
    // than an abort the runtime would retry forever.
    Result<Outcome> outcome = fail("internal error");
    try {
        outcome = run_verb(a, ctx);
    } catch (const std::exception& e) {
        return fail_with(Error{code::internal, std::string(a.name) + ": internal error: " + e.what(), {}});
    }
    if (!outcome) return fail_with(outcome.error());
    std::string printed;
    if (outcome->result) {
        auto text = encode_result(*outcome->result, outcome->conf_version);
        if (!text) return fail_with(text.error());
        std::fputs(text->c_str(), out);
        printed = compact_json(*text);
    }
    finish(nullptr, printed);
    return std::fflush(out) == 0 ? 0 : 1;
}

}  // namespace cni
