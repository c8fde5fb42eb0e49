#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the binary that ships: fully static, link-time optimised for size (-Os, which measured
# no slower than -O3 here: the applets' time is kernel work), stripped. Into build-static/ (or
# the directory given); libiptc's static archives come from Debian's iptables source package
# (packaging/build-libiptc.sh, run by meson). `--arch arm64` cross-builds the arm64 binary with
# Debian's cross toolchain (packaging/cross/arm64.ini) into build-static-arm64/; `--unit-tests`
# also builds that folder's unit tests (tests/unit-tests), to run under qemu-user. Prints the
# binary's path.
# usage: packaging/build-static.sh [--arch amd64|arm64] [--unit-tests] [BUILDDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
arch="" unit_tests=false
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) arch=$2; shift 2 ;;
    --unit-tests) unit_tests=true; shift ;;
    *) break ;;
  esac
done
native=$(dpkg --print-architecture)
arch=${arch:-$native}
cross=()
if [ "$arch" != "$native" ]; then
  [ -f "packaging/cross/$arch.ini" ] || { echo "build-static.sh: no cross file for $arch" >&2; exit 2; }
  cross=(--cross-file "packaging/cross/$arch.ini")
fi
dir=${1:-build-static$([ "$arch" = "$native" ] || echo "-$arch")}
opts=(-Dstatic=true -Db_lto=true -Doptimization=s)
$unit_tests && opts+=(-Dtests=true)  # a folder set up with them keeps them
if [ -f "$dir/build.ninja" ]; then meson configure "$dir" "${opts[@]}" >/dev/null
elif ! log=$(meson setup "${cross[@]}" "$dir" "${opts[@]}" -Dtests=$unit_tests 2>&1); then
  echo "$log" >&2
  exit 1
fi
targets=()  # natively all: cni-all and the bench's helpers
((${#cross[@]} == 0)) || targets=(cni-all)
$unit_tests && targets=(cni-all tests/unit-tests)
ninja -C "$dir" "${targets[@]}" >/dev/null 2>&1 || ninja -C "$dir" "${targets[@]}"
echo "$(realpath "$dir")/cni-all"
