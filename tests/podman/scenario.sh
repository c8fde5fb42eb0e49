#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The podman scenario of test_podman.py, run inside a throwaway network namespace and a private
# mount namespace (so /var/lib/cni and /run/netns changes stay in it). Podman 4.3 with its CNI
# backend runs our applets from $BIN; everything podman writes is under $WORK. Prints
# "KEY VALUE" lines the test checks; any failing step exits non-zero.
set -euo pipefail
save() { iptables-legacy-save "$@"; iptables-nft-save "$@" 2>/dev/null; }  # our applets write the node's variant
"$(dirname "$0")/../lib/private_var_lib_cni.sh" "$WORK/var-lib"  # an empty /var/lib/cni of our own
mount -t tmpfs tmpfs /usr/lib/cni  # Debian's Go plugins are out of reach: only ours can run
mkdir -p "$WORK/netconf" "$WORK/storage" "$WORK/run" "$WORK/tmp" "$WORK/rootfs/bin" "$WORK/rootfs/www"
cat > "$WORK/containers.conf" <<CONF
[containers]
netns = "private"
[network]
network_backend = "cni"
cni_plugin_dirs = ["$BIN"]
network_config_dir = "$WORK/netconf"
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$WORK/events.log"
runtime = "runc"
tmp_dir = "$WORK/tmp"
static_dir = "$WORK/storage/libpod"
CONF
cat > "$WORK/storage.conf" <<CONF
[storage]
driver = "vfs"
runroot = "$WORK/run"
graphroot = "$WORK/storage"
CONF
export CONTAINERS_CONF="$WORK/containers.conf" CONTAINERS_STORAGE_CONF="$WORK/storage.conf"
p() { podman --cgroup-manager=cgroupfs --runtime=runc "$@"; }

# An image from busybox-static: /bin/busybox and an httpd document root.
cp /bin/busybox "$WORK/rootfs/bin/busybox"
for tool in sh httpd; do ln -s busybox "$WORK/rootfs/bin/$tool"; done
echo "hello from podman" > "$WORK/rootfs/www/index.html"
tar -C "$WORK/rootfs" -cf "$WORK/rootfs.tar" .
p import -q "$WORK/rootfs.tar" localhost/cni-all-busybox >/dev/null

echo "backend $(p info --format '{{.Host.NetworkBackend}}')"
p network create --subnet 10.219.0.0/24 cniallnet >/dev/null
echo "plugins $(python3 -c 'import json,sys; print(",".join(p["type"] for p in json.load(open(sys.argv[1]))["plugins"]))' "$WORK/netconf/cniallnet.conflist")"
ulimits=(--ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
cid=$(p run -d "${ulimits[@]}" --network cniallnet -p 18080:80 localhost/cni-all-busybox /bin/httpd -f -p 80 -h /www)
ip=$(p inspect -f '{{(index .NetworkSettings.Networks "cniallnet").IPAddress}}' "$cid")
gw=$(p inspect -f '{{(index .NetworkSettings.Networks "cniallnet").Gateway}}' "$cid")
echo "ip $ip"
echo "gateway $gw"
fetch() { python3 -c 'import sys, urllib.request
for _ in range(50):
    try:
        print(urllib.request.urlopen(sys.argv[1], timeout=2).read().decode().strip()); break
    except OSError:
        import time; time.sleep(0.1)
else:
    sys.exit("no answer from " + sys.argv[1])' "$1"; }
echo "direct $(fetch "http://$ip:80/")"
echo "published $(fetch "http://$gw:18080/")"
echo "cache_during $(ls /var/lib/cni/results | wc -l)"
echo "dnat_during $(save -t nat | grep -c 'CNI-DN-' || true)"
p rm -f -t 0 "$cid" >/dev/null
echo "veths_after $(ip -o link show type veth | wc -l)"
echo "dnat_after $(save -t nat | grep -c 'CNI-DN-' || true)"
echo "rules_after $(save | grep -c -e "$ip" -e "$cid" || true)"
echo "cache_after $(ls /var/lib/cni/results | wc -l)"
echo "allocations_after $(ls /var/lib/cni/networks/cniallnet 2>/dev/null | grep -c '^10\.' || true)"
p network rm -f cniallnet >/dev/null
p rmi -f localhost/cni-all-busybox >/dev/null
echo "done 1"
