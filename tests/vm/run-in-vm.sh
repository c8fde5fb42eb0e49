#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs a command as root inside the test VM (Debian's kernel under QEMU with software
# emulation; the host's root shared read-write over 9p, so the build tree is there) and
# relays its output and exit code. For tests that need kernel features this machine lacks
# (dummy, 8021q, ipvlan, vrf, VLAN-filtering bridges).
# usage: tests/vm/run-in-vm.sh WORKDIR COMMAND [ARGS...]   (WORKDIR: in the build folder)
# CNI_VM_APPEND adds to the guest kernel's command line (e.g. ipv6.disable=1).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(realpath -m "$1"); shift
"$here/prepare-kernel.sh" "$work/kernel"
limit=${CNI_VM_TIMEOUT:-1200}
run=$(mktemp -d "$work/run.XXXXXX")
trap 'rm -rf "$run"' EXIT
echo "$work" > "$run/kernel-dir"
{ echo "cd $(printf %q "$PWD")"; echo "export CNI_TEST_IN_VM=1"; for v in CNI_ALL BUILD_ROOT CNI_TEST_FILTER CNI_TEST_TRACE CNI_TEST_SHARD; do [ -n "${!v:-}" ] && echo "export $v=$(printf %q "${!v}")"; done
  printf '%q ' "$@"; echo; } > "$run/job.sh"
timeout "$limit" qemu-system-x86_64 -accel tcg -m 1024 -smp 1 -nographic -no-reboot \
  -kernel "$work/kernel/vmlinuz" -initrd "$work/kernel/initrd.gz" \
  -append "console=ttyS0 quiet loglevel=2 panic=-1 cniall.init=$here/guest-init.sh cniall.job=$run/job.sh ${CNI_VM_APPEND:-}" \
  -virtfs local,path=/,mount_tag=hostroot,security_model=passthrough,id=hostroot,multidevs=remap > "$run/console" 2>&1 || true
if [ ! -f "$run/rc" ]; then
  { echo "# the test VM did not finish in $limit s; its console:"; sed 's/^/# /' "$run/console" | tail -40
    echo "# the job's output so far:"; sed 's/^/# /' "$run/out" 2>/dev/null | tail -60
    sed 's/^/# /' "$run/err" 2>/dev/null | tail -60; } | tee /dev/stderr
  exit 1
fi
cat "$run/out"
cat "$run/err" >&2 2>/dev/null || true
exit "$(cat "$run/rc")"
