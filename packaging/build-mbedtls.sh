#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds static libmbedtls.a, libmbedx509.a and libmbedcrypto.a from Debian's own mbedtls source
# package (packaging/debian-source.sh), inside the directory given (a build folder), for
# core/http's TLS. Debian's archives are built without per-function sections, so a static link
# would take every object whole; and a cross build has none for its machine. These are the same
# sources, version and configuration (Debian's config.h, as installed: the header the code
# compiles against), with -ffunction-sections
# -fdata-sections. Idempotent: does nothing when the three archives exist. CNI_HOST (a GNU
# triplet, with CC and AR its tools) cross-builds them, as meson.build asks for a cross build.
# usage: packaging/build-mbedtls.sh OUTDIR
set -euo pipefail
out=$(realpath -m "$1")
[ -f "$out/libmbedtls.a" ] && [ -f "$out/libmbedx509.a" ] && [ -f "$out/libmbedcrypto.a" ] && exit 0
# the version whose headers we compile against
src=$("$(dirname "$0")/debian-source.sh" mbedtls "$(dpkg-query -W -f='${Version}' libmbedtls-dev)" "$out")
# Debian's build sets options in config.h (debian/rules: threading, CMAC...): the installed
# header is that configuration, which the library must be built with.
cp /usr/include/mbedtls/config.h "$src/include/mbedtls/config.h"
make -C "$src/library" -j"$(nproc)" CC="${CC:-cc}" AR="${AR:-ar}" \
  CFLAGS="-Os -ffunction-sections -fdata-sections -DNDEBUG" libmbedcrypto.a libmbedx509.a libmbedtls.a >&2
cp "$src/library/libmbedtls.a" "$src/library/libmbedx509.a" "$src/library/libmbedcrypto.a" "$out/"
echo "built $out/libmbed{tls,x509,crypto}.a from mbedtls $(dpkg-parsechangelog -l "$src/debian/changelog" -S Version 2>/dev/null || echo source)" >&2
