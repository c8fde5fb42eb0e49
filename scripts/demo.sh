#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The demo, on a fresh Debian 12 machine: installs the dependencies, builds cni-all, installs it
# with one launcher per applet into a temporary plugin directory, and runs a real conflist
# (loopback; bridge with host-local IPAM, dual stack, masquerading; portmap; tuning; bandwidth;
# firewall) against throwaway "host" and "container" network namespaces with `cni-all exec`, the
# runtime built into the binary: it loads the conflist by name, injects name, cniVersion,
# prevResult and the runtimeConfig of each plugin's capabilities (port mappings, bandwidth), and
# caches the result as libcni does. All of it runs inside the host namespace. It prints the
# result and the state, serves HTTP in the container and fetches it through the published host
# port, runs CHECK and STATUS, then DEL (reverse order, with the cached result), and removes
# everything it made.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --demo  # what building and the demo need; scripts/test.sh installs the rest
[ -f build/build.ninja ] || meson setup build -Dtests=false >/dev/null
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
mkdir -p "$data/net.d"
cat > "$data/net.d/10-demo.conflist" <<JSON
{
  "cniVersion": "1.1.0",
  "name": "demo",
  "plugins": [
    {"type": "loopback"},
    {"type": "bridge", "bridge": "demo0", "isGateway": true, "ipMasq": true, "hairpinMode": true,
      "ipam": {"type": "host-local", "dataDir": "$data/ipam",
        "ranges": [[{"subnet": "10.250.0.0/24"}], [{"subnet": "fd00:250::/64"}]],
        "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "tuning", "dataDir": "$data/tuning", "sysctl": {"net.core.somaxconn": "512"}},
    {"type": "bandwidth", "capabilities": {"bandwidth": true}},
    {"type": "firewall"}
  ]
}
JSON
# What a runtime passes as capability args: the port mapping and the pod's bandwidth limits.
caps='{"portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}],
       "bandwidth": {"ingressRate": 100000000, "ingressBurst": 1000000, "egressRate": 100000000, "egressBurst": 1000000}}'
cni() {  # cni COMMAND [NETNS]: cni-all exec inside the throwaway host namespace
  ip netns exec "$host" "$bin/cni-all" exec "$1" demo ${2:+"$2"} --conf-dir "$data/net.d" --cache-dir "$data/cache" \
    --container-id demo-container --capability-args "$caps"
}

echo "== cni-all $(build/cni-all --version | cut -d' ' -f2), applets: $(build/cni-all --list | cut -d' ' -f1 | tr '\n' ' ')"
echo "== cni-all exec add demo /run/netns/$ns: loopback, bridge + host-local (dual stack, ipMasq), portmap, tuning, bandwidth, firewall; the result:"
cni add "/run/netns/$ns"; echo
echo "== the cached result: $(ls "$data/cache/results")"
echo "== the container:"; ip -n "$ns" -br addr
echo "== the host side:"; ip -n "$host" -br addr show demo0; ip -n "$host" -br link show master demo0
# The rules go where this node's `iptables` writes (iptables-nft on Debian 12, else legacy).
nat_rules() { ip netns exec "$host" iptables-legacy-save -t nat; ip netns exec "$host" iptables-nft-save -t nat 2>/dev/null; }
echo "== nat rules (iptables-save -t nat; \`iptables\` here is $(basename "$(readlink -f "$(command -v iptables)")")):"; nat_rules | grep -- "-A"
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
echo "== cni-all exec check (every plugin, the cached result as prevResult), then status"
cni check "/run/netns/$ns"; cni status; echo "ok"
kill "$server"; server=""
echo "== cni-all exec del (reverse order, the cached result as prevResult)"
cni del "/run/netns/$ns"
echo "== after DEL:"; ip -n "$ns" -br link
echo "per-container nat rules left: $(nat_rules | grep -c -e 'CNI-DN-' -e 'name: \\"demo\\"' || true)"
ls "$data/ipam/demo" | grep -v -e lock -e last_reserved -e index || echo "(no reservations left)"
ls "$data/cache/results" 2>/dev/null | grep . || echo "(no cached result left)"
echo "== done; namespaces and files removed"
