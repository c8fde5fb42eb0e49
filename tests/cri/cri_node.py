# SPDX-License-Identifier: Apache-2.0
"""A throwaway Kubernetes node for the cri suite (test_cri.py): a network namespace with a private
mount namespace made by node.sh (its own /sys with the machine's cgroup hierarchies mounted again
for runc, an empty /run and /var/lib/cni), a client namespace linked to it by a veth, containerd
1.6 with its own root, state, socket and pod namespaces under a scratch folder, and an image
built here from busybox-static. `close` kills what runs in it by cgroup and by mount namespace
and removes it all, whatever state a failed test left."""
import contextlib
import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import tarfile
import tempfile
import time

from cnitest import CNI_ALL, REF, check, eq, install_dir, legacy_iptables_path, netns, ns_path, sh
from cri_client import Runtime

NODE_SH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "node.sh")
UPLINK, UPLINK_NODE, UPLINK_CLIENT = "cri-uplink", "10.232.0.1", "10.232.0.2"
IMAGE, PAGE = "localhost/cni-all-cri:test", "hello from cri"
CGROUP_PARENT = f"/cni-all-cri-{os.getpid()}"


def image_tar(path):
    """An OCI image layout tarball of busybox-static: /bin/{busybox,sh,httpd,sleep} and /www with
    PAGE. It is the sandbox (pause) image too: its command sleeps."""
    def tar(members):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as t:
            for name, data, link in members:
                info = tarfile.TarInfo(name)
                if link:
                    info.type, info.linkname = tarfile.SYMTYPE, link
                else:
                    info.size, info.mode = len(data), 0o755
                t.addfile(info, io.BytesIO(data) if not link else None)
        return buf.getvalue()
    with open("/bin/busybox", "rb") as f:
        busybox = f.read()
    layer = tar([("bin/busybox", busybox, None), ("www/index.html", PAGE.encode(), None)]
                + [(f"bin/{tool}", b"", "busybox") for tool in ("sh", "httpd", "sleep")])
    blobs = {}

    def blob(data):
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return {"digest": digest, "size": len(data)}
    layer_desc = blob(layer)
    config = blob(json.dumps({"architecture": "amd64", "os": "linux", "config": {"Cmd": ["/bin/sleep", "86400"]},
                              "rootfs": {"type": "layers", "diff_ids": [layer_desc["digest"]]}}).encode())
    manifest = blob(json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                                "config": dict(config, mediaType="application/vnd.oci.image.config.v1+json"),
                                "layers": [dict(layer_desc, mediaType="application/vnd.oci.image.layer.v1.tar")]}).encode())
    index = {"schemaVersion": 2, "manifests": [dict(manifest, mediaType="application/vnd.oci.image.manifest.v1+json",
                                                    platform={"architecture": "amd64", "os": "linux"},
                                                    annotations={"io.containerd.image.name": IMAGE,
                                                                 "org.opencontainers.image.ref.name": IMAGE})]}
    members = [("oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode(), None),
               ("index.json", json.dumps(index).encode(), None)]
    members += [(f"blobs/sha256/{d.split(':')[1]}", data, None) for d, data in blobs.items()]
    with open(path, "wb") as f:
        f.write(tar(members))


def cgroup_mounts():
    """The machine's cgroup hierarchies as "DIR FSTYPE OPTIONS" lines, for node.sh to mount again."""
    lines = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            root, mountpoint = left.split()[3:5]
            fstype, _, options = right.split()[:3]
            if fstype in ("cgroup", "cgroup2") and root == "/" and mountpoint.startswith("/sys/fs/cgroup"):
                lines.append(f"{mountpoint} {fstype} {options}\n")
    return "".join(lines)


class Node:
    """A throwaway node: its namespaces (node.sh), a client namespace linked to it, and containerd."""

    def __init__(self, plugins, version, variant):
        self.plugins, self.version, self.variant = plugins, version, variant
        self.bin = install_dir(CNI_ALL) if plugins == "cni-all" else REF
        self.path = os.environ["PATH"] if variant == "nft" else f"{legacy_iptables_path()}:{os.environ['PATH']}"
        self.work = tempfile.mkdtemp(prefix="cni-all-cri.")
        self.exits = contextlib.ExitStack()
        self.anchor = self.containerd = self.runtime = None
        self.pods = set()  # pods a step ran and has not removed yet
        self.socket = f"{self.work}/containerd.sock"
        self.confdir = f"{self.work}/net.d"

    def start(self):
        self.ns = self.exits.enter_context(netns("cri"))
        self.client = self.exits.enter_context(netns("cric"))
        sh("ip", "-n", self.ns, "link", "add", UPLINK, "type", "veth", "peer", "name", "eth0", "netns", self.client)
        sh("ip", "-n", self.ns, "addr", "add", f"{UPLINK_NODE}/24", "dev", UPLINK)
        sh("ip", "-n", self.ns, "link", "set", UPLINK, "up")
        sh("ip", "-n", self.client, "addr", "add", f"{UPLINK_CLIENT}/24", "dev", "eth0")
        sh("ip", "-n", self.client, "link", "set", "eth0", "up")
        with open(f"{self.work}/cgroup-mounts", "w") as f:
            f.write(cgroup_mounts())
        self.anchor = subprocess.Popen(["nsenter", f"--net={ns_path(self.ns)}", "unshare", "-m", "--propagation", "private",
                                        "bash", NODE_SH, self.work], start_new_session=True)
        wait_for(lambda: os.path.exists(f"{self.work}/node-ready") or self.anchor.poll() is not None, "node.sh")
        check(self.anchor.poll() is None, "node.sh failed")
        os.makedirs(self.confdir)
        with open(f"{self.work}/config.toml", "w") as f:
            f.write(self.containerd_config())
        self.start_containerd()
        image_tar(f"{self.work}/image.tar")
        self.run("ctr", "--address", self.socket, "-n", "k8s.io", "images", "import", "--snapshotter", "native",
                 f"{self.work}/image.tar")

    def containerd_config(self):
        cri = 'plugins."io.containerd.grpc.v1.cri"'
        return f'''version = 2
root = "{self.work}/root"
state = "{self.work}/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "{self.socket}"
[plugins."io.containerd.internal.v1.opt"]
  path = "{self.work}/opt"
[{cri}]
  sandbox_image = "{IMAGE}"
  restrict_oom_score_adj = true
  disable_apparmor = true
  netns_mounts_under_state_dir = true
  [{cri}.cni]
    bin_dir = "{self.bin}"
    conf_dir = "{self.confdir}"
  [{cri}.containerd]
    snapshotter = "native"
'''

    def start_containerd(self):
        log = open(f"{self.work}/containerd.log", "a")
        self.containerd = subprocess.Popen(["nsenter", "-t", str(self.anchor.pid), "-m", "-n", "env", f"PATH={self.path}",
                                            "containerd", "--config", f"{self.work}/config.toml"],
                                           stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        self.runtime = Runtime(self.socket)
        try:
            self.runtime.wait_ready(30)
            eq(self.runtime.version()["runtime_api_version"], "v1", "containerd serves CRI runtime.v1")
        except Exception:
            raise AssertionError(f"containerd did not start: {self.log_tail()}")

    def stop_containerd(self):
        self.runtime.close()
        self.containerd.send_signal(signal.SIGTERM)
        try:
            self.containerd.wait(20)
        except subprocess.TimeoutExpired:
            self.containerd.kill()
            self.containerd.wait()

    def log_tail(self):
        with open(f"{self.work}/containerd.log") as f:
            return "".join(f.readlines()[-30:])

    def run(self, *cmd, check_rc=True):
        """A command in the node's namespaces, with its PATH."""
        return sh("nsenter", "-t", str(self.anchor.pid), "-m", "-n", "env", f"PATH={self.path}", *cmd, check_rc=check_rc)

    def write_conflist(self, conf):
        """Written whole, then renamed into the conf dir that containerd watches."""
        with open(f"{self.confdir}/{conf['name']}.tmp", "w") as f:
            json.dump(conf, f)
        os.rename(f"{self.confdir}/{conf['name']}.tmp", f"{self.confdir}/{conf['name']}.conflist")

    def remove_conflist(self, name):
        os.unlink(f"{self.confdir}/{name}.conflist")

    def network_ready(self):
        return self.runtime.conditions()["NetworkReady"]

    def close(self):
        """Kills what runs in the node (containers by their cgroup, then containerd, its shims and
        the anchor by their mount namespace) and removes the cgroups and namespaces."""
        if self.runtime:
            self.runtime.close()
        for _ in range(3):
            for pid in self.cgroup_pids() + self.node_pids():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.2)
        for p in (self.containerd, self.anchor):
            if p:
                p.wait()
        for hierarchy in cgroup_mounts().splitlines():
            top = hierarchy.split()[0] + CGROUP_PARENT
            for d in sorted((root for root, _, _ in os.walk(top)), key=len, reverse=True):
                with contextlib.suppress(OSError):
                    os.rmdir(d)
        self.exits.close()
        shutil.rmtree(self.work, ignore_errors=True)

    def cgroup_pids(self):
        pids = []
        for hierarchy in cgroup_mounts().splitlines():
            for root, _, files in os.walk(hierarchy.split()[0] + CGROUP_PARENT):
                if "cgroup.procs" in files:
                    with contextlib.suppress(OSError), open(os.path.join(root, "cgroup.procs")) as f:
                        pids += [int(p) for p in f.read().split()]
        return pids

    def node_pids(self):
        if not self.anchor or self.anchor.poll() is not None:
            return []
        mnt = os.readlink(f"/proc/{self.anchor.pid}/ns/mnt")
        pids = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{pid}/ns/mnt") == mnt:
                    pids.append(int(pid))
        return pids


def wait_for(cond, what, seconds=30, step=0.1):
    deadline = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(step)
