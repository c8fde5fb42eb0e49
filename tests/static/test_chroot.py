#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The static binary that ships (CNI_ALL_STATIC, built by packaging/build-static.sh): it is
statically linked and at most 3 MB, and it runs in an otherwise empty root. Only the binary and
the launchers `cni-all install` makes go into a fresh directory; a private mount namespace
bind-mounts /proc, /sys and /run/netns into it; `cni-all exec` then runs a bridge + host-local
+ portmap conflist ADD/CHECK/DEL against a throwaway netns from inside that chroot, and the
kernel state is checked from outside. Also the installer image packaging/build-oci.py makes from
it: a valid, reproducible OCI layout holding only /cni-all."""
import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import iptables_save, addrs, check, eq, is_launcher_of, link, netns, ns_path, run_all, sh, test  # noqa: E402

STATIC = os.environ.get("CNI_ALL_STATIC", "")
SIZE_LIMIT = 3 * 1024 * 1024


@test
def static_binary_is_static_and_small():
    """static: `file` says statically linked, `ldd` says not dynamic, at most 3 MB stripped"""
    check(STATIC and os.path.exists(STATIC), f"CNI_ALL_STATIC must name the static build, got {STATIC!r}")
    check("statically linked" in sh("file", STATIC).stdout, sh("file", STATIC).stdout)
    r = sh("ldd", STATIC, check_rc=False)
    check("not a dynamic executable" in r.stdout + r.stderr, r.stdout + r.stderr)
    size = os.path.getsize(STATIC)
    check(size <= SIZE_LIMIT, f"{size} bytes > 3 MB")


@test
def static_binary_answers_version_before_glibc_starts():
    """static: VERSION through each applet's symlink is execve, one write and exit_group, nothing else; through its launcher, a readlinkat and one execve more"""
    check(STATIC and os.path.exists(STATIC), "CNI_ALL_STATIC must name the static build")
    d = tempfile.mkdtemp()
    try:
        applets = [line.split()[0] for line in sh(STATIC, "--list").stdout.splitlines()]
        check(len(applets) >= 19, applets)
        for a in applets:
            os.symlink(STATIC, os.path.join(d, a))
            trace = os.path.join(d, "trace")
            r = sh("strace", "-qq", "-o", trace, os.path.join(d, a), env={"CNI_COMMAND": "VERSION"})
            check(r.stdout.startswith('{"cniVersion":"1.1.0","supportedVersions":["0.'), r.stdout)
            eq([line.split("(")[0] for line in open(trace).read().splitlines()], ["execve", "write", "exit_group"], a)
        # Through the launchers `cni-all install` lays down: one more execve (the launcher's
        # readlinkat of /proc/self/exe, then cni-all), nothing else.
        shutil.copy(STATIC, os.path.join(d, "cni-all"))
        for a in applets:
            os.unlink(os.path.join(d, a))
        eq(sh(os.path.join(d, "cni-all"), "install", d).returncode, 0)
        for a in applets:
            trace = os.path.join(d, "trace")
            r = sh("strace", "-qq", "-o", trace, os.path.join(d, a), env={"CNI_COMMAND": "VERSION"})  # execve keeps the pid
            check(r.stdout.startswith('{"cniVersion":"1.1.0","supportedVersions":["0.'), r.stdout)
            eq([line.split("(")[0] for line in open(trace).read().splitlines()],
               ["execve", "readlinkat", "execve", "write", "exit_group"], a)
    finally:
        shutil.rmtree(d)


def in_chroot(host, root, *args):
    script = ("set -e; for d in proc sys run/netns; do mount --rbind /$d \"$R/$d\"; done; "
              "exec chroot \"$R\" /opt/cni/bin/cni-all \"$@\"")
    return subprocess.run(["ip", "netns", "exec", host, "unshare", "-m", "--propagation", "private",
                           "env", f"R={root}", "sh", "-c", script, "sh", *args],
                          capture_output=True, text=True, env={"PATH": os.environ["PATH"]})


@test
def static_binary_runs_a_conflist_in_an_empty_root():
    """static: in a chroot holding only cni-all and its symlinks, exec ADD/CHECK/DEL of bridge + host-local + portmap"""
    check(STATIC and os.path.exists(STATIC), "CNI_ALL_STATIC must name the static build")
    root = tempfile.mkdtemp(prefix="cni-all-root.")
    try:
        for d in ("proc", "sys", "run/netns", "opt/cni/bin", "etc/cni/net.d", "var/lib/cni", "tmp"):
            os.makedirs(os.path.join(root, d))
        shutil.copy(STATIC, os.path.join(root, "opt/cni/bin/cni-all"))
        conf = {"cniVersion": "1.1.0", "name": "static", "plugins": [
            {"type": "bridge", "bridge": "stbr0", "isGateway": True, "ipMasq": True,
             "ipam": {"type": "host-local", "subnet": "10.218.0.0/24"}},
            {"type": "portmap", "capabilities": {"portMappings": True}}]}
        with open(os.path.join(root, "etc/cni/net.d/10-static.conflist"), "w") as f:
            json.dump(conf, f)
        with netns("sth") as host, netns("stc") as ctr:
            r = in_chroot(host, root, "install", "/opt/cni/bin")
            eq(r.returncode, 0, r.stderr)
            check(is_launcher_of(os.path.join(root, "opt/cni/bin/portmap"), "portmap"), "portmap is a launcher")
            eq(sorted(os.listdir(root)), sorted(["proc", "sys", "run", "opt", "etc", "var", "tmp"]), "nothing else in the root")
            caps = json.dumps({"portMappings": [{"hostPort": 8082, "containerPort": 80, "protocol": "tcp"}]})
            r = in_chroot(host, root, "exec", "add", "static", ns_path(ctr), "--capability-args", caps)
            eq(r.returncode, 0, r.stdout + r.stderr)
            eq(json.loads(r.stdout)["ips"][0]["address"], "10.218.0.2/24")
            eq(addrs(ctr, "eth0")[:1], ["10.218.0.2/24"])
            check(link(host, "stbr0") is not None, "the bridge is in the host namespace")
            nat = iptables_save(host)
            check("--dport 8082" in nat, nat)
            check(os.listdir(os.path.join(root, "var/lib/cni/networks/static")), "host-local's files are inside the root")
            check(os.listdir(os.path.join(root, "var/lib/cni/results")), "the result is cached inside the root")
            r = in_chroot(host, root, "exec", "check", "static", ns_path(ctr), "--capability-args", caps)
            eq(r.returncode, 0, r.stdout + r.stderr)
            r = in_chroot(host, root, "exec", "del", "static", ns_path(ctr), "--capability-args", caps)
            eq(r.returncode, 0, r.stdout + r.stderr)
            check(link(ctr, "eth0") is None, "the container interface is gone")
            nat = iptables_save(host)
            check("8082" not in nat and "CNI-DN-" not in nat, nat)
            eq(os.listdir(os.path.join(root, "var/lib/cni/results")), [])
    finally:
        shutil.rmtree(root, ignore_errors=True)


