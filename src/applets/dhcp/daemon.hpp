// SPDX-License-Identifier: Apache-2.0
// The dhcp daemon (`dhcp daemon` / `cni-all dhcp daemon`, docs/compatibility.md: dhcp): the
// reference's flags (-pidfile, -hostprefix, -socketpath, -broadcast, -timeout, -resendmax,
// -resendtimeout, written -flag value, -flag=value or with two dashes) plus -leasedir (where
// leases persist, default /run/cni/dhcp). It listens on the socket systemd passes (LISTEN_FDS,
// exactly one) or on its own unix socket, serves protocol.hpp requests - one thread per
// connection, one per lease (attachment.hpp) - and on SIGINT/SIGTERM stops every lease thread
// WITHOUT releasing (the leases persist and a restarted daemon resumes renewing them), removes
// its socket and pidfile, and exits 0. This is a long-running command, not an applet verb: it
// logs to stderr.
#pragma once

#include <span>
#include <string>

#include "applets/dhcp/client.hpp"

namespace cni::dhcp {

struct DaemonOptions {
    std::string pidfile;
    std::string hostprefix;
    std::string socket_path{"/run/cni/dhcp.sock"};
    std::string lease_dir{"/run/cni/dhcp"};
    Timing timing;
};

// Go flag syntax; durations in Go's form ("10s", "1m2s", "500ms").
Result<DaemonOptions> parse_daemon_options(std::span<const std::string> args);
Result<std::chrono::milliseconds> parse_go_duration(std::string_view text);

// argv after "daemon"; the process exit code.
int run_daemon(std::span<const std::string> args);

}  // namespace cni::dhcp
