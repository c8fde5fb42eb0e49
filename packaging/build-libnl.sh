#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds static libnl-3.a and libnl-route-3.a from Debian's own libnl3 source package
# (packaging/debian-source.sh), inside the directory given (a build folder). Debian's archives
# are built without per-function sections, so a static link takes every object whole: libnl's
# unused parts and what they call in glibc (getaddrinfo and the resolver, among others), about
# 100 kB of text, which a plugin call maps in full (the kernel faults file pages in 64 kB
# windows). These are the same sources and version, with -ffunction-sections -fdata-sections,
# without debug messages and assertions. Idempotent: does nothing when both archives exist.
# CNI_HOST (a GNU triplet, with CC its compiler) cross-builds them, as meson.build asks for a
# cross build.
# usage: packaging/build-libnl.sh OUTDIR
set -euo pipefail
out=$(realpath -m "$1")
[ -f "$out/libnl-3.a" ] && [ -f "$out/libnl-route-3.a" ] && exit 0
# the version whose headers we compile against
src=$("$(dirname "$0")/debian-source.sh" libnl3 "$(dpkg-query -W -f='${Version}' libnl-3-dev)" "$out")
(cd "$src" &&
  ./configure --quiet ${CNI_HOST:+--host="$CNI_HOST"} --disable-shared --enable-static --disable-cli --disable-debug \
    CFLAGS="-O2 -ffunction-sections -fdata-sections -DNDEBUG" >&2 &&
  make -j"$(nproc)" lib/libnl-3.la lib/libnl-route-3.la >&2)
cp "$src/lib/.libs/libnl-3.a" "$src/lib/.libs/libnl-route-3.a" "$out/"
echo "built $out/libnl-3.a $out/libnl-route-3.a from libnl3 $(dpkg-parsechangelog -l "$src/debian/changelog" -S Version 2>/dev/null || echo source)" >&2
