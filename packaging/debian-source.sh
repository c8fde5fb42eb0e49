#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fetches and unpacks one Debian source package into OUTDIR/src/SOURCE and prints that path,
# for the static build's libraries that Debian ships without static archives, or with archives
# built without per-function sections. The deb-src entry exists only for this script's apt
# calls (a private sources list and lists directory); the machine's apt configuration is not
# touched. VERSION is the installed binary package's (a binNMU suffix "+bN" is dropped); when
# the archive no longer has it, the current bookworm version is taken.
# usage: packaging/debian-source.sh SOURCE VERSION OUTDIR
set -euo pipefail
name=$1
version=${2%+b[0-9]*}
out=$(realpath -m "$3")
mkdir -p "$out/apt/lists/partial" "$out/src"
echo "deb-src http://deb.debian.org/debian bookworm main" > "$out/apt/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$out/apt/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
          -o "Dir::State::Lists=$out/apt/lists" -o "APT::Get::Only-Source=true" -qq)
apt-get "${apt_opts[@]}" update >&2
(cd "$out/src" && apt-get "${apt_opts[@]}" source --download-only "$name=$version" >&2 2>/dev/null) ||
  (cd "$out/src" && apt-get "${apt_opts[@]}" source --download-only "$name" >&2)
rm -rf "${out:?}/src/$name"
dpkg-source -x "$out"/src/"$name"_*.dsc "$out/src/$name" >/dev/null
echo "$out/src/$name"
