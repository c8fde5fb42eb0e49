#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Run inside a private mount namespace: gives it an empty tmpfs at /var/lib/cni without making
# anything on the machine's own filesystem, even where the machine has no /var/lib/cni. /var/lib
# becomes an overlay whose writable layer is the directory $1 (made here; the caller removes
# it), the mount point is made in that layer, and the tmpfs goes on it. Test processes that run
# at the same time each get their own, and none has to create or remove the real directory.
set -e
scratch=$1
mkdir -p "$scratch/upper" "$scratch/work"
mount -t overlay overlay -o "lowerdir=/var/lib,upperdir=$scratch/upper,workdir=$scratch/work" /var/lib
mkdir -p /var/lib/cni
mount -t tmpfs tmpfs /var/lib/cni
