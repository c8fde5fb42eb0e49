#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the release tarball of the static cni-all for this machine's architecture, laid out as
# the reference's (`tar -C /opt/cni/bin -xzf`): cni-all and one launcher per applet, as
# `cni-all install` lays them down, owned by root, in name order, dated from the last commit so
# two builds of one commit give the same archive. Beside it the SHA-256 and SHA-512 sums files,
# as the reference publishes them. Cross-built arm64 releases are not made yet (docs/install.md).
# usage: scripts/release.sh [OUTDIR]          (default dist/)
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-dist}")
case "$(uname -m)" in
  x86_64) arch=amd64 ;;
  aarch64) arch=arm64 ;;
  *) echo "release.sh: no release is made for $(uname -m)" >&2; exit 2 ;;
esac
bin=$(packaging/build-static.sh build-static)
version=$("$bin" --version | head -1 | cut -d' ' -f2)
name="cni-all-linux-$arch-v$version.tgz"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
"$bin" install "$stage" >/dev/null
mkdir -p "$out"
epoch=$(git log -1 --format=%ct 2>/dev/null || echo 0)
tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" -cf - . | gzip -n -9 > "$out/$name"
(cd "$out" && sha256sum "$name" > "$name.sha256" && sha512sum "$name" > "$name.sha512")
echo "$out/$name"
