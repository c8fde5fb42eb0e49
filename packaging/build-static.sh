#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the binary that ships: fully static, link-time optimised for size (-Os, which measured
# no slower than -O3 here: the applets' time is kernel work), stripped. Into build-static/ (or
# the directory given); libiptc's static archives come from Debian's iptables source package
# (packaging/build-libiptc.sh, run by meson). Prints the binary's path.
# usage: packaging/build-static.sh [BUILDDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-static}
opts=(-Dstatic=true -Dtests=false -Db_lto=true -Doptimization=s)
if [ -f "$dir/build.ninja" ]; then meson configure "$dir" "${opts[@]}" >/dev/null
else meson setup "$dir" "${opts[@]}" >/dev/null; fi
ninja -C "$dir" >/dev/null 2>&1 || ninja -C "$dir"
echo "$(realpath "$dir")/cni-all"
