// SPDX-License-Identifier: Apache-2.0
// Delegating to another plugin (IPAM, or flannel's delegate), as Go invoke.Delegate* does
// (docs/compatibility.md: IPAM delegation): find `type` in CNI_PATH (a '/' in the name is refused,
// the CVE-2021-20206 class), and run it with the same config and environment but CNI_COMMAND
// replaced. When the call's in_process lookup names one of our applets for the file found (it is
// this very binary), the applet runs in-process: same validation, same version gates, same result
// round trip through the config's version, no fork/exec.
#pragma once

#include <string>

#include "core/applet.hpp"
#include "core/rollback.hpp"

namespace cni::ipam {

// Go invoke.FindInPath over a ':'-separated CNI_PATH.
Result<std::string> find_in_path(std::string_view plugin, std::string_view cni_path);

// Runs plugin `type` for `cmd` with ctx.req's environment (CNI_COMMAND replaced) and `config`
// on stdin; the result of an ADD, nothing for the other commands. Also what `cni-all exec` runs
// every plugin of a conflist with.
Result<std::optional<CniResult>> invoke(const Context& ctx, Command cmd, std::string_view type, std::string_view config);

// ADD through a delegate; a result with a left-out address or dst, or a null ips/routes entry,
// is refused after a DEL to the same delegate, so nothing stays allocated.
Result<CniResult> delegate_add(const Context& ctx, std::string_view type, std::string_view config);
Status delegate_del(const Context& ctx, std::string_view type, std::string_view config);
Status delegate_check(const Context& ctx, std::string_view type, std::string_view config);
Status delegate_status(const Context& ctx, std::string_view type, std::string_view config);
Status delegate_gc(const Context& ctx, std::string_view type, std::string_view config);
// ADD's IPAM step in a main applet: the delegate's result, with its release pushed onto `undo`;
// a result without addresses is refused, as the reference's plugins refuse it. The delegate's
// error is prefixed by `error_prefix` when one is given (vlan's wording).
Result<CniResult> allocate(const Context& ctx, std::string_view type, Rollback& undo, std::string_view error_prefix = "");
// CHECK and STATUS for a main applet whose IPAM is optional: the delegate's, or nothing to ask
// when the config names none.
Status check_of_optional_ipam(const Context& ctx, std::string_view type);
Status status_of_optional_ipam(const Context& ctx, std::string_view type);

// The STATUS verb of a main applet whose STATUS is its IPAM's: its config read by `Read` (a
// Result<Conf>(const Request&), Conf holding its NetConf as `net`), then the delegate's STATUS;
// with an optional IPAM, nothing to ask when the config names none.
template <auto Read>
Status status_of(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, Read(ctx.req));
    return delegate_status(ctx, c.net.ipam_type, ctx.req.config);
}
template <auto Read>
Status status_of_optional(const Context& ctx) {
    CNI_TRY_ASSIGN(auto c, Read(ctx.req));
    return status_of_optional_ipam(ctx, c.net.ipam_type);
}

}  // namespace cni::ipam
