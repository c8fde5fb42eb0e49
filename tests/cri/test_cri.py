#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""kubelet's path, end to end: Debian's containerd 1.6 with its CRI plugin, driven over runtime.v1
by our own client (cri_client.py) as kubelet drives it, runs pods on a conflist of bridge
(host-local), portmap, bandwidth, tuning and firewall. The same scenario runs on our plugins
(`cni-all install`ed launchers) and on Debian's Go plugins (/usr/lib/cni), at cniVersion 1.0.0
and 0.4.0, on an iptables-nft node and an iptables-legacy one (PATH, as on a real node):
- the runtime's NetworkReady condition: false with no conflist, true once one is written, false
  again when it is removed;
- a pod with a hostPort mapping and the kubernetes.io/ingress-bandwidth and egress-bandwidth
  annotations, an HTTP server in it: its IP from PodSandboxStatus, HTTP to the pod IP and through
  the host port from another namespace, the qdiscs, the sysctl, the firewall rules, libcni's cache;
- containerd restarted while a pod runs: the pod keeps its IP and its traffic, and is torn down;
- a pod whose network namespace is gone before it is stopped;
- 20 pods in a row (those last three on our plugins only).
After each pod is stopped and removed nothing of it is left: veth, ifb, reservation, iptables
rules and chains in either variant, nf_tables rules, cache entry. At the end the node has no
table of the variant it does not use. Then what our plugins and Go's did (result, qdiscs, chain
names) is compared.

Each configuration gets a throwaway node of its own (cri_node.py); another namespace plays the
client outside it."""
import contextlib
import json
import os
import re
import shlex
import signal
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import REF, check, eq, run_all, sh, test  # noqa: E402
from cri_client import pod_sandbox_config  # noqa: E402
from cri_node import CGROUP_PARENT, IMAGE, PAGE, UPLINK, UPLINK_NODE, Node, cgroup_mounts, wait_for  # noqa: E402

NETWORK, BRIDGE, SUBNET = "crinet", "cni-cri0", "10.231.0.0/24"
HOST_PORT, SOMAXCONN = 18081, "1234"
BANDWIDTH = {"kubernetes.io/ingress-bandwidth": "1M", "kubernetes.io/egress-bandwidth": "2M"}


def conflist(version):
    return {"cniVersion": version, "name": NETWORK, "plugins": [
        {"type": "bridge", "bridge": BRIDGE, "isGateway": True, "ipMasq": True,
         "ipam": {"type": "host-local", "ranges": [[{"subnet": SUBNET}]], "routes": [{"dst": "0.0.0.0/0"}]}},
        {"type": "portmap", "capabilities": {"portMappings": True}},
        {"type": "bandwidth", "capabilities": {"bandwidth": True}},
        {"type": "tuning", "sysctl": {"net.core.somaxconn": SOMAXCONN}},
        {"type": "firewall"},
    ]}


def fetch(node, url, client=False, seconds=10):
    """The page at url, from the node or from the client namespace, retried while the server starts."""
    cmd = ["python3", "-c", "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=2).read().decode())",
           url]
    deadline = time.monotonic() + seconds
    while True:
        r = sh("ip", "netns", "exec", node.client, *cmd, check_rc=False) if client else node.run(*cmd, check_rc=False)
        if r.returncode == 0 or time.monotonic() > deadline:
            return r.stdout.strip()
        time.sleep(0.2)


def run_pod(node, name, port_mappings=(), annotations=None):
    config = pod_sandbox_config(name, str(uuid.uuid4()), CGROUP_PARENT, port_mappings=port_mappings,
                                annotations=annotations)
    pod_id = node.runtime.run_pod_sandbox(config)
    node.pods.add(pod_id)
    status = node.runtime.pod_sandbox_status(pod_id)
    eq(status["state"], 0, "the pod sandbox is ready")
    check(re.fullmatch(r"10\.231\.0\.\d+", status["ip"]), f"the pod's IP comes from host-local: {status['ip']!r}")
    return pod_id, config, status


def pod_netns(status):
    return next(ns["path"] for ns in status["info"]["runtimeSpec"]["linux"]["namespaces"] if ns["type"] == "network")


def remove_pod(node, pod_id):
    node.runtime.stop_pod_sandbox(pod_id)
    node.runtime.remove_pod_sandbox(pod_id)
    node.pods.discard(pod_id)
    check(pod_id not in node.runtime.list_pod_sandbox_ids(), "the pod is gone from ListPodSandbox")


def links(node, kind):
    return [link["ifname"] for link in json.loads(node.run("ip", "-j", "link", "show", "type", kind).stdout or "[]")]


def saves(node):
    """Every table of both iptables variants, both families, and the nf_tables ruleset, by name."""
    out = {}
    for tool in ("iptables-legacy-save", "ip6tables-legacy-save", "iptables-nft-save", "ip6tables-nft-save"):
        out[tool] = node.run(tool, check_rc=False).stdout
    out["nft"] = node.run("nft", "list", "ruleset").stdout
    return out


POD_CHAIN = re.compile(r"CNI-(?:DN-|SN-)?[0-9a-f]{20,}")


def leftovers(node, pod_id, ip):
    """What is left of a stopped and removed pod anywhere on the node: [] when nothing."""
    left = [f"veth {v}" for v in links(node, "veth") if v != UPLINK]
    left += [f"ifb {v}" for v in links(node, "ifb")]
    reserved = node.run("ls", "-A", f"/var/lib/cni/networks/{NETWORK}", check_rc=False).stdout.split()
    left += [f"reservation {r}" for r in reserved if re.fullmatch(r"[0-9.]+", r)]
    cache = node.run("ls", "-A", "/var/lib/cni/results", check_rc=False).stdout.split()
    left += [f"cache {c}" for c in cache if pod_id in c]
    for tool, text in saves(node).items():
        for line in text.splitlines():
            if pod_id in line or re.search(rf"\b{re.escape(ip)}\b", line) or POD_CHAIN.search(line):
                left.append(f"{tool}: {line.strip()}")
    return left


def variant_purity(node):
    """A node's tables are all of its own variant: nothing of the other one was made."""
    tables = saves(node)
    if node.variant == "legacy":
        eq(tables["nft"].strip(), "", "no nf_tables table on a legacy node")
    else:
        eq((tables["iptables-legacy-save"] + tables["ip6tables-legacy-save"]).strip(), "",
           "no legacy table on an nft node")


