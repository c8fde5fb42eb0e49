#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds static libip4tc.a and libip6tc.a, which Debian does not ship, from Debian's own iptables
# source package, inside the directory given (a build folder). The deb-src entry exists only
# for this script's apt calls (a private sources list and lists directory); the machine's apt
# configuration is not touched. Idempotent: does nothing when both archives exist.
# usage: packaging/build-libiptc.sh OUTDIR
set -euo pipefail
out=$(realpath -m "$1")
[ -f "$out/libip4tc.a" ] && [ -f "$out/libip6tc.a" ] && exit 0
mkdir -p "$out/apt/lists/partial" "$out/src"
echo "deb-src http://deb.debian.org/debian bookworm main" > "$out/apt/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$out/apt/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
          -o "Dir::State::Lists=$out/apt/lists" -o "APT::Get::Only-Source=true" -qq)
version=$(dpkg-query -W -f='${Version}' libiptc-dev)  # the headers we compile against
apt-get "${apt_opts[@]}" update >&2
(cd "$out/src" && apt-get "${apt_opts[@]}" source --download-only "iptables=$version" >&2 2>/dev/null) ||
  (cd "$out/src" && apt-get "${apt_opts[@]}" source --download-only iptables >&2)
rm -rf "$out/src/iptables"
dpkg-source -x "$out"/src/iptables_*.dsc "$out/src/iptables" >/dev/null
src="$out/src/iptables"
current=$(sed -n 's/^libxtables_vcurrent=//p' "$src/configure.ac")
age=$(sed -n 's/^libxtables_vage=//p' "$src/configure.ac")
major=$((current - age))
sed -e "s/@libxtables_vmajor@/$major/g" "$src/include/xtables-version.h.in" > "$src/include/xtables-version.h"
for lib in libip4tc libip6tc; do
  ${CC:-cc} -O2 -fPIC -D_GNU_SOURCE -I "$src/include" -I "$src" -c "$src/libiptc/$lib.c" -o "$out/$lib.o"
  ar rcs "$out/$lib.a" "$out/$lib.o"
done
echo "built $out/libip4tc.a $out/libip6tc.a from iptables $(dpkg-parsechangelog -l "$src/debian/changelog" -S Version 2>/dev/null || echo source)" >&2
