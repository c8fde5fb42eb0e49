#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The demo, on a fresh Debian 12 machine: installs the dependencies, builds cni-all, installs it
# with one symlink per applet into a temporary plugin directory, and runs a real conflist
# (loopback, then bridge with host-local IPAM, dual stack, masquerading) against throwaway "host"
# and "container" network namespaces, the way a runtime does: CNI_* environment, config on
# stdin, the plugins run inside the host namespace. It prints each CNI result and the state,
# pings the gateway from the container, runs CHECK, then DEL, and removes everything it made.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null
if [ "$(id -u)" -ne 0 ]; then exec sudo "$0" "$@"; fi

bin=$(mktemp -d) data=$(mktemp -d) ns="cni-all-demo-$$" host="cni-all-demo-host-$$"
cleanup() { ip netns del "$ns" 2>/dev/null || true; ip netns del "$host" 2>/dev/null || true; rm -rf "$bin" "$data"; }
trap cleanup EXIT
build/cni-all install "$bin" >/dev/null
ip netns add "$ns"
ip netns add "$host"

conflist=$(cat <<JSON
{
  "cniVersion": "1.1.0",
  "name": "demo",
  "plugins": [
    {"type": "loopback"},
    {"type": "bridge", "bridge": "demo0", "isGateway": true, "ipMasq": true,
      "ipam": {"type": "host-local", "dataDir": "$data",
        "ranges": [[{"subnet": "10.250.0.0/24"}], [{"subnet": "fd00:250::/64"}]],
        "routes": [{"dst": "0.0.0.0/0"}]}}
  ]
}
JSON
)
# Each plugin gets the list's name and cniVersion, as libcni injects them.
plugin_conf() { python3 -c 'import json,sys; l=json.loads(sys.argv[1]); p=l["plugins"][int(sys.argv[2])]; p.update(name=l["name"], cniVersion=l["cniVersion"]); print(json.dumps(p))' "$conflist" "$1"; }
run() {  # run COMMAND PLUGIN_INDEX APPLET, inside the throwaway host namespace
  ip netns exec "$host" env CNI_COMMAND=$1 CNI_CONTAINERID=demo-container CNI_NETNS=/run/netns/$ns \
    CNI_IFNAME=eth0 CNI_PATH=$bin "$bin/$3" <<<"$(plugin_conf "$2")"
}

echo "== cni-all $(build/cni-all --version | cut -d' ' -f2), applets: $(build/cni-all --list | cut -d' ' -f1 | tr '\n' ' ')"
echo "== ADD loopback into netns $ns"; run ADD 0 loopback; echo
result=$(run ADD 1 bridge)
echo "== ADD bridge + host-local (dual stack, ipMasq)"; echo "$result"; echo
echo "== the container:"; ip -n "$ns" -br addr
echo "== the host side:"; ip -n "$host" -br addr show demo0; ip -n "$host" -br link show master demo0
echo "== masquerading (iptables-legacy-save -t nat):"; ip netns exec "$host" iptables-legacy-save -t nat | grep -- "-A"
echo "== ping the gateway from the container:"; ip netns exec "$ns" ping -c1 -W2 10.250.0.1 | grep transmitted
echo "== CHECK both (with the cached results as prevResult)"
run_check() { ip netns exec "$host" env CNI_COMMAND=CHECK CNI_CONTAINERID=demo-container CNI_NETNS=/run/netns/$ns \
    CNI_IFNAME=eth0 CNI_PATH=$bin "$bin/$2" <<<"$(plugin_conf "$1" | python3 -c 'import json,sys; c=json.load(sys.stdin); c["prevResult"]=json.loads(sys.argv[1]); print(json.dumps(c))' "$3")"; }
run_check 1 bridge "$result" && echo "ok"
echo "== DEL in reverse order"; run DEL 1 bridge && run DEL 0 loopback
echo "== after DEL:"; ip -n "$ns" -br link; ip netns exec "$host" iptables-legacy-save -t nat | grep -c -- "-A" || true
ls "$data/demo" | grep -v -e lock -e last_reserved -e index || echo "(no reservations left)"
echo "== done; namespaces and files removed"
