#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A real runtime as the client: Debian's podman 4.3 with its CNI backend, plugin dir = our
`cni-all install`ed launchers (Debian's /usr/lib/cni hidden), vfs storage, cgroupfs, runc. It
runs in a throwaway network namespace (entered with nsenter, so /sys and its cgroup mounts stay
visible to runc) and a private mount namespace (tmpfs over /var/lib/cni). An image imported
from busybox-static serves HTTP; `podman network create`, `podman run -d -p 18080:80`, a fetch
through the container IP and through the published port, then `podman rm -f` must leave no
veth, rule, allocation or cache entry (scenario.sh does the steps). Also the installer image
built from the static binary: podman loads it and its entrypoint installs the plugins."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import BIN, artifact, check, eq, is_launcher_of, netns, ns_path, run_all, test  # noqa: E402

SCENARIO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scenario.sh")


@test
def podman_runs_a_container_on_our_plugins():
    """podman (CNI backend, our plugins only): network create, run -d -p 18080:80, HTTP via the container IP and the port, rm -f leaves nothing"""
    work = tempfile.mkdtemp(prefix="cni-all-podman.")
    had_var_lib_cni = os.path.isdir("/var/lib/cni")
    try:
        with netns("pod") as host:
            r = subprocess.run(["nsenter", f"--net={ns_path(host)}", "unshare", "-m", "--propagation", "private",
                                "env", f"WORK={work}/w", f"BIN={BIN}", "bash", SCENARIO],
                               capture_output=True, text=True, timeout=240)
            for line in (r.stdout + r.stderr).splitlines():
                print(f"# {line}")
            if r.returncode != 0:
                print(r.stdout + r.stderr, file=sys.stderr)
            eq(r.returncode, 0, "the scenario ran to the end")
            got = dict(line.split(" ", 1) for line in r.stdout.splitlines() if " " in line)
            eq(got["backend"], "cni")
            eq(got["plugins"], "bridge,portmap,firewall,tuning", "podman's own conflist")
            check(got["ip"].startswith("10.219.0."), got["ip"])
            eq(got["direct"], "hello from podman", "HTTP through the container IP")
            eq(got["published"], "hello from podman", "HTTP through the published port (portmap DNAT)")
            eq(got["cache_during"], "1", "libcni's result cache holds the attachment while it runs")
            check(int(got["dnat_during"]) > 0, "portmap's DNAT chain exists while it runs")
            for key in ("veths_after", "dnat_after", "rules_after", "cache_after", "allocations_after"):
                eq(got[key], "0", f"{key}: podman rm -f left something behind")
            eq(got["done"], "1")
            if not had_var_lib_cni:
                check(not os.path.exists("/var/lib/cni"), "the run made no /var/lib/cni on the machine")
    finally:
        shutil.rmtree(work, ignore_errors=True)


@test
def installer_image_runs_under_podman():
    """podman: the installer image (packaging/build-oci.py from the static binaries, amd64 and arm64) loads, and its entrypoint installs cni-all and the launchers into the mounted plugin dir"""
    static = artifact("CNI_ALL_STATIC")
    check(static and os.path.exists(static), f"CNI_ALL_STATIC must name the static build, got {static!r}")
    work = tempfile.mkdtemp(prefix="cni-all-image.")
    try:
        with open(f"{work}/storage.conf", "w") as f:
            f.write(f'[storage]\ndriver = "vfs"\nrunroot = "{work}/run"\ngraphroot = "{work}/storage"\n')
        with open(f"{work}/containers.conf", "w") as f:
            f.write(f'[engine]\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\nevents_logfile_path = "{work}/events.log"\n'
                    f'runtime = "runc"\ntmp_dir = "{work}/tmp"\n')
        env = dict(os.environ, CONTAINERS_STORAGE_CONF=f"{work}/storage.conf", CONTAINERS_CONF=f"{work}/containers.conf")
        tool = os.path.join(os.path.dirname(__file__), "..", "..", "packaging", "build-oci.py")
        # With the arm64 build beside it, the image is a two-platform index: podman takes amd64's.
        arm64 = artifact("CNI_ALL_STATIC_ARM64")
        binaries = [static] + ([arm64] if arm64 and os.path.exists(arm64) else [])
        subprocess.run(["python3", tool, *binaries, f"{work}/image.tar", "--tag", "localhost/cni-all:test"], check=True,
                       capture_output=True)
        r = subprocess.run(["podman", "load", "-i", f"{work}/image.tar"], capture_output=True, text=True, env=env)
        eq(r.returncode, 0, r.stderr)
        os.makedirs(f"{work}/hostbin")
        r = subprocess.run(["podman", "run", "--rm", "--network", "none", "--ulimit", "nofile=1024:1024",
                            "--ulimit", "nproc=1024:1024", "-v", f"{work}/hostbin:/host/opt/cni/bin",
                            "localhost/cni-all:test"], capture_output=True, text=True, env=env, timeout=120)
        eq(r.returncode, 0, r.stdout + r.stderr)
        installed = sorted(os.listdir(f"{work}/hostbin"))
        check("cni-all" in installed and "bridge" in installed and "dhcp" in installed, installed)
        check(is_launcher_of(f"{work}/hostbin/portmap", "portmap"), "portmap is a launcher")
        eq(open(f"{work}/hostbin/cni-all", "rb").read(), open(static, "rb").read(), "the image's binary is the static build")
        subprocess.run(["podman", "rmi", "-f", "localhost/cni-all:test"], capture_output=True, env=env)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    run_all(cleanup=[BIN])