@test
def installer_image_is_a_valid_oci_layout():
    """static: build-oci.py writes an OCI image holding only /cni-all, entrypoint `cni-all install /host/opt/cni/bin`, digests right"""
    check(STATIC and os.path.exists(STATIC), "CNI_ALL_STATIC must name the static build")
    work = tempfile.mkdtemp(prefix="cni-all-oci.")
    try:
        tool = os.path.join(os.path.dirname(__file__), "..", "..", "packaging", "build-oci.py")
        sh("python3", tool, STATIC, f"{work}/image.tar", "--tag", "cni-all:test")
        again = sh("python3", tool, STATIC, f"{work}/again.tar", "--tag", "cni-all:test")
        eq(open(f"{work}/image.tar", "rb").read(), open(f"{work}/again.tar", "rb").read(), "reproducible: " + again.stdout)
        with tarfile.open(f"{work}/image.tar") as t:
            files = {m.name: t.extractfile(m).read() for m in t.getmembers()}
        for name, data in files.items():
            if name.startswith("blobs/sha256/"):
                eq(hashlib.sha256(data).hexdigest(), name.split("/")[-1], f"{name} is content-addressed")
        eq(json.loads(files["oci-layout"]), {"imageLayoutVersion": "1.0.0"})
        index = json.loads(files["index.json"])
        eq(index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"], "cni-all:test")
        manifest = json.loads(files["blobs/sha256/" + index["manifests"][0]["digest"].split(":")[1]])
        config = json.loads(files["blobs/sha256/" + manifest["config"]["digest"].split(":")[1]])
        eq(config["config"]["Entrypoint"], ["/cni-all", "install", "/host/opt/cni/bin"])
        layer = files["blobs/sha256/" + manifest["layers"][0]["digest"].split(":")[1]]
        eq(config["rootfs"]["diff_ids"], ["sha256:" + hashlib.sha256(gzip.decompress(layer)).hexdigest()])
        with tarfile.open(fileobj=io.BytesIO(gzip.decompress(layer))) as t:
            members = t.getmembers()
            eq([(m.name, oct(m.mode)) for m in members], [("cni-all", "0o755")])
            eq(t.extractfile(members[0]).read(), open(STATIC, "rb").read())
    finally:
        shutil.rmtree(work, ignore_errors=True)


@test
def release_tarball_is_the_install_layout_with_sums():
    """static: scripts/release.sh makes a reproducible tarball of cni-all and a launcher per applet, with its sums files"""
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    outs = [tempfile.mkdtemp(prefix="cni-release.") for _ in range(2)]
    try:
        made = [sh(os.path.join(root, "scripts", "release.sh"), out, cwd=root).stdout.strip() for out in outs]
        name = os.path.basename(made[0])
        check(name.startswith("cni-all-linux-amd64-v") and name.endswith(".tgz"), name)
        eq(open(made[0], "rb").read(), open(made[1], "rb").read(), "the same commit gives the same archive")
        for kind in ("sha256", "sha512"):
            sh(f"{kind}sum", "-c", name + "." + kind, cwd=outs[0])
        dest = tempfile.mkdtemp(prefix="cni-opt.")
        try:
            sh("tar", "-C", dest, "-xzf", made[0])
            applets = [line.split()[0] for line in sh(STATIC, "--list").stdout.splitlines()]
            eq(sorted(os.listdir(dest)), sorted(applets + ["cni-all"]))
            for a in applets:
                check(is_launcher_of(os.path.join(dest, a), a), a)
            r = subprocess.run([os.path.join(dest, "bridge")], env={"CNI_COMMAND": "VERSION"}, capture_output=True, text=True)
            check('"supportedVersions"' in r.stdout, r.stdout + r.stderr)
            with tarfile.open(made[0]) as t:
                check(all(m.uid == 0 and m.gid == 0 for m in t.getmembers()), "owned by root")
        finally:
            shutil.rmtree(dest)
    finally:
        for out in outs:
            shutil.rmtree(out)


if __name__ == "__main__":
    run_all()