def qdisc_shape(node, dev):
    """(kind, rate in bits/s, burst, latency) of each qdisc on dev, by tc's JSON."""
    shape = []
    for q in json.loads(node.run("tc", "-j", "qdisc", "show", "dev", dev).stdout or "[]"):
        options = q.get("options", {})
        rate = options.get("rate")
        shape.append((q["kind"], rate * 8 if rate else None, options.get("burst"), options.get("lat")))
    return sorted(shape, key=str)


# --- the scenario: each step is a test; a node (one containerd) is shared by a configuration's steps

NODES = {}
SHAPES = {}


def step_network_ready(cfg):
    node = NODES[cfg] = Node(*cfg)
    node.start()
    ready, reason, _ = node.network_ready()
    check(not ready and reason == "NetworkPluginNotReady", f"no conflist: NetworkReady false ({reason})")
    node.write_conflist(conflist(node.version))
    wait_for(lambda: node.network_ready()[0], "NetworkReady once the conflist is written", seconds=20)


def step_pod(cfg):
    node = NODES[cfg]
    pod_id, config, status = run_pod(node, "web", [{"container_port": 80, "host_port": HOST_PORT}], BANDWIDTH)
    ip = status["ip"]
    container = node.runtime.create_container(pod_id, config, "httpd", IMAGE, ["/bin/httpd", "-f", "-p", "80", "-h", "/www"])
    node.runtime.start_container(container)
    eq(fetch(node, f"http://{ip}/"), PAGE, "HTTP to the pod IP from the node")
    eq(fetch(node, f"http://{UPLINK_NODE}:{HOST_PORT}/", client=True), PAGE, "HTTP through the host port (portmap DNAT)")
    veths = [v for v in links(node, "veth") if v != UPLINK]
    eq(len(veths), 1, "one pod, one host veth")
    ifbs = links(node, "ifb")
    eq(len(ifbs), 1, "bandwidth's ifb for the egress limit")
    host_qdiscs, ifb_qdiscs = qdisc_shape(node, veths[0]), qdisc_shape(node, ifbs[0])
    check(("tbf", 1_000_000) in [q[:2] for q in host_qdiscs], f"ingress-bandwidth 1M: a 1 Mbit/s tbf on the host veth: {host_qdiscs}")
    check(("ingress", None) in [q[:2] for q in host_qdiscs], f"the host veth's ingress qdisc redirects to the ifb: {host_qdiscs}")
    check(("tbf", 2_000_000) in [q[:2] for q in ifb_qdiscs], f"egress-bandwidth 2M: a 2 Mbit/s tbf on the ifb: {ifb_qdiscs}")
    eq(node.run("nsenter", f"--net={pod_netns(status)}", "cat", "/proc/sys/net/core/somaxconn").stdout.strip(),
       SOMAXCONN, "tuning's sysctl in the pod's namespace")
    tables = saves(node)
    current = tables["iptables-legacy-save" if node.variant == "legacy" else "iptables-nft-save"]
    check(re.search(rf"-A CNI-FORWARD .*{re.escape(ip)}", current), "the firewall plugin's rules for the pod")
    check(re.search(rf"--dport {HOST_PORT}\b", current), "portmap's DNAT for the host port")
    check(f"{NETWORK}-{pod_id}-eth0" in node.run("ls", "/var/lib/cni/results").stdout, "libcni's cache holds the attachment")
    SHAPES[cfg] = {"result": result_shape(status["info"].get("cniResult"), veths[0], ifbs[0], pod_netns(status)), "host_qdiscs": host_qdiscs,
                   "ifb_qdiscs": ifb_qdiscs, "chains": sorted(set(POD_CHAIN.sub("CNI-<hash>", c)
                                                                      for c in re.findall(r"^:(\S+)", current, re.M)))}
    remove_pod(node, pod_id)
    eq(leftovers(node, pod_id, ip), [], "StopPodSandbox and RemovePodSandbox left nothing")


