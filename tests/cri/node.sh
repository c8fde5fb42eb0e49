#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The node of the cri suite: run by test_cri.py inside a throwaway network namespace and a new
# private mount namespace, it makes that mount namespace look like a node's own, then stays as
# its anchor (containerd is started into it with nsenter, and started again after a restart):
# - /sys is this network namespace's sysfs, with the machine's cgroup hierarchies mounted again
#   on it (listed in $1/cgroup-mounts), as runc needs them;
# - /run is an empty tmpfs: containerd's shims (/run/containerd), iptables' lock and the plugins'
#   /run/cni stay in here;
# - /var/lib/cni is an empty tmpfs (private_var_lib_cni.sh): host-local and libcni's cache.
# Nothing is made on the machine's own filesystem outside $1.
set -euo pipefail
work=$1
ip link set lo up
mount -t sysfs sysfs /sys
# cgroup v1 or hybrid: a tmpfs holding one mount per hierarchy; v2 alone: its mount is /sys/fs/cgroup.
grep -q '^/sys/fs/cgroup ' "$work/cgroup-mounts" || mount -t tmpfs -o mode=755 cgroup /sys/fs/cgroup
while read -r dir fstype options; do
  mkdir -p "$dir"
  mount -t "$fstype" -o "$options" "$fstype" "$dir"
done < "$work/cgroup-mounts"
mount -t tmpfs -o mode=755 run /run
"$(dirname "$0")/../lib/private_var_lib_cni.sh" "$work/var-lib"
touch "$work/node-ready"
exec sleep infinity
