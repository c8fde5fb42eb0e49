#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The static binary that ships (CNI_ALL_STATIC, built by packaging/build-static.sh): it is
statically linked and at most 3 MB, and it runs in an otherwise empty root. Only the binary and
the launchers `cni-all install` makes go into a fresh directory; a private mount namespace
bind-mounts /proc, /sys and /run/netns into it; `cni-all exec` then runs a bridge + host-local
+ portmap conflist ADD/CHECK/DEL against a throwaway netns from inside that chroot, and the
kernel state is checked from outside. Also the installer image packaging/build-oci.py makes from
it: a valid, reproducible OCI image index holding only /cni-all; and scripts/release.sh's amd64
and arm64 tarballs (which leave the directory they are extracted into as it was) and
multi-architecture image."""
import gzip
import hashlib
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import addrs, artifact, check, eq, iptables_save, is_launcher_of, link, netns, ns_path, run_all, sh, test  # noqa: E402

STATIC = artifact("CNI_ALL_STATIC")
SIZE_LIMIT = 3_500_000  # docs/design.md: 3.5 MB with mbedTLS (cluster-ipam's etcd client)


@test
def static_binary_is_static_and_small():
    """static: `file` says statically linked, `ldd` says not dynamic, at most 3.5 MB stripped"""
    check(STATIC and os.path.exists(STATIC), f"CNI_ALL_STATIC must name the static build, got {STATIC!r}")
    check("statically linked" in sh("file", STATIC).stdout, sh("file", STATIC).stdout)
    r = sh("ldd", STATIC, check_rc=False)
    check("not a dynamic executable" in r.stdout + r.stderr, r.stdout + r.stderr)
    size = os.path.getsize(STATIC)
    check(size <= SIZE_LIMIT, f"{size} bytes > 3.5 MB")


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
    """static: in a chroot holding only cni-all and its launchers, exec ADD/CHECK/DEL of bridge + host-local + portmap"""
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


def oci_files(path):
    """An OCI layout tarball's files, every blob checked to be content-addressed."""
    with tarfile.open(path) as t:
        files = {m.name: t.extractfile(m).read() for m in t.getmembers()}
    for name, data in files.items():
        if name.startswith("blobs/sha256/"):
            eq(hashlib.sha256(data).hexdigest(), name.split("/")[-1], f"{name} is content-addressed")
    eq(json.loads(files["oci-layout"]), {"imageLayoutVersion": "1.0.0"})
    return files


def oci_images(files, tag):
    """{architecture: binary} of the image index index.json names `tag`, each image's config,
    diff_ids and single layer checked."""
    blob = lambda d: files["blobs/sha256/" + d["digest"].split(":")[1]]  # noqa: E731
    top = json.loads(files["index.json"])["manifests"]
    eq(len(top), 1)
    eq(top[0]["annotations"]["org.opencontainers.image.ref.name"], tag)
    eq(top[0]["mediaType"], "application/vnd.oci.image.index.v1+json")
    images = {}
    for m in json.loads(blob(top[0]))["manifests"]:
        manifest = json.loads(blob(m))
        config = json.loads(blob(manifest["config"]))
        eq((config["architecture"], config["os"]), (m["platform"]["architecture"], "linux"))
        eq(config["config"]["Entrypoint"], ["/cni-all", "install", "/host/opt/cni/bin"])
        layer = blob(manifest["layers"][0])
        eq(config["rootfs"]["diff_ids"], ["sha256:" + hashlib.sha256(gzip.decompress(layer)).hexdigest()])
        with tarfile.open(fileobj=io.BytesIO(gzip.decompress(layer))) as t:
            members = t.getmembers()
            eq([(m.name, oct(m.mode)) for m in members], [("cni-all", "0o755")])
            images[m["platform"]["architecture"]] = t.extractfile(members[0]).read()
    return images


@test
def installer_image_is_a_valid_oci_layout():
    """static: build-oci.py writes an OCI image index holding only /cni-all per platform, entrypoint `cni-all install /host/opt/cni/bin`, digests right, reproducible"""
    check(STATIC and os.path.exists(STATIC), "CNI_ALL_STATIC must name the static build")
    work = tempfile.mkdtemp(prefix="cni-all-oci.")
    try:
        tool = os.path.join(os.path.dirname(__file__), "..", "..", "packaging", "build-oci.py")
        sh("python3", tool, STATIC, f"{work}/image.tar", "--tag", "cni-all:test")
        again = sh("python3", tool, STATIC, f"{work}/again.tar", "--tag", "cni-all:test")
        eq(open(f"{work}/image.tar", "rb").read(), open(f"{work}/again.tar", "rb").read(), "reproducible: " + again.stdout)
        eq(oci_images(oci_files(f"{work}/image.tar"), "cni-all:test"), {"amd64": open(STATIC, "rb").read()})
        # A binary per architecture at most, and only ELF executables.
        check(sh("python3", tool, STATIC, STATIC, f"{work}/twice.tar", check_rc=False).returncode != 0, "two amd64 binaries")
        check(sh("python3", tool, tool, f"{work}/script.tar", check_rc=False).returncode != 0, "a script")
    finally:
        shutil.rmtree(work, ignore_errors=True)


