#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The builds scripts/test.sh runs beside the release pass's tests, one after the other, at the
# lowest priority (nice 19, and its session's autogroup at 19 where the kernel groups by
# session), so the tests keep the CPU and the builds take what the tests leave idle: the
# static binary, the arm64 one with its unit tests, the Debian package and, with --sanitizer,
# the sanitizer build (build-sanitize/). After each, DIR/NAME holds the artifact's path for the
# suites that use it (tests/lib/cnitest.py, artifact()), or DIR/NAME.failed the path of its log
# in DIR; DIR/times gets one line per build with its wall time. Exit status 1 if any failed.
# usage: scripts/build-later.sh DIR [--sanitizer]
set -uo pipefail
cd "$(dirname "$0")/.."
dir=$(realpath "$1")
sanitizer=${2:-}
echo 19 > /proc/self/autogroup 2>/dev/null || true
failed=0
# built NAME COMMAND...: runs the build; its last line of output is the artifact's path.
built() {
  local name=$1 started=$SECONDS out
  shift
  if out=$(nice -n 19 "$@" 2> "$dir/$name.log"); then
    printf '%s\n' "${out##*$'\n'}" > "$dir/$name.tmp" && mv "$dir/$name.tmp" "$dir/$name"
  else
    echo "$dir/$name.log" > "$dir/$name.failed"
    failed=1
  fi
  printf '%-34s %4d s\n' "build ($name, beside the tests)" $((SECONDS - started)) >> "$dir/times"
}
built CNI_ALL_STATIC packaging/build-static.sh
built CNI_ALL_STATIC_ARM64 packaging/build-static.sh --arch arm64 --unit-tests
if [ -f "$dir/CNI_ALL_STATIC_ARM64" ]; then
  echo "$(dirname "$(cat "$dir/CNI_ALL_STATIC_ARM64")")/tests/unit-tests" > "$dir/CNI_ALL_ARM64_UNIT_TESTS"
else
  echo "$dir/CNI_ALL_STATIC_ARM64.log" > "$dir/CNI_ALL_ARM64_UNIT_TESTS.failed"
fi
# The package's suite checks its packaging (lintian, install, launchers, purge), not its code
# generation: built unoptimised (Debian's noopt), it compiles in half the time.
built CNI_ALL_DEB env DEB_BUILD_OPTIONS=noopt packaging/build-deb.sh build-test/deb
if [ "$sanitizer" = --sanitizer ]; then
  # Unoptimised, with line tables only (-g1): a quarter of the compile time of -O1 -g, and
  # nothing the sanitizers check is lost (an unoptimised build hides no access from them).
  # Without UBSan's null and alignment checks, a check site on every pointer use: they were four
  # fifths of its 54 MB of data, which every process start relocated (0.4 s per plugin call); a
  # null dereference still ends in ASan's SEGV report, and a misaligned access is no fault on the
  # machines we ship for. Not position-independent, for the same reason.
  [ -f build-sanitize/build.ninja ] ||
    meson setup build-sanitize -Doptimization=0 -Ddebug=false "-Dcpp_args=-g1 -fno-sanitize=null,alignment" \
      -Dcpp_link_args=-no-pie -Db_sanitize=address,undefined -Db_lundef=false >/dev/null
  built SANITIZER sh -c 'ninja -C build-sanitize >&2 && echo build-sanitize'
fi
exit $failed
