#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Prepares the test VM's kernel in DIR (a build folder): Debian's own linux-image-amd64 kernel
# package, extracted (not installed), its module index built, and a tiny busybox initramfs that
# loads virtio/9p, mounts the host's root over virtio-9p and switch_roots into it. The VM
# replaces user-mode-linux, whose 6.1 kernel dies on this machine's AMX-capable CPUs
# ("ptrace set fp regs failed, errno = 14"). The root is mounted with cache=loose: the guest
# keeps what it reads (nothing the guest reads changes on the host while it runs: the build is
# done, and its scratch files are on its own tmpfs), which makes a process start 2-4 times
# faster under emulation; run-in-vm.sh exports it with multidevs=remap, without which the host's
# file systems' inode numbers collide in that cache (/proc, mounted in the guest, then vanished).
# Idempotent, and safe to run concurrently.
# usage: tests/vm/prepare-kernel.sh DIR
set -euo pipefail
dir=$(realpath -m "$1")
# Bumped when the initramfs changes, so a build folder's older VM kernel is prepared again.
format=2
[ "$(cat "$dir/format" 2>/dev/null)" = "$format" ] && exit 0
mkdir -p "$dir"
# Several VM tests start at once: one prepares, the others wait for it.
exec 9> "$dir.lock"
flock 9
[ "$(cat "$dir/format" 2>/dev/null)" = "$format" ] && exit 0
cd "$dir"
pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
if [ -z "$pkg" ]; then apt-get update -qq >&2; pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}'); fi
rm -rf root initrd ./*.deb
apt-get download -qq "$pkg" 2>&1 | grep -v unsandboxed >&2 || true
dpkg-deb -x ./"$pkg"_*.deb root
version=$(ls root/lib/modules)
depmod -b root "$version"
# The modules the initramfs needs, in dependency order.
modules=$(python3 - "root/lib/modules/$version" <<'PY'
import os, sys
base = sys.argv[1]
deps = {}
for line in open(os.path.join(base, "modules.dep")):
    name, rest = line.split(":", 1)
    deps[name] = rest.split()
order = []
def visit(m):
    if m not in order:
        for d in deps.get(m, []):
            visit(d)
        order.append(m)
for m in deps:
    if os.path.basename(m).split(".ko")[0] in ("9p", "9pnet_virtio", "virtio_pci"):
        visit(m)
print("\n".join(order))
PY
)
mkdir -p initrd/bin initrd/proc initrd/sys initrd/dev initrd/newroot initrd/mods
cp /bin/busybox initrd/bin/busybox
i=0
for m in $modules; do i=$((i + 1)); cp "root/lib/modules/$version/$m" "initrd/mods/$(printf %02d $i)-$(basename "$m")"; done
cat > initrd/init <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in /mods/*; do insmod "$m" || echo "insmod $m failed"; done
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=loose hostroot /newroot || { echo "cni-all vm: 9p mount failed"; poweroff -f; }
for a in $(cat /proc/cmdline); do case $a in cniall.init=*) INIT=${a#cniall.init=};; esac; done
exec switch_root /newroot "$INIT"
INIT
chmod +x initrd/init
(cd initrd && find . | cpio -o -H newc 2>/dev/null | gzip -1) > initrd.gz
ln -sf "root/boot/vmlinuz-$version" vmlinuz
echo "$version" > ready
echo "$format" > format
echo "test VM kernel $version ready in $dir" >&2
