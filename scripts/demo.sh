#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The demo, on a fresh Debian 12 machine: installs the dependencies, builds cni-all, installs it
# with one symlink per applet into a temporary plugin directory, and runs a real conflist
# (loopback; bridge with host-local IPAM, dual stack, masquerading; portmap; tuning; bandwidth;
# firewall) against throwaway "host" and "container" network namespaces, the way a runtime
# does: CNI_* environment, config on stdin, each plugin given the previous one's result, the
# plugins run inside the host namespace. It prints the results and the state, serves HTTP in
# the container and fetches it through the published host port, runs CHECK, then DEL in
# reverse order, and removes everything it made.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null
if [ "$(id -u)" -ne 0 ]; then exec sudo "$0" "$@"; fi

bin=$(mktemp -d) data=$(mktemp -d) ns="cni-all-demo-$$" host="cni-all-demo-host-$$" server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null || true
  ip netns del "$ns" 2>/dev/null || true; ip netns del "$host" 2>/dev/null || true; rm -rf "$bin" "$data"
}
trap cleanup EXIT
build/cni-all install "$bin" >/dev/null
ip netns add "$ns"
ip netns add "$host"
ip -n "$host" link set lo up

conflist=$(cat <<JSON
{
  "cniVersion": "1.1.0",
  "name": "demo",
  "plugins": [
    {"type": "loopback"},
    {"type": "bridge", "bridge": "demo0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
      "ipam": {"type": "host-local", "dataDir": "$data",
        "ranges": [[{"subnet": "10.250.0.0/24"}], [{"subnet": "fd00:250::/64"}]],
        "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "runtimeConfig": {"portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}]}},
    {"type": "tuning", "dataDir": "$data/tuning", "sysctl": {"net.core.somaxconn": "512"}},
    {"type": "bandwidth", "ingressRate": 100000000, "ingressBurst": 1000000, "egressRate": 100000000, "egressBurst": 1000000},
    {"type": "firewall"}
  ]
}
JSON
)
types=(loopback bridge portmap tuning bandwidth firewall)
# Each plugin gets the list's name and cniVersion, as libcni injects them, and prevResult.
plugin_conf() {  # plugin_conf INDEX [PREV_RESULT]
  python3 -c 'import json,sys
l = json.loads(sys.argv[1]); p = l["plugins"][int(sys.argv[2])]
p.update(name=l["name"], cniVersion=l["cniVersion"])
if len(sys.argv) > 3 and sys.argv[3]: p["prevResult"] = json.loads(sys.argv[3])
print(json.dumps(p))' "$conflist" "$@"
}
run() {  # run COMMAND INDEX [PREV_RESULT], inside the throwaway host namespace
  ip netns exec "$host" env CNI_COMMAND=$1 CNI_CONTAINERID=demo-container CNI_NETNS=/run/netns/$ns \
    CNI_IFNAME=eth0 CNI_PATH=$bin "$bin/${types[$2]}" <<<"$(plugin_conf "$2" "${3:-}")"
}

echo "== cni-all $(build/cni-all --version | cut -d' ' -f2), applets: $(build/cni-all --list | cut -d' ' -f1 | tr '\n' ' ')"
result=""
for i in "${!types[@]}"; do
  result=$(run ADD "$i" "$result")
done
echo "== ADD loopback, bridge + host-local (dual stack, ipMasq), portmap, tuning, bandwidth, firewall; the final result:"
echo "$result"; echo
echo "== the container:"; ip -n "$ns" -br addr
echo "== the host side:"; ip -n "$host" -br addr show demo0; ip -n "$host" -br link show master demo0
echo "== nat rules (iptables-legacy-save -t nat):"; ip netns exec "$host" iptables-legacy-save -t nat | grep -- "-A"
echo "== shaping (tc):"; ip netns exec "$host" tc qdisc show | grep tbf
echo "== ping the gateway from the container:"; ip netns exec "$ns" ping -c1 -W2 10.250.0.1 | grep transmitted
ip netns exec "$ns" python3 -c 'import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"hello from the container\n")
    def log_message(self, *a): pass
s = http.server.HTTPServer(("0.0.0.0", 80), H); print("ready", flush=True); s.serve_forever()' > "$data/server.out" &
server=$!
for _ in $(seq 50); do grep -q ready "$data/server.out" 2>/dev/null && break; sleep 0.1; done
echo "== GET http://10.250.0.1:8080/ in the host namespace, through portmap's DNAT:"
ip netns exec "$host" python3 -c 'import urllib.request; print(urllib.request.urlopen("http://10.250.0.1:8080/", timeout=5).read().decode(), end="")'
echo "== CHECK every plugin (with the final result as prevResult)"
for i in 1 2 3 4 5; do run CHECK "$i" "$result" >/dev/null; done; echo "ok"
kill "$server"; server=""
echo "== DEL in reverse order"
for ((i = ${#types[@]} - 1; i >= 0; i--)); do run DEL "$i" "$result"; done
echo "== after DEL:"; ip -n "$ns" -br link
echo "per-container nat rules left: $(ip netns exec "$host" iptables-legacy-save -t nat | grep -c -e 'CNI-DN-' -e 'name: \\"demo\\"' || true)"
ls "$data/demo" | grep -v -e lock -e last_reserved -e index || echo "(no reservations left)"
echo "== done; namespaces and files removed"
