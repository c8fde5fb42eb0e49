#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the release tarballs of the static cni-all, for amd64 and arm64 (or the architectures
# given), each laid out as the reference's (`tar -C /opt/cni/bin -xzf`): cni-all and one launcher
# per applet, as `cni-all install` lays them down, owned by root, in name order, dated from the
# last commit so two builds of one commit give the same archive; no entry for the folder, so
# extracting leaves the target directory's mode and owner alone. Beside each, the SHA-256 and
# SHA-512 sums files, as the reference publishes them. The architecture that is not this
# machine's is cross-built (packaging/build-static.sh --arch) and its `install` run under
# qemu-user. Also the installer image of all of them, as one multi-architecture OCI image index
# (packaging/build-oci.py): cni-all-oci-v<version>.tar.
# usage: scripts/release.sh [OUTDIR [ARCH...]]          (default dist/, amd64 arm64)
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-dist}")
shift || true
arches=("$@")
((${#arches[@]})) || arches=(amd64 arm64)
native=$(dpkg --print-architecture)
declare -A qemu=([arm64]=qemu-aarch64 [amd64]=qemu-x86_64)
mkdir -p "$out"
epoch=$(git log -1 --format=%ct 2>/dev/null || echo 0)
binaries=()
for arch in "${arches[@]}"; do
  [ -n "${qemu[$arch]:-}" ] || { echo "release.sh: no release is made for $arch" >&2; exit 2; }
  bin=$(packaging/build-static.sh --arch "$arch")
  run=("$bin")
  [ "$arch" = "$native" ] || run=("${qemu[$arch]}" "$bin")
  version=$("${run[@]}" --version | head -1 | cut -d' ' -f2)
  name="cni-all-linux-$arch-v$version.tgz"
  stage=$(mktemp -d)
  "${run[@]}" install "$stage" >/dev/null
  # The files by name (./cni-all, ./bridge...), without an entry for the folder itself: GNU tar
  # run as root gives the directory it extracts into the mode, owner and time of such an entry,
  # and the node's /opt/cni/bin keeps its own.
  (cd "$stage" && find . -mindepth 1 -maxdepth 1 -print0 | LC_ALL=C sort -z) |
    tar -C "$stage" --no-recursion --owner=0 --group=0 --numeric-owner --mtime="@$epoch" -cf - --null --files-from=- |
    gzip -n -9 > "$out/$name"
  rm -rf "$stage"
  (cd "$out" && sha256sum "$name" > "$name.sha256" && sha512sum "$name" > "$name.sha512")
  binaries+=("$bin")
  echo "$out/$name"
done
python3 packaging/build-oci.py "${binaries[@]}" "$out/cni-all-oci-v$version.tar" --tag "cni-all:v$version" >/dev/null
echo "$out/cni-all-oci-v$version.tar"