def result_shape(result, host_veth, ifb, netns_path):
    """containerd's view of the CNI result, without what differs from run to run."""
    text = json.dumps(result or {}, sort_keys=True)
    for name, stands_for in ((host_veth, "<host-veth>"), (ifb, "<ifb>"), (netns_path, "<netns>")):
        text = text.replace(name, stands_for)
    return re.sub(r'"(?:[0-9a-f]{2}:){5}[0-9a-f]{2}"', '"<mac>"', text)


def step_restart(cfg):
    node = NODES[cfg]
    pod_id, config, status = run_pod(node, "survivor", [{"container_port": 80, "host_port": HOST_PORT}])
    container = node.runtime.create_container(pod_id, config, "httpd", IMAGE, ["/bin/httpd", "-f", "-p", "80", "-h", "/www"])
    node.runtime.start_container(container)
    eq(fetch(node, f"http://{UPLINK_NODE}:{HOST_PORT}/", client=True), PAGE, "HTTP through the host port")
    node.stop_containerd()
    node.start_containerd()
    wait_for(lambda: node.network_ready()[0], "NetworkReady after the restart", seconds=20)
    again = node.runtime.pod_sandbox_status(pod_id)
    eq((again["state"], again["ip"]), (0, status["ip"]), "the pod survives the restart with its IP")
    eq(fetch(node, f"http://{UPLINK_NODE}:{HOST_PORT}/", client=True), PAGE, "and its traffic")
    remove_pod(node, pod_id)
    eq(leftovers(node, pod_id, status["ip"]), [], "the pod, torn down after the restart, left nothing")


def step_netns_gone(cfg):
    node = NODES[cfg]
    pod_id, _, status = run_pod(node, "orphan", [{"container_port": 80, "host_port": HOST_PORT}], BANDWIDTH)
    veth = [v for v in links(node, "veth") if v != UPLINK]
    os.kill(status["info"]["pid"], signal.SIGKILL)
    # containerd handles the sandbox's exit on its own (it deletes the task, and the shim with it,
    # then marks the sandbox NOTREADY). A StopPodSandbox racing that finds the shim closing and
    # fails with "ttrpc: closed"; kubelet sees the pod not ready before it stops it, and so do we.
    wait_for(lambda: node.runtime.pod_sandbox_status(pod_id)["state"] == 1, "containerd to see the sandbox exit")
    node.run("umount", pod_netns(status))
    wait_for(lambda: not set(veth) & set(links(node, "veth")), "the kernel to remove the veth with its namespace")
    remove_pod(node, pod_id)
    left = leftovers(node, pod_id, status["ip"])
    if node.plugins == "go" and left:
        # The reference's bridge skips its ipMasq teardown when the namespace is gone (docs/
        # compatibility.md); the rest of the pod is cleaned. The chain is removed by hand here.
        chain = masq_chain(node, pod_id)
        check(chain and all(chain in line for line in left), f"Go leaves only the ipMasq chain {chain}: {left}")
        drop_masq_chain(node, pod_id, chain)
        left = leftovers(node, pod_id, status["ip"])
    eq(left, [], "a pod whose namespace was gone first left nothing")


