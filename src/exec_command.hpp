// SPDX-License-Identifier: Apache-2.0
// `cni-all exec add|check|del|gc|status NETWORK [NETNS] [options]`: a container runtime's CNI
// side in the binary (what cnitool is, done properly): loads the network by name from the conf
// dir and runs it through core/runtime as libcni does, with libcni's result cache and its error
// wording (`plugin type="tuning" failed (add): ...`). Options as cnitool's users write them: the
// value next or after '=', -i for --ifname, -h/--help; gc and status accept an unused NETNS.
//   --ifname NAME (CNI_IFNAME, default eth0)   --container-id ID (default cnitool's: "cnitool-" +
//   20 hex digits of sha512(NETNS))   --args K=V;... (CNI_ARGS)   --capability-args JSON (CAP_ARGS)
//   --conf-dir DIR (NETCONFPATH, default /etc/cni/net.d)   --cache-dir DIR (default /var/lib/cni)
//   --cni-path P (CNI_PATH, default: the directory holding this binary)
// gc treats the cached attachments whose netns no longer exists as stale: they are DELeted, and
// the plugins' GC gets the others as cni.dev/valid-attachments. ADD prints the result; an error
// prints the CNI error JSON on stderr and exits 1.
#pragma once

#include <cstdio>
#include <span>
#include <string>

namespace cni {

int exec_command(std::span<const std::string> args, std::span<const std::string> environ, std::FILE* out, std::FILE* err);

}  // namespace cni
