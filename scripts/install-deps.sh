#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what cni-all needs to build, test and demo on Debian 12, from Debian's packages only:
# `install-deps.sh --demo` only what building and the demo need (scripts/demo.sh), with no
# argument also everything the test suites need (scripts/test.sh), `--bench` that and what the
# benchmark needs (its plots). Idempotent: apt runs only when something is missing. Uses sudo when not run as root. dpkg skips its fsyncs
# (--force-unsafe-io): on a fresh machine they were most of the install's time, and a crash
# mid-install is repaired by running this again.
set -euo pipefail
packages=(
  meson ninja-build pkg-config g++            # build
  libnl-3-dev libnl-route-3-dev libiptc-dev   # netlink and iptables
  rapidjson-dev                               # JSON
  libmbedtls-dev                              # TLS (core/http: cluster-ipam's etcd)
  python3 iproute2 iputils-ping iptables      # the demo (and the tests): namespaces, traffic, rule dumps
)
[ "${1:-}" = "--demo" ] || packages+=(
  catch2                                      # unit tests
  nftables                                    # nft, to read what the nftables backends wrote
  containernetworking-plugins                 # the Go reference plugins (/usr/lib/cni) for diffs
  dpkg-dev xz-utils flex bison                # static build: libiptc and libnl from Debian's sources
  qemu-system-x86 busybox-static cpio kmod     # the test VM for kernel features this machine lacks
  clang lld qemu-user                         # the arm64 launcher, built and run here (cli suite)
  clang-14 libclang-rt-14-dev                 # the libFuzzer targets (fuzz suite, docs/fuzzing.md)
  g++-aarch64-linux-gnu                       # the arm64 release binary, cross-built (static suite)
  checkpolicy                                 # the test VM's own SELinux policy (tap selinuxContext)
  dnsmasq-base                                # a real DHCP server for the dhcp tests (no system service)
  debhelper lintian fakeroot git              # the Debian package: build, lint, and its test
  podman runc                                 # a real runtime as the client (podman e2e, CNI backend)
  containerd python3-grpcio                   # kubelet's path: containerd's CRI plugin and our CRI client (cri suite)
  strace                                      # the static suite's syscall trace; bench: processes a call starts
  golang-go                                   # Go's regexp package, the oracle of tuning's allowlist regexps
  etcd-server etcd-client                     # a real etcd cluster for cluster-ipam's tests (no system service)
  dbus-daemon python3-dbus python3-gi libglib2.0-bin  # firewall tests: a private bus, a stand-in firewalld
)
[ "${1:-}" = "--bench" ] && packages+=(python3-matplotlib linux-perf)  # the bench report's plots and profiles
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  echo "installing: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    -o Dpkg::Options::=--force-unsafe-io "${missing[@]}" >/dev/null
  # The cri suite runs its own containerd; the package's service is not wanted on a test machine.
  if [[ " ${missing[*]} " == *" containerd "* ]] && command -v systemctl >/dev/null; then
    $sudo systemctl disable --now containerd.service >/dev/null 2>&1 || true
  fi
  # Nor etcd's: the tests start their own clusters (tests/lib/etcd_cluster.py).
  if [[ " ${missing[*]} " == *" etcd-server "* ]] && command -v systemctl >/dev/null; then
    $sudo systemctl disable --now etcd.service >/dev/null 2>&1 || true
  fi
fi
