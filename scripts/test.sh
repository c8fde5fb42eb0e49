#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every test suite on a Debian 12 machine: installs the dependencies, builds into
# build-test/, runs `meson test` (unit, root, e2e; the root suite needs root, so meson runs
# under sudo when this script is not root), and ends with one line "N passed, N failed" that
# counts individual tests. Extra arguments go to `meson test` (e.g. --suite unit).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
[ -f build-test/build.ninja ] || meson setup build-test --buildtype=release >/dev/null
ninja -C build-test
# The binary that ships, for the `static` suite (a chroot with nothing else in it).
CNI_ALL_STATIC=$(packaging/build-static.sh)
# The Debian package, for the `deb` suite (lintian, install, purge).
CNI_ALL_DEB=$(packaging/build-deb.sh build-test/deb)
export CNI_ALL_STATIC CNI_ALL_DEB
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
set +e
$sudo env "CNI_ALL_STATIC=$CNI_ALL_STATIC" "CNI_ALL_DEB=$CNI_ALL_DEB" meson test -C build-test --no-rebuild --print-errorlogs "$@"
rc=$?
set -e
python3 scripts/test_summary.py build-test/meson-logs/testlog.json
exit $rc
