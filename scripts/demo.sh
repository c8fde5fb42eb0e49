#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The demo, on a fresh Debian 12 machine: installs the dependencies, builds cni-all, installs it
# with one symlink per applet into a temporary plugin directory, and runs a real conflist
# (loopback, then host-local for a dual-stack address) against a throwaway network namespace,
# the way a runtime does: CNI_* environment, config on stdin. It prints each CNI result and the
# namespace's state, runs CHECK, then DEL, and removes everything it made.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null
if [ "$(id -u)" -ne 0 ]; then exec sudo "$0" "$@"; fi

bin=$(mktemp -d) data=$(mktemp -d) ns="cni-all-demo-$$"
cleanup() { ip netns del "$ns" 2>/dev/null || true; rm -rf "$bin" "$data"; }
trap cleanup EXIT
build/cni-all install "$bin" >/dev/null
ip netns add "$ns"

conflist=$(cat <<JSON
{
  "cniVersion": "1.1.0",
  "name": "demo",
  "plugins": [
    {"type": "loopback"},
    {"type": "host-local", "ipam": {"type": "host-local", "dataDir": "$data",
      "ranges": [[{"subnet": "10.250.0.0/24"}], [{"subnet": "fd00:250::/64"}]],
      "routes": [{"dst": "0.0.0.0/0"}]}}
  ]
}
JSON
)
# Each plugin gets the list's name and cniVersion, as libcni injects them.
plugin_conf() { python3 -c 'import json,sys; l=json.loads(sys.argv[1]); p=l["plugins"][int(sys.argv[2])]; p.update(name=l["name"], cniVersion=l["cniVersion"]); print(json.dumps(p))' "$conflist" "$1"; }
run() {  # run COMMAND PLUGIN_INDEX APPLET
  CNI_COMMAND=$1 CNI_CONTAINERID=demo-container CNI_NETNS=/run/netns/$ns CNI_IFNAME=eth0 CNI_PATH=$bin \
    "$bin/$3" <<<"$(plugin_conf "$2")"
}

echo "== cni-all $(build/cni-all --version | cut -d' ' -f2), applets: $(build/cni-all --list | cut -d' ' -f1 | tr '\n' ' ')"
echo "== ADD loopback into netns $ns"; run ADD 0 loopback; echo
echo "== ADD host-local (dual stack)"; run ADD 1 host-local; echo
echo "== lo in the namespace:"; ip -n "$ns" -br addr show lo
echo "== reservations on disk:"; ls "$data/demo"
echo "== CHECK both"; run CHECK 0 loopback && run CHECK 1 host-local && echo "ok"
echo "== DEL in reverse order"; run DEL 1 host-local && run DEL 0 loopback
echo "== after DEL:"; ip -n "$ns" -br link show lo; ls "$data/demo" | grep -v -e lock -e last_reserved -e index || true
echo "== done; namespace and files removed"
