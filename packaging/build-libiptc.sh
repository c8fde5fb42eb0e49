#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds static libip4tc.a and libip6tc.a, which Debian does not ship, from Debian's own iptables
# source package (packaging/debian-source.sh), inside the directory given (a build folder).
# Idempotent: does nothing when both archives exist. CC and AR choose the compiler and archiver
# (a cross build's, from meson.build).
# usage: packaging/build-libiptc.sh OUTDIR
set -euo pipefail
out=$(realpath -m "$1")
[ -f "$out/libip4tc.a" ] && [ -f "$out/libip6tc.a" ] && exit 0
# the version whose headers we compile against
src=$("$(dirname "$0")/debian-source.sh" iptables "$(dpkg-query -W -f='${Version}' libiptc-dev)" "$out")
current=$(sed -n 's/^libxtables_vcurrent=//p' "$src/configure.ac")
age=$(sed -n 's/^libxtables_vage=//p' "$src/configure.ac")
major=$((current - age))
sed -e "s/@libxtables_vmajor@/$major/g" "$src/include/xtables-version.h.in" > "$src/include/xtables-version.h"
for lib in libip4tc libip6tc; do
  ${CC:-cc} -O2 -fPIC -D_GNU_SOURCE -ffunction-sections -fdata-sections -I "$src/include" -I "$src" \
    -c "$src/libiptc/$lib.c" -o "$out/$lib.o"
  ${AR:-ar} rcs "$out/$lib.a" "$out/$lib.o"
done
echo "built $out/libip4tc.a $out/libip6tc.a from iptables $(dpkg-parsechangelog -l "$src/debian/changelog" -S Version 2>/dev/null || echo source)" >&2
