#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the static cni-all (what ships) into build-static/ and runs the side-by-side benchmark
# against Debian's Go plugins in /usr/lib/cni; extra arguments go to bench/run.py
# (e.g. --iterations 100 --markdown report.md). Needs root for the namespace scenarios.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --bench
packaging/build-static.sh >/dev/null
[ -f build/build.ninja ] || meson setup build >/dev/null  # the dynamic build, for static vs dynamic
ninja -C build cni-all >/dev/null
if [ "$(id -u)" -ne 0 ]; then exec sudo "$0" "$@"; fi
exec /usr/bin/python3 bench/run.py --cni-all build-static/cni-all --spawn-timer build-static/bench/spawn-timer \
  --dynamic build/cni-all "$@"