def masq_chain(node, pod_id):
    rule = [r for r in node.run("iptables", "-t", "nat", "-S", "POSTROUTING").stdout.splitlines() if pod_id in r]
    return rule[0].split(" -j ")[-1].strip() if rule else None


def drop_masq_chain(node, pod_id, chain):
    for rule in node.run("iptables", "-t", "nat", "-S", "POSTROUTING").stdout.splitlines():
        if pod_id in rule:
            node.run("iptables", "-t", "nat", "-D", *shlex.split(rule)[1:])
    node.run("iptables", "-t", "nat", "-F", chain)
    node.run("iptables", "-t", "nat", "-X", chain)


def step_twenty(cfg):
    node = NODES[cfg]
    seen = []
    for n in range(20):
        pod_id, _, status = run_pod(node, f"row-{n}", [{"container_port": 80, "host_port": HOST_PORT}])
        remove_pod(node, pod_id)
        seen.append((pod_id, status["ip"]))
    left = [x for pod_id, ip in seen for x in leftovers(node, pod_id, ip)]
    eq(left, [], "20 pods in a row left nothing")


def step_teardown(cfg):
    node = NODES.pop(cfg)
    try:
        node.remove_conflist(NETWORK)
        wait_for(lambda: not node.network_ready()[0], "NetworkReady false once the conflist is removed", seconds=20)
        variant_purity(node)
    finally:
        node.close()
    left = [h.split()[0] + CGROUP_PARENT for h in cgroup_mounts().splitlines() if os.path.exists(h.split()[0] + CGROUP_PARENT)]
    eq(left, [], "the node's cgroups are removed")


STEPS = [(step_network_ready, "NetworkReady is false without a conflist, true with one"),
         (step_pod, "a pod with a hostPort, bandwidth annotations and an HTTP server: traffic, qdiscs, sysctl, rules; nothing left"),
         (step_restart, "containerd restarted while a pod runs: IP and traffic kept, nothing left after"),
         (step_netns_gone, "a pod whose network namespace is gone before StopPodSandbox: nothing left"),
         (step_twenty, "20 pods in a row: nothing left"),
         (step_teardown, "NetworkReady false once the conflist is removed; no table of the other iptables variant")]
CONFIGS = [(plugins, version, variant) for plugins in ("cni-all", "go") for version in ("1.0.0", "0.4.0")
           for variant in ("nft", "legacy")]

# Go's plugins run the steps whose outcome is compared with ours (the pod step) and the node's
# start and end; the others would test containerd on Go's plugins, which is not this project's.
GO_STEPS = (step_network_ready, step_pod, step_teardown)

for cfg in CONFIGS:
    for fn, what in STEPS:
        if cfg[0] == "go" and fn not in GO_STEPS:
            continue
        def case(fn=fn, cfg=cfg):
            if fn is not step_network_ready and cfg not in NODES:
                raise AssertionError("the node did not start")
            try:
                fn(cfg)
            except Exception:
                if cfg in NODES:
                    print("# containerd's log ends:\n# " + NODES[cfg].log_tail().replace("\n", "\n# "), file=sys.stderr)
                raise
            finally:  # a failed step's pods do not spill into the next step
                for pod_id in list(NODES[cfg].pods if cfg in NODES else ()):
                    with contextlib.suppress(Exception):
                        remove_pod(NODES[cfg], pod_id)
        case.__name__ = f"{fn.__name__}_{'_'.join(cfg).replace('.', '')}"
        case.__doc__ = f"{cfg[0]}, cniVersion {cfg[1]}, iptables-{cfg[2]}: {what}"
        test(case)

for version in ("1.0.0", "0.4.0"):
    for variant in ("nft", "legacy"):
        def compare(version=version, variant=variant):
            ours, go = SHAPES.get(("cni-all", version, variant)), SHAPES.get(("go", version, variant))
            check(ours and go, "both runs of the pod step passed")
            eq(ours, go, "our plugins and Go's: containerd's result, the qdiscs and the chain names")
        compare.__name__ = f"compare_{version.replace('.', '')}_{variant}"
        compare.__doc__ = f"cniVersion {version}, iptables-{variant}: the pod step under our plugins matches Go's"
        test(compare)


def close_all():
    for node in NODES.values():
        node.close()


if __name__ == "__main__":
    check(REF, "Debian's containernetworking-plugins must be installed (/usr/lib/cni)")
    # meson's timeout sends SIGTERM: the nodes are still closed (containerd and its pods killed).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    try:
        run_all()
    finally:
        close_all()