@test
def release_tarballs_are_the_install_layout_with_sums():
    """static: scripts/release.sh makes reproducible amd64 and arm64 tarballs of cni-all and a launcher per applet, with sums files, and the multi-architecture installer image; extracted as root into an existing plugin directory, a tarball leaves its mode and owner alone"""
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    # release.sh runs ninja in build-static-arm64 too: not while scripts/build-later.sh does.
    check(artifact("CNI_ALL_STATIC_ARM64"), "the arm64 build, which release.sh reuses")
    outs = [tempfile.mkdtemp(prefix="cni-release.") for _ in range(2)]
    try:
        made = [sh(os.path.join(root, "scripts", "release.sh"), out, cwd=root, timeout=900).stdout.split() for out in outs]
        names = [os.path.basename(p) for p in made[0]]
        eq(len(names), 3, names)
        check(names[0].startswith("cni-all-linux-amd64-v") and names[0].endswith(".tgz"), names)
        eq(names[1], names[0].replace("-amd64-", "-arm64-"))
        check(names[2].startswith("cni-all-oci-v") and names[2].endswith(".tar"), names)
        for a, b in zip(*made):
            eq(open(a, "rb").read(), open(b, "rb").read(), f"the same commit gives the same {os.path.basename(a)}")
        for name in names[:2]:
            for kind in ("sha256", "sha512"):
                sh(f"{kind}sum", "-c", name + "." + kind, cwd=outs[0])
        applets = [line.split()[0] for line in sh(STATIC, "--list").stdout.splitlines()]
        binaries = {}
        for arch, tgz in (("amd64", made[0][0]), ("arm64", made[0][1])):
            files = sorted(applets + ["cni-all"])
            # Extracted (by root) as docs/install.md says, into a plugin directory as a node has it
            # (0755, here owned by another user so that a change of owner shows, holding another
            # installer's plugin): the directory keeps its mode and owner.
            dest = tempfile.mkdtemp(prefix="cni-opt.")
            try:
                os.chmod(dest, 0o755)
                os.chown(dest, 4321, 4321)
                with open(os.path.join(dest, "other-plugin"), "w") as f:
                    f.write("another installer's")
                sh("tar", "-C", dest, "-xzf", tgz)
                st = os.stat(dest)
                eq((oct(st.st_mode & 0o7777), st.st_uid, st.st_gid), ("0o755", 4321, 4321), f"{arch}: the directory as it was")
                eq(open(os.path.join(dest, "other-plugin")).read(), "another installer's")
                eq(sorted(os.listdir(dest)), sorted(files + ["other-plugin"]), arch)
                with tarfile.open(tgz) as t:  # the files alone, by name: no entry for the folder
                    eq([(m.name, m.type, m.mode, m.uid, m.gid) for m in t.getmembers()],
                       [(f"./{f}", tarfile.REGTYPE, 0o755, 0, 0) for f in files], arch)
                for f in files:
                    st = os.lstat(os.path.join(dest, f))
                    eq((stat.S_ISREG(st.st_mode), st.st_mode & 0o7777, st.st_uid, st.st_gid), (True, 0o755, 0, 0), f"{arch} {f}")
                for a in applets:
                    check(is_launcher_of(os.path.join(dest, a), a), f"{arch} {a}")
                machine = "x86-64" if arch == "amd64" else "ARM aarch64"
                for f in ("cni-all", "bridge"):
                    check(machine in sh("file", "-b", os.path.join(dest, f)).stdout, f"{arch} {f}")
                if arch == "amd64":
                    r = subprocess.run([os.path.join(dest, "bridge")], env={"CNI_COMMAND": "VERSION"}, capture_output=True, text=True)
                    check('"supportedVersions"' in r.stdout, r.stdout + r.stderr)
                binaries[arch] = open(os.path.join(dest, "cni-all"), "rb").read()
            finally:
                shutil.rmtree(dest)
        version = names[0][len("cni-all-linux-amd64-"):-len(".tgz")]
        eq(oci_images(oci_files(made[0][2]), f"cni-all:{version}"), binaries)
    finally:
        for out in outs:
            shutil.rmtree(out)


if __name__ == "__main__":
    run_all()
