#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Root tests of the flannel applet across two "node" namespaces joined by a veth underlay.
Each node has a VXLAN device flannel.1 set up the way flanneld's vxlan backend does it (the
remote node's subnet routed onlink via its VTEP address, a permanent neighbour entry for that
address and a forwarding entry to the remote underlay IP) and its own subnet.env. Pods made with
the flannel applet (bridge + host-local delegate, in-process) reach each other across the
VXLAN. Also the saved delegate config, DEL (also without it), STATUS and a missing subnet.env."""
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import BIN, Plugin, check, eq, netns, ns_path, run_all, sh, test  # noqa: E402

MACS = {1: "0e:00:00:00:01:01", 2: "0e:00:00:00:02:02"}


def flannel():
    return Plugin(os.path.join(BIN, "flannel"))


def vxlan_node(node, i, peer):
    """flannel.1 on node i, and what flanneld would program for the peer node."""
    sh("ip", "-n", node, "link", "add", "flannel.1", "address", MACS[i], "type", "vxlan", "id", "1",
       "local", f"192.168.77.{i}", "dev", f"u{i}", "dstport", "8472", "nolearning")
    sh("ip", "-n", node, "addr", "add", f"10.244.{i}.0/32", "dev", "flannel.1")
    sh("ip", "-n", node, "link", "set", "flannel.1", "up")
    sh("ip", "-n", node, "route", "add", f"10.244.{peer}.0/24", "via", f"10.244.{peer}.0", "dev", "flannel.1", "onlink")
    sh("ip", "-n", node, "neigh", "add", f"10.244.{peer}.0", "lladdr", MACS[peer], "dev", "flannel.1", "nud", "permanent")
    sh("bridge", "-n", node, "fdb", "append", MACS[peer], "dev", "flannel.1", "dst", f"192.168.77.{peer}", "self", "permanent")


def conf(work, i, **extra):
    c = {"cniVersion": "1.0.0", "name": "cbr0", "type": "flannel", "subnetFile": f"{work}/subnet{i}.env",
         "dataDir": f"{work}/flannel{i}", "ipam": {"dataDir": f"{work}/ipam{i}"},
         "delegate": {"hairpinMode": True, "isDefaultGateway": True}}
    c.update(extra)
    return c


@test
def flannel_pods_on_two_nodes_talk_over_vxlan():
    """flannel: a pod on each node (bridge + host-local delegated in-process) pings the other over VXLAN"""
    work = tempfile.mkdtemp()
    try:
        with netns("fn1") as n1, netns("fn2") as n2, netns("fp1") as p1, netns("fp2") as p2:
            sh("ip", "-n", n1, "link", "add", "u1", "type", "veth", "peer", "name", "u2", "netns", n2)
            for node, i in [(n1, 1), (n2, 2)]:
                sh("ip", "-n", node, "addr", "add", f"192.168.77.{i}/24", "dev", f"u{i}")
                sh("ip", "-n", node, "link", "set", f"u{i}", "up")
                with open(f"{work}/subnet{i}.env", "w") as f:
                    f.write(f"FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.{i}.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=false\n")
            vxlan_node(n1, 1, 2)
            vxlan_node(n2, 2, 1)
            r1 = flannel().run("ADD", conf(work, 1), host_ns=n1, netns=ns_path(p1), container_id="pod-1").ok().json()
            # Go's flannel marshals its delegate from an interface{} map: numbers come through
            # float64, so a delegate "mtu": 1400.0 reaches the bridge as 1400.
            c2 = conf(work, 2, delegate={"hairpinMode": True, "isDefaultGateway": True, "mtu": 1400.0})
            r2 = flannel().run("ADD", c2, host_ns=n2, netns=ns_path(p2), container_id="pod-2").ok().json()
            eq(r1["ips"][0]["address"], "10.244.1.2/24")
            eq(r2["ips"][0]["address"], "10.244.2.2/24")
            eq(r1["interfaces"][0]["name"], "cni0")
            eq(sh("ip", "-n", p1, "-j", "link", "show", "eth0").stdout.count('"mtu":1450'), 1)
            eq(sh("ip", "-n", p2, "-j", "link", "show", "eth0").stdout.count('"mtu":1400'), 1)
            check('"mtu":1400,' in open(f"{work}/flannel2/pod-2").read(), "saved as the integer Go writes")
            saved = json.load(open(f"{work}/flannel1/pod-1"))
            eq((saved["type"], saved["ipMasq"], saved["isGateway"], saved["mtu"], saved["ipam"]["routes"]),
               ("bridge", True, True, 1450, [{"dst": "10.244.0.0/16"}]))
            sh("ip", "netns", "exec", p1, "ping", "-c1", "-W3", "10.244.2.2")
            sh("ip", "netns", "exec", p2, "ping", "-c1", "-W3", "10.244.1.2")
            flannel().run("CHECK", dict(conf(work, 1), prevResult=r1), host_ns=n1, netns=ns_path(p1), container_id="pod-1").ok()
            flannel().run("STATUS", conf(work, 1, cniVersion="1.1.0"), host_ns=n1).ok()

            flannel().run("DEL", conf(work, 1), host_ns=n1, netns=ns_path(p1), container_id="pod-1").ok()
            check(not os.path.exists(f"{work}/flannel1/pod-1"), "the saved config is removed")
            check(sh("ip", "-n", p1, "link", "show", "eth0", check_rc=False).returncode != 0, "the pod's interface is gone")
            eq([f for f in os.listdir(f"{work}/ipam1/cbr0") if f.startswith("10.")], [])
            flannel().run("DEL", conf(work, 1), host_ns=n1, netns=ns_path(p1), container_id="pod-1").ok()

            # A lost scratch file (a crash) does not stop DEL from cleaning up: the delegate's
            # config is rebuilt from subnet.env.
            os.unlink(f"{work}/flannel2/pod-2")
            flannel().run("DEL", c2, host_ns=n2, netns=ns_path(p2), container_id="pod-2").ok()
            check(sh("ip", "-n", p2, "link", "show", "eth0", check_rc=False).returncode != 0, "pod-2's interface is gone")
            eq([f for f in os.listdir(f"{work}/ipam2/cbr0") if f.startswith("10.")], [])
    finally:
        shutil.rmtree(work)


@test
def flannel_without_subnet_env():
    """flannel: missing or incomplete subnet.env named in the error, STATUS code 50; a failed delegate leaves no file"""
    work = tempfile.mkdtemp()
    try:
        with netns("fn1") as n1, netns("fp1") as p1:
            err = flannel().run("ADD", conf(work, 1), host_ns=n1, netns=ns_path(p1), container_id="pod-1").error()
            eq(err["msg"], f"failed to load flannel 'subnet.env' file: open {work}/subnet1.env: no such file or directory. "
                           "Check the flannel pod log for this node.")
            eq(flannel().run("STATUS", conf(work, 1, cniVersion="1.1.0"), host_ns=n1).error()["code"], 50)
            with open(f"{work}/subnet1.env", "w") as f:
                f.write("FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_MTU=1450\n")
            err = flannel().run("ADD", conf(work, 1), host_ns=n1, netns=ns_path(p1), container_id="pod-1").error()
            eq(err["msg"], f"failed to load flannel 'subnet.env' file: {work}/subnet1.env is missing FLANNEL_SUBNET, "
                           "FLANNEL_IPV6_SUBNET, FLANNEL_IPMASQ. Check the flannel pod log for this node.")
            with open(f"{work}/subnet1.env", "a") as f:
                f.write("FLANNEL_SUBNET=10.244.1.1/24\nFLANNEL_IPMASQ=false\n")
            eq(flannel().run("ADD", conf(work, 1, delegate={"name": "x"}), host_ns=n1, netns=ns_path(p1),
                             container_id="pod-1").error()["msg"], '"delegate" must not have "name" field')
            err = flannel().run("ADD", conf(work, 1, delegate={"type": "nosuchplugin"}), host_ns=n1, netns=ns_path(p1),
                                container_id="pod-1").error()
            check("nosuchplugin" in err["msg"], err["msg"])
            check(not os.path.exists(f"{work}/flannel1/pod-1"), "no scratch file left by a failed ADD (reference #426)")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    run_all(cleanup=[BIN])
