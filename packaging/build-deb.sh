#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Debian package from a clean copy of the source tree (the tracked files only, with
# packaging/debian as debian/) with dpkg-buildpackage, into OUTDIR (default build-deb/). Prints
# the .deb's path. The build runs in a scratch directory, so build folders are not touched.
# usage: packaging/build-deb.sh [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-build-deb}")
version=$(dpkg-parsechangelog -l packaging/debian/changelog -S Version)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
src="$scratch/cni-all-$version"
mkdir -p "$src" "$out"
git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$src"
cp -r packaging/debian "$src/debian"
(cd "$src" && DEB_BUILD_OPTIONS="parallel=$(nproc) ${DEB_BUILD_OPTIONS:-}" dpkg-buildpackage -us -uc -b >"$scratch/build.log" 2>&1) || { tail -40 "$scratch/build.log" >&2; exit 1; }
cp "$scratch"/cni-all_"$version"_*.deb "$out/"
ls "$out"/cni-all_"$version"_*.deb
