#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every test suite on a Debian 12 machine: installs the dependencies, builds into
# build-test/, runs `meson test` (unit, root, e2e; the root suite needs root, so meson runs
# under sudo when this script is not root) while scripts/build-later.sh builds the static
# binary, the arm64 one, the Debian package and the sanitizer build beside it at the lowest
# priority (the suites that use them wait for them), then the suites that run our code once
# more on the sanitizer build in build-sanitize/, and ends with one line "N passed, N failed"
# that counts individual tests of both. Extra arguments go to `meson test` (e.g. --suite unit)
# and skip the sanitizer pass.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase's wall time, printed at the end (before the summary line).
phases=()
started=$SECONDS
phase_done() { phases+=("$(printf '%-34s %4d s' "$1" $((SECONDS - started)))"); started=$SECONDS; }
scripts/install-deps.sh
phase_done "install dependencies"
[ -f build-test/build.ninja ] || meson setup build-test --buildtype=release >/dev/null
# The test VM's kernel (a Debian package download and a module index) is fetched meanwhile.
tests/vm/prepare-kernel.sh build-test/tests/vm/kernel > build-test/vm-kernel.log 2>&1 &
kernel_job=$!
ninja -C build-test
phase_done "build (release, tests)"
# The static binary (the `static` suite's chroot, podman's image), the arm64 one and its unit
# tests (the `arm64` suite, under qemu-user), the Debian package (`deb`: lintian, install,
# purge) and, for a full run, the sanitizer build: built beside the tests, in the CPU time they
# leave idle, each suite waiting for its own (tests/lib/cnitest.py, artifact()).
artifacts=build-test/artifacts
rm -rf "$artifacts" && mkdir -p "$artifacts"
later=("$artifacts")
[ $# -gt 0 ] || later+=(--sanitizer)
setsid -w scripts/build-later.sh "${later[@]}" > "$artifacts/build-later.log" 2>&1 &
later_job=$!
wait "$kernel_job" || { cat build-test/vm-kernel.log >&2; exit 1; }
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
# Suites running side by side each mount a private tmpfs on /run/cni and /run/netns
# (tests/lib/private_state.py; a mount point a suite makes and removes when the node has none):
# made once here instead, and removed again at the end.
made_run_dirs=()
for d in /run/cni /run/netns; do
  if [ ! -d "$d" ]; then $sudo mkdir "$d" && made_run_dirs+=("$d"); fi
done
trap 'for d in "${made_run_dirs[@]}"; do $sudo rmdir "$d" 2>/dev/null || true; done' EXIT
# One suite more than there are cores: most root suites wait on the kernel, and run beside the
# VM and fuzz suites, which keep the cores busy (tests/meson.build).
side_by_side=$(($(nproc) + 1))
set +e
$sudo env "CNI_TEST_ARTIFACTS=$(realpath "$artifacts")" meson test -C build-test --no-rebuild --print-errorlogs \
  --num-processes "$side_by_side" "$@"
rc=$?
phase_done "tests (builds beside them)"
wait "$later_job" || { rc=1; for f in "$artifacts"/*.failed; do [ -e "$f" ] && tail -40 "$(cat "$f")" >&2; done; }
set -e
phase_done "builds left after the tests"
logs=(build-test/meson-logs/testlog.json)
# A full run (no extra arguments) repeats the suites that run our code on its own (not the
# packaging, podman and VM ones, nor the three that mostly run Go's plugins) on a build with
# AddressSanitizer, UndefinedBehaviorSanitizer and LeakSanitizer; its last test fails on any
# report a plugin, the daemon or a test binary wrote (src/sanitizer_options.cpp.in). Named suites
# run in the order named (not by priority): the two fuzz shards, the slowest, first, with the
# others beside them; os, which runs alone, last.
if [ $# -eq 0 ] && [ -f "$artifacts/SANITIZER" ]; then
  rm -rf build-sanitize/sanitizer-reports && mkdir build-sanitize/sanitizer-reports
  set +e
  # The hostile-input shards try 6 single-key and 1 multi-key variants per applet (the release
  # pass: 16 and 2; tests/netns/test_fuzz.py), drawn with another seed than the release pass's,
  # and every hostile path: under the sanitizers a call costs several times more (12 and 2 took
  # 25 of the pass's 68 minutes of suite time).
  $sudo env CNI_FUZZ_SAMPLE=6 CNI_FUZZ_MULTI=1 CNI_FUZZ_SEED=$(( $(date +%s) / 86400 + 100000 )) \
    meson test -C build-sanitize --no-rebuild --print-errorlogs --timeout-multiplier 3 --num-processes "$side_by_side" \
    fuzz-1 fuzz-2 unit regexp-diff cli logging e2e loopback host-local static-ipam ptp bridge macvlan tap tuning sbr portmap firewall bandwidth flannel dhcp dhcp6 exec vpc-eni vpc-eni-imds etcd-client cluster-ipam \
    os sanitizer-reports
  [ $? -eq 0 ] || rc=1
  set -e
  phase_done "tests (sanitizers)"
  logs+=(build-sanitize/meson-logs/testlog.json)
fi
echo "phase times (total $SECONDS s):"
printf '  %s\n' "${phases[@]}"
sed 's/^/    /' "$artifacts/times" 2>/dev/null || true
python3 scripts/test_summary.py "${logs[@]}"
exit $rc
