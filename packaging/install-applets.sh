#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# meson install's last step: the installed cni-all lays down one launcher per applet beside
# itself (`cni-all install`, src/install.hpp), the same layout the DaemonSet and the image get.
# usage: install-applets.sh BINDIR   (DESTDIR, when set, is put in front)
set -eu
dir="${DESTDIR:-}$1"
"$dir/cni-all" install "$dir" >/dev/null
