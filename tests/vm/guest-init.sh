#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# PID 1 of the test VM, on the host's root (over 9p). It keeps every change inside the guest:
# /proc, /sys, a tmpfs on /run (network namespaces, the xtables lock), one on /var/lib/cni, and TMPDIR=/run/tmp for
# scratch files (/tmp itself stays the host's: the build tree may live there);
# the guest's kernel modules come from the extracted package through a modprobe wrapper, for
# the kernel's own autoloading and iptables' alike. It runs the job the host wrote, records
# its output, errors and exit code next to it, and powers off.
mount -t proc proc /proc
mount -t sysfs sys /sys
job=""
for a in $(cat /proc/cmdline); do case $a in cniall.job=*) job=${a#cniall.job=};; esac; done
mount -t tmpfs tmpfs /run
mkdir -p /run/tmp
export TMPDIR=/run/tmp
dir=$(dirname "$job")
# The kernel asks for "netdev-NAME" on every lookup of a missing device by name (ip link show
# dev X after a DEL); no module the tests use answers that, and running modprobe for each costs
# most of a second under emulation.
printf '#!/bin/sh\ncase "$*" in *netdev-*) exit 1;; esac\nexec /usr/sbin/modprobe -d %s/kernel/root "$@"\n' \
  "$(cat "$dir/kernel-dir")" > /run/modprobe
chmod +x /run/modprobe
echo /run/modprobe > /proc/sys/kernel/modprobe
# An empty /var/lib/cni of the guest's own; nothing is made on the host's filesystem for it.
# Without it the job does not run: its plugins would write the host's /var/lib/cni.
if "$(dirname "$0")/../lib/private_var_lib_cni.sh" /run/var-lib 2> "$dir/err"; then
  ip link set lo up
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /bin/sh "$job" > "$dir/out" 2> "$dir/err"
  echo $? > "$dir/rc"
else
  echo 1 > "$dir/rc"
fi
sync
echo o > /proc/sysrq-trigger
sleep 10  # the power-off is asynchronous; PID 1 must not exit before it
