#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""cluster-ipam (docs/cluster-ipam.md) against a real 3-member etcd with TLS and client
certificates (tests/lib/etcd_cluster.py). Each node is a process in a UTS namespace of its own
whose host name is the node's name (the applet's node name when /etc/cni/cluster-ipam/node is
absent); the credentials sit in /etc/cni/cluster-ipam/ on a tmpfs of this run's mount namespace
(tests/lib/private_state.py), as a network config may name them. Each test has an etcd prefix
and a network of its own and asserts on etcd's keys (every handle's address is its block's
allocation, none twice):
dual stack, exclude, the same ADD twice, DEL without prevResult and twice; two configs of one
name, whose GCs release only their own; one container ID on two nodes; the prefix and endpoints
root's files allow; a /28 exhausted by two nodes, then borrowing; kill -9 of the etcd leader in
the middle of a run; ADD, DEL and GC killed after each of their etcd writes
(CNI_ALL_TEST_KILL_AFTER_WRITE), then GC. A lab (two_node_lab) has two node namespaces sharing
one layer-2 segment and a second etcd cluster in a "lan" namespace, reached by both: 8 nodes
race ADDs (CNI_TEST_CIPAM_ADDS, default 200) on it, as processes in the lan namespace, two of
them also the lab's node namespaces, each adding a pod (macvlan with cluster-ipam) during the
race: the pods' addresses are in their nodes' own blocks, apart from the race's, and reach each
other; then every DEL, the pods' with the race's; and end to end, macvlan with cluster-ipam on
the two node namespaces (kernel state: the pods' addresses and traffic between them), called as
a runtime calls the plugin and through `cni-all exec`."""
import concurrent.futures
import contextlib
import ctypes
import hashlib
import ipaddress
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import BIN, CNI_ALL, addrs, check, eq, link, netns, ns_path, run_all, sh, test  # noqa: E402
from etcd_cluster import EtcdCluster  # noqa: E402

CLONE_NEWUTS = 0x04000000
CLONE_NEWNET = 0x40000000
CRED_DIR = "/etc/cni/cluster-ipam"
ADDS = int(os.environ.get("CNI_TEST_CIPAM_ADDS") or "200")
_libc = ctypes.CDLL(None, use_errno=True)
_state = {}


def credentials(c, stem=""):
    """Copies cluster c's client credentials to CRED_DIR as STEMca.pem, STEMclient.pem and
    STEMclient-key.pem (the first call mounts the tmpfs on /etc/cni); the config's etcd section
    naming them, without a prefix."""
    if "creds" not in _state:
        with open("/proc/self/mountinfo") as f:
            private = any(line.split()[4] == "/run/cni" for line in f)
        check(private, "run under tests/lib/private_state.py: the test mounts a tmpfs on /etc/cni")
        os.makedirs("/etc/cni", exist_ok=True)
        sh("mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", "/etc/cni")
        os.mkdir(CRED_DIR, 0o700)
        _state["creds"] = True
    for name, src in (("ca.pem", c.ca), ("client.pem", c.cert), ("client-key.pem", c.key)):
        with open(src) as f, open(os.path.join(CRED_DIR, stem + name), "w",
                                  opener=lambda p, fl: os.open(p, fl, 0o600)) as g:
            g.write(f.read())
    return {"endpoints": c.endpoints(), "caFile": f"{CRED_DIR}/{stem}ca.pem",
            "certFile": f"{CRED_DIR}/{stem}client.pem", "keyFile": f"{CRED_DIR}/{stem}client-key.pem",
            "dialTimeout": "20s"}  # a TLS handshake of a fresh process on a loaded 2-core CI machine took over 3 s


def setup():
    """The cluster on loopback and its credentials, made by the first test that needs them."""
    if "cluster" not in _state:
        _state["cluster"] = EtcdCluster()
        _state["etcd"] = credentials(_state["cluster"])
    return _state["cluster"]


def conf(prefix, ranges, version="1.0.0", name=None, etcd=None, **ipam):
    """A network config of cluster-ipam on `etcd` (a config's etcd section; the loopback cluster's
    by default)."""
    if etcd is None:
        setup()
        etcd = _state["etcd"]
    body = {"type": "cluster-ipam", "ranges": ranges, "etcd": dict(etcd, prefix=prefix)}
    body.update(ipam)
    return {"cniVersion": version, "name": name or prefix.strip("/").split("/")[-1], "ipam": body}


def new_prefix(what):
    """A prefix of one test under the node's default base prefix /cni-all/."""
    return f"/cni-all/{what}-{uuid.uuid4().hex[:6]}/"


def hname(node, net, ctr, ifname="eth0"):
    """A handle's name (docs/cluster-ipam.md, Data layout): node/network/containerID/ifname."""
    return f"{node}/{net}/{ctr}/{ifname}"


def _enter_node(node, client_ns=None):
    """In the child, before exec: a UTS namespace whose host name is the node's name (and the
    named network namespace client_ns, whence the lab's etcd is reached)."""
    def enter():
        if client_ns:
            fd = os.open(ns_path(client_ns), os.O_RDONLY)
            if _libc.setns(fd, CLONE_NEWNET) != 0:
                os._exit(122)
            os.close(fd)
        if _libc.unshare(CLONE_NEWUTS) != 0:
            os._exit(120)
        name = node.encode()
        if _libc.sethostname(name, len(name)) != 0:
            os._exit(121)
    return enter


def call(node, command, cfg, ctr="c1", ifname="eth0", applet="cluster-ipam", netns="/proc/1/ns/net", host_ns=None,
         kill_after_write=None, client_ns=None):
    """One CNI call of `applet` as `node`: (rc, parsed stdout or None). kill_after_write=N: the
    plugin kills itself after its N-th etcd write (CNI_ALL_TEST_KILL_AFTER_WRITE, rc -9).
    host_ns: the call runs in that named network namespace through `ip netns exec`; client_ns:
    the process enters it itself (cheaper: for cluster-ipam alone, reaching the lab's etcd)."""
    env = {"CNI_COMMAND": command, "CNI_CONTAINERID": ctr, "CNI_NETNS": netns, "CNI_IFNAME": ifname,
           "CNI_PATH": BIN, "PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")}
    if kill_after_write:
        env["CNI_ALL_TEST_KILL_AFTER_WRITE"] = str(kill_after_write)
    cmd = [applet]
    exe = CNI_ALL
    if host_ns:
        cmd, exe = ["ip", "netns", "exec", host_ns, os.path.join(BIN, applet)], None
    r = subprocess.run(cmd, executable=exe, input=json.dumps(cfg), env=env, capture_output=True, text=True,
                       timeout=60, preexec_fn=_enter_node(node, client_ns))
    try:
        out = json.loads(r.stdout) if r.stdout.strip() else None
    except ValueError:
        out = {"raw": r.stdout, "stderr": r.stderr}
    return r.returncode, out


def add_ok(node, cfg, ctr, ifname="eth0"):
    rc, out = call(node, "ADD", cfg, ctr, ifname)
    check(rc == 0, f"ADD {node}/{ctr}: rc {rc} {out}")
    return [ip["address"] for ip in out["ips"]]


def etcd_kvs(prefix, c=None):
    """{key past the prefix: parsed value} of every key under the prefix, read from etcd (the
    loopback cluster, or c)."""
    import base64
    c = c or setup()
    b64 = lambda s: base64.b64encode(s.encode()).decode()  # noqa: E731
    end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    for i in c.running():
        a = c._post(i, "/v3/kv/range", {"key": b64(prefix), "range_end": b64(end)}, timeout=5)
        if a is not None:
            return {base64.b64decode(kv["key"]).decode()[len(prefix):]: json.loads(base64.b64decode(kv["value"]))
                    for kv in a.get("kvs", [])}
    raise AssertionError("no etcd member answered the range")


def consistent(prefix, c=None, orphans=()):
    """etcd's keys under the prefix are one picture: each handle's address is its block's
    allocation of that ordinal naming the handle, no allocation is without its handle (but those
    naming `orphans`), no address is held twice. {handle name: [addresses]} and the blocks."""
    kvs = etcd_kvs(prefix, c)
    blocks = {k: v for k, v in kvs.items() if "/blocks/" in k}
    handles = {k[len("handles/"):]: v for k, v in kvs.items() if k.startswith("handles/")}
    held, seen = {}, set()
    for name, h in handles.items():
        eq(name.split("/")[0], h["node"], f"handle {name}: the node in its key and its value")
        for a in h["addresses"]:
            b = blocks.get(a["block"][len(prefix):] if a["block"].startswith(prefix) else a["block"])
            check(b is not None, f"handle {name}: block {a['block']} missing")
            eq(b["allocations"].get(str(a["ordinal"])), name, f"block {a['block']} ordinal {a['ordinal']}")
            first = ipaddress.ip_address(a["block"].rstrip("/").split("/")[-1].split("-")[0])
            eq(str(first + a["ordinal"]), a["address"].split("/")[0], f"handle {name}'s address and ordinal")
            check(a["address"] not in seen, f"{a['address']} held twice")
            seen.add(a["address"])
            held.setdefault(name, []).append(a["address"])
    for k, b in blocks.items():
        size = ipaddress.ip_network(k.split("/")[-1].replace("-", "/")).num_addresses
        for o, name in b["allocations"].items():
            check(name in handles or name in orphans, f"block {k} ordinal {o} names {name}, which has no handle")
            check(0 <= int(o) < size, f"block {k}: ordinal {o} outside its {size} addresses")
    return held, blocks


@test
def test_dual_stack_exclude_idempotent_del():
    """dual stack and exclude; the same ADD twice gives the same addresses; DEL without prevResult, twice"""
    p = new_prefix("cipam-d")
    cfg = conf(p, [[{"subnet": "10.71.0.0/27", "gateway": "10.71.0.1"}], [{"subnet": "fd71::/120"}]],
               exclude=["10.71.0.0/29", "fd71::/125"], blockSize=29)
    first = add_ok("d-node", cfg, "ctr-a")
    eq(len(first), 2, "one address per range set")
    v4, v6 = (ipaddress.ip_interface(a) for a in first)
    check(v4.version == 4 and v6.version == 6, first)
    check(v4.ip not in ipaddress.ip_network("10.71.0.0/29") and v6.ip not in ipaddress.ip_network("fd71::/125"),
          f"an excluded address handed out: {first}")
    eq(add_ok("d-node", cfg, "ctr-a"), first, "the same ADD twice")
    second = add_ok("d-node", cfg, "ctr-b")
    check(not set(second) & set(first), f"{second} and {first}")
    held, _ = consistent(p)
    eq(sorted(held), [hname("d-node", cfg['name'], "ctr-a"), hname("d-node", cfg['name'], "ctr-b")])
    for _ in range(2):  # DEL twice, no prevResult
        rc, out = call("d-node", "DEL", cfg, "ctr-a")
        eq(rc, 0, f"DEL: {out}")
    held, _ = consistent(p)
    eq(sorted(held), [hname("d-node", cfg['name'], "ctr-b")])
    rc, out = call("d-node", "CHECK", dict(cfg, prevResult={"cniVersion": "1.0.0", "ips": []}), "ctr-a")
    check(rc != 0, "CHECK of a released attachment passes")
    # Excluding all of a small range set: every ADD but what is left is refused.
    tiny = conf(new_prefix("cipam-x"), [[{"subnet": "10.72.0.0/29"}]], exclude=["10.72.0.0/30"], blockSize=30)
    got = []
    for i in range(5):
        rc, out = call("x-node", "ADD", tiny, f"t{i}")
        if rc != 0:
            break
        got.append(out["ips"][0]["address"])
    eq(sorted(got), ["10.72.0.4/29", "10.72.0.5/29", "10.72.0.6/29"], "only the range's addresses outside exclude")
    check("no IP addresses available" in out["msg"], out)


def race(cfg, nodes, adds, workers=2, command="ADD", client_ns=None):
    """`adds` calls spread over `nodes`, `workers` at a time per node: [(node, ctr, rc, out)]."""
    jobs = [(nodes[i % len(nodes)], f"r{i}") for i in range(adds)]
    with concurrent.futures.ThreadPoolExecutor(len(nodes) * workers) as pool:
        futures = [pool.submit(lambda n=n, ctr=ctr: (n, ctr, *call(n, command, cfg, ctr, client_ns=client_ns)))
                   for n, ctr in jobs]
        return [f.result() for f in futures]


def gc_call(node, cfg, valid=(), kill_after_write=None, client_ns=None):
    """CNI GC as `node` with the containers in `valid` (interface eth0) as the valid list: (rc, out)."""
    gc = dict(cfg, cniVersion="1.1.0")
    gc["cni.dev/valid-attachments"] = [{"containerID": ctr, "ifname": "eth0"} for ctr in valid]
    return call(node, "GC", gc, ctr="", kill_after_write=kill_after_write, client_ns=client_ns)


def gc_node(node, cfg, valid=(), client_ns=None):
    rc, out = gc_call(node, cfg, valid, client_ns=client_ns)
    eq(rc, 0, f"GC on {node}: {out}")


def age_blocks(prefix, seconds, c=None):
    """Every block's lastWrite moved `seconds` into the past, in etcd (the grace period passed
    without waiting for it)."""
    c = c or setup()
    for k, v in etcd_kvs(prefix, c).items():
        if "/blocks/" in k:
            c.put(prefix + k, json.dumps(dict(v, lastWrite=v["lastWrite"] - seconds)))


@test
def test_eight_nodes_race():
    """8 nodes race ADDs on the lab's etcd, two of them also node namespaces whose pod (macvlan) is added during the race: no address twice, every handle in its block, the pods' in their nodes' own, traffic between them; after every DEL (the pods' among them) and the grace period, GC empties the pool"""
    c, lab_nodes, etcd = lab()
    lan = lab_nodes[0][2]
    p = new_prefix("cipam-r")
    nodes = [f"rnode{i}" for i in range(8)]
    cfg = conf(p, [[{"subnet": "10.73.0.0/21"}]], etcd=etcd, blockSize=27, blockGracePeriod=600)
    net = cfg["name"]
    plugin = dict(cfg, type="macvlan", master="eth1", mode="bridge")

    def pod(i, command):  # the runtime's call of macvlan for the pod of node namespace i, as race node i
        return call(nodes[i], command, plugin, ctr=f"pod{i}", applet="macvlan", netns=ns_path(lab_nodes[i][1]),
                    host_ns=lab_nodes[i][0])

    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(2) as side:
        pods = [side.submit(pod, i, "ADD") for i in range(2)]
        results = race(cfg, nodes, ADDS, client_ns=lan)
        pods = [f.result() for f in pods]
    took = time.monotonic() - start
    failed = [r for r in results if r[2] != 0]
    eq(failed, [], "every ADD succeeds")
    for i, (rc, out) in enumerate(pods):
        check(rc == 0, f"pod {i}'s ADD on {nodes[i]}: rc {rc} {out}")
    pod_addrs = [out["ips"][0]["address"] for _, out in pods]
    addresses = [r[3]["ips"][0]["address"] for r in results]
    eq(len(set(addresses + pod_addrs)), ADDS + 2, "no address handed out twice")
    held, blocks = consistent(p, c)
    eq(len(held), ADDS + 2, "one handle per ADD")
    for node, ctr, _, out in results:
        eq(held[hname(node, net, ctr)], [out["ips"][0]["address"]], f"{ctr}'s handle")
    kvs = etcd_kvs(p, c)
    for i, (_, pod_ns, _) in enumerate(lab_nodes):
        eq([a for a in addrs(pod_ns, "eth0") if not a.startswith("fe80:")], [pod_addrs[i]], f"pod {i}'s eth0")
        eq(held[hname(nodes[i], net, f"pod{i}")], [pod_addrs[i]], f"pod {i}'s handle")
        block = kvs["handles/" + hname(nodes[i], net, f"pod{i}")]["addresses"][0]["block"][len(p):]
        eq(blocks[block]["node"], nodes[i], f"pod {i}'s address is in a block of its node")
    for i in range(2):
        sh("ip", "netns", "exec", lab_nodes[i][1], "ping", "-c1", "-W5", pod_addrs[1 - i].split("/")[0])
    owners = {b["node"] for b in blocks.values()}
    eq(owners, set(nodes), "every node claimed blocks of its own")
    print(f"# {ADDS} ADDs on 8 nodes in {took:.1f} s ({ADDS / took:.0f}/s), {len(blocks)} blocks", flush=True)
    with concurrent.futures.ThreadPoolExecutor(2) as side:
        pods = [side.submit(pod, i, "DEL") for i in range(2)]
        results = race(cfg, nodes, ADDS, command="DEL", client_ns=lan)
        pods = [f.result() for f in pods]
    eq([r for r in results if r[2] != 0], [], "every DEL succeeds")
    eq([rc for rc, _ in pods], [0, 0], f"the pods' DELs: {pods}")
    for i in range(2):
        check(link(lab_nodes[i][1], "eth0") is None, f"pod {i}'s eth0 is gone")
    held, blocks = consistent(p, c)
    eq(held, {}, "no handle left")
    check(all(not b["allocations"] for b in blocks.values()), "an allocation left")
    gc_node(nodes[0], cfg, client_ns=lan)
    eq(sorted(consistent(p, c)[1]), sorted(blocks), "blocks are kept through the grace period")
    age_blocks(p, 601, c)
    for n in nodes:
        gc_node(n, cfg, client_ns=lan)
    eq([k for k in etcd_kvs(p, c) if "/blocks/" in k], [], "the pool is empty after the grace period")


@test
def test_exhaustion_and_borrowing():
    """a /28 shared by two nodes: exactly its 13 addresses, then an error naming the range; a node whose neighbour holds every block borrows"""
    p = new_prefix("cipam-e")
    cfg = conf(p, [[{"subnet": "10.74.0.0/28"}]], blockSize=30)
    got = []
    for i in range(20):
        rc, out = call("enode-a" if i % 2 else "enode-b", "ADD", cfg, f"e{i}")
        if rc != 0:
            break
        got.append(out["ips"][0]["address"])
    eq(sorted(got, key=lambda a: ipaddress.ip_interface(a)),
       [f"10.74.0.{i}/28" for i in range(2, 15)], "every address of the range once (.1 the gateway)")
    check("no IP addresses available in range set: 10.74.0.1-10.74.0.14" in out["msg"], out)
    rc, st = call("enode-a", "STATUS", dict(cfg, cniVersion="1.1.0"), ctr="")
    check(rc != 0 and st["code"] == 50, f"STATUS of an exhausted pool: {st}")
    # enode-a gives back three addresses; its blocks stay its own (the grace period): enode-c,
    # which holds no block, borrows those three, then finds nothing.
    held, blocks = consistent(p)
    mine = [name for name in held if any(b["node"] == "enode-a" and name in b["allocations"].values()
                                         for b in blocks.values())][:3]
    for name in mine:
        eq(call("enode-a", "DEL", cfg, name.split("/")[2])[0], 0)
    freed = sorted(a for name in mine for a in held[name])
    borrowed = sorted(add_ok("enode-c", cfg, f"b{i}")[0] for i in range(3))
    eq(borrowed, freed, "the borrower gets the neighbour's free addresses")
    rc, out = call("enode-c", "ADD", cfg, "b9")
    check(rc != 0 and "no IP addresses available" in out["msg"], out)
    held, blocks = consistent(p)
    check(all(b["node"] != "enode-c" for b in blocks.values()), "the borrower claimed a block")
    kvs = etcd_kvs(p)
    for i in range(3):
        h = kvs["handles/" + hname("enode-c", cfg['name'], f"b{i}")]
        eq(h["node"], "enode-c", "a borrowed address's handle is the borrower's")
        eq(kvs[h["addresses"][0]["block"][len(p):]]["node"], "enode-a", "in the neighbour's block")
    for i in range(3):
        eq(call("enode-c", "DEL", cfg, f"b{i}")[0], 0, "the borrower's DEL")
    held, _ = consistent(p)
    check(not set(freed) & {a for v in held.values() for a in v}, "a borrowed address still held after DEL")


@test
def test_leader_killed_mid_run():
    """kill -9 of the etcd leader mid-run: each ADD succeeds or fails with code 11; after its return no address twice and GC leaks nothing"""
    c = setup()
    p = new_prefix("cipam-k")
    nodes = [f"knode{i}" for i in range(4)]
    cfg = conf(p, [[{"subnet": "10.76.0.0/22"}]], blockSize=27)
    with concurrent.futures.ThreadPoolExecutor(1) as killer:
        def kill_later():
            time.sleep(0.4)
            return c.kill_leader()
        killed = killer.submit(kill_later)
        results = race(cfg, nodes, 120)
        member = killed.result()
    codes = {r[3]["code"] for r in results if r[2] != 0}
    check(codes <= {11}, f"failures other than code 11: {[r for r in results if r[2] != 0][:3]}")
    c.restart(member)
    c.wait_healthy()
    ok = {hname(r[0], cfg['name'], r[1]): r[3]["ips"][0]["address"] for r in results if r[2] == 0}
    held, _ = consistent(p)
    for name, a in ok.items():
        eq(held.get(name), [a], f"{name}: the address ADD returned")
    # GC with the successful ADDs as the valid list: what failed ADDs may have written goes.
    for n in nodes:
        gc_node(n, cfg, [r[1] for r in results if r[2] == 0 and r[0] == n])
    held, _ = consistent(p)
    eq(sorted(held), sorted(ok), "GC leaves exactly the successful ADDs")
    print(f"# {len(ok)} of {len(results)} ADDs succeeded around the kill of member {member}", flush=True)


def killed(node, command, cfg, ctr, n):
    """A CNI call killed after its n-th etcd write (the test hook): asserts the SIGKILL."""
    rc, out = call(node, command, cfg, ctr, kill_after_write=n)
    eq(rc, -9, f"{command} {ctr} with the hook at write {n}: {out}")


@test
def test_killed_between_writes():
    """a plugin killed after each of its etcd writes (CNI_ALL_TEST_KILL_AFTER_WRITE), ADD, DEL and GC: etcd stays one picture, GC leaks nothing, a fresh ADD works"""
    p = new_prefix("cipam-w")
    cfg = conf(p, [[{"subnet": "10.79.0.0/24"}], [{"subnet": "fd79::/120"}]], blockSize=28, blockSizeV6=124)
    node, net = "w-node", cfg["name"]
    handles = lambda *orphans: sorted(consistent(p, orphans=orphans)[0])  # noqa: E731 - asserts the picture
    # ADD makes one write (claim or allocation, address and handle, both families): killed after
    # it, the runtime saw a failure but etcd holds the attachment whole.
    killed(node, "ADD", cfg, "k1", 1)  # the blocks claimed in the same txn
    eq(handles(), [hname(node, net, "k1")], "the killed ADD's txn committed whole")
    rc, out = call(node, "ADD", cfg, "ok", kill_after_write=2)
    eq(rc, 0, f"an ADD with the hook at its 2nd write is not killed (ADD writes once): {out}")
    killed(node, "ADD", cfg, "k2", 1)  # in a block held
    # The runtime retries k1's ADD (same addresses), gives up on k2: GC with k1 valid keeps it.
    first = consistent(p)[0][hname(node, net, "k1")]
    eq(add_ok(node, cfg, "k1"), first, "the retried ADD finds the killed one's addresses")
    gc_node(node, cfg, ["k1", "ok"])
    eq(handles(), [hname(node, net, "k1"), hname(node, net, "ok")], "GC released the killed ADD outside the valid list")
    # DEL makes one write: killed after it, the addresses are gone; the retried DEL succeeds.
    killed(node, "DEL", cfg, "k1", 1)
    eq(handles(), [hname(node, net, "ok")], "the killed DEL's txn committed whole")
    eq(call(node, "DEL", cfg, "k1")[0], 0, "the retried DEL")
    # GC writes once per released handle, then once per block it repairs: killed after each.
    for ctr in ("s1", "s2"):
        add_ok(node, cfg, ctr)
    _, blocks = consistent(p)
    key, b = next((k, b) for k, b in blocks.items() if "10.79" in k)
    ghost = hname(node, net, "ghost")  # an allocation without a handle, as a hand's (or an older version's) write leaves
    setup().put(p + key, json.dumps(dict(b, allocations=dict(b["allocations"], **{"15": ghost}))))
    rc, _ = gc_call(node, cfg, ["ok"], kill_after_write=1)
    eq(rc, -9, "GC killed after its first release")
    eq(len(handles(ghost)), 2, "GC killed after one of two releases")
    rc, _ = gc_call(node, cfg, ["ok"], kill_after_write=2)
    eq(rc, -9, "GC killed after its second release and the block's repair")
    gc_node(node, cfg, ["ok"])
    held, blocks = consistent(p)
    eq(sorted(held), [hname(node, net, "ok")], "nothing leaked")
    eq(sum(len(b["allocations"]) for b in blocks.values()), 2, "only ok's two allocations left")
    check({b["node"] for b in blocks.values()} == {node}, blocks)
    add_ok(node, cfg, "fresh")
    gc_node(node, cfg)
    held, blocks = consistent(p)
    eq((held, [b["allocations"] for b in blocks.values() if b["allocations"]]), ({}, []), "GC of every attachment")


@test
def test_networks_of_one_name():
    """two configs of one name (two tenants' NADs) on other subnets, an ADD in each: GC of one with an empty valid list leaves the other's handle and address in etcd"""
    p = new_prefix("cipam-n")
    a = conf(p, [[{"subnet": "10.80.0.0/24"}]], name="same-name")
    b = conf(p, [[{"subnet": "10.81.0.0/24"}]], name="same-name")
    a_addr, b_addr = add_ok("n-node", a, "pod-a"), add_ok("n-node", b, "pod-b")
    held, _ = consistent(p)
    eq(held, {hname("n-node", "same-name", "pod-a"): a_addr, hname("n-node", "same-name", "pod-b"): b_addr})
    kvs = etcd_kvs(p)
    check(kvs["handles/" + hname("n-node", "same-name", "pod-a")]["config"] !=
          kvs["handles/" + hname("n-node", "same-name", "pod-b")]["config"], "each handle names its config")
    gc_node("n-node", a)
    held, blocks = consistent(p)
    eq(held, {hname("n-node", "same-name", "pod-b"): b_addr}, "A's GC released A's handle only")
    b_block = next(v for k, v in blocks.items() if "10.81" in k)
    eq(list(b_block["allocations"].values()), [hname("n-node", "same-name", "pod-b")], "B's address stays allocated")
    gc_node("n-node", b)
    eq(consistent(p)[0], {}, "B's own GC releases it")


@test
def test_one_container_id_on_two_nodes():
    """the same network, container ID and interface on two nodes: two handles and two addresses; DEL on one and GC on the other leave the other's; the node's cache file is named by SHA-512 and names its store"""
    p = new_prefix("cipam-2")
    cfg = conf(p, [[{"subnet": "10.82.0.0/24"}]], blockSize=28)
    net = cfg["name"]
    first, second = add_ok("two-a", cfg, "dup"), add_ok("two-b", cfg, "dup")
    check(first != second, f"one address on two nodes: {first}")
    eq(consistent(p)[0], {hname("two-a", net, "dup"): first, hname("two-b", net, "dup"): second})
    eq(call("two-b", "DEL", cfg, "dup")[0], 0)
    eq(consistent(p)[0], {hname("two-a", net, "dup"): first}, "two-b's DEL left two-a's")
    second = add_ok("two-b", cfg, "dup")  # the next of two-b's block (round robin, as host-local's)
    check(second != first, f"two-b's ADD again got two-a's address {first}")
    gc_node("two-a", cfg)
    eq(consistent(p)[0], {hname("two-b", net, "dup"): second}, "two-a's GC left two-b's")
    store = p + "".join("\n" + e for e in cfg["ipam"]["etcd"]["endpoints"])
    name = "blocks-" + hashlib.sha512((store + "\0two-b").encode()).hexdigest()[:64] + ".json"
    with open(os.path.join("/var/lib/cni/cluster-ipam", name)) as f:
        cached = json.load(f)
    eq((cached["store"], cached["node"]), (store, "two-b"), "the cache file names its store and node")


@test
def test_root_chooses_prefix_and_endpoints():
    """a prefix outside root's base (/cni-all/, or /etc/cni/cluster-ipam/prefix) and endpoints root's /etc/cni/cluster-ipam/endpoints does not list are refused with code 7 naming key and value"""
    c = setup()

    def refused(cfg, what):
        rc, out = call("r-node", "ADD", cfg, "r0")
        check(rc != 0 and out["code"] == 7 and what in out["msg"], out)

    refused(conf("/registry/", [[{"subnet": "10.83.0.0/24"}]]), 'ipam.etcd.prefix "/registry/" is not under')
    files = [f"{CRED_DIR}/prefix", f"{CRED_DIR}/endpoints"]
    try:
        with open(files[0], "w") as f:
            f.write("/cipam-root/\n")
        refused(conf(new_prefix("cipam-p"), [[{"subnet": "10.83.0.0/24"}]]), 'is not under this node\'s base prefix "/cipam-root/"')
        add_ok("r-node", conf("/cipam-root/a/", [[{"subnet": "10.83.0.0/24"}]]), "r1")
        os.unlink(files[0])
        with open(files[1], "w") as f:
            f.write("# root's etcd\n" + "\n".join(c.endpoints()[:2]) + "\n")
        p = new_prefix("cipam-p")
        listed = conf(p, [[{"subnet": "10.84.0.0/24"}]])
        listed["ipam"]["etcd"]["endpoints"] = c.endpoints()[:2]
        add_ok("r-node", listed, "r2")
        wide = conf(p, [[{"subnet": "10.84.0.0/24"}]])
        refused(wide, f'ipam.etcd.endpoints: "{c.endpoints()[2]}" is not one of this node\'s etcd endpoints')
        probe = conf(p, [[{"subnet": "10.84.0.0/24"}]])
        probe["ipam"]["etcd"]["endpoints"] = ["http://169.254.169.254:80"]
        refused(probe, '"http://169.254.169.254:80" is not one of')
    finally:
        for f in files:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f)


E2E_ETCD = "10.78.0"  # the lan namespace's etcd bridge: .1 etcd, .1N node N


@contextlib.contextmanager
def two_node_lab():
    """Two node namespaces, each with two legs into a "lan" namespace: eth1 on one layer-2
    segment (a bridge there; the macvlan master) and etcd0 on another bridge, where a 3-member
    etcd (TLS, client certificates) listens on 10.78.0.1; and a pod namespace per node.
    (cluster, [(node, pod, lan)]); everything goes on exit."""
    with contextlib.ExitStack() as stack:
        lan = stack.enter_context(netns("cilan"))
        for br in ("etcdbr", "l2br"):
            sh("ip", "-n", lan, "link", "add", br, "type", "bridge")
            sh("ip", "-n", lan, "link", "set", br, "up")
        sh("ip", "-n", lan, "addr", "add", f"{E2E_ETCD}.1/24", "dev", "etcdbr")
        nodes = []
        for i in range(2):
            node, pod = stack.enter_context(netns("cinode")), stack.enter_context(netns("cipod"))
            for leg, br in (("etcd0", "etcdbr"), ("eth1", "l2br")):
                sh("ip", "-n", lan, "link", "add", f"{br}-{i}", "type", "veth", "peer", "name", leg, "netns", node)
                sh("ip", "-n", lan, "link", "set", f"{br}-{i}", "master", br, "up")
                sh("ip", "-n", node, "link", "set", leg, "up")
            sh("ip", "-n", node, "addr", "add", f"{E2E_ETCD}.1{i}/24", "dev", "etcd0")
            nodes.append((node, pod, lan))
        yield stack.enter_context(EtcdCluster(netns=lan, address=f"{E2E_ETCD}.1")), nodes


def lab():
    """two_node_lab(), made by the first test that needs it and kept for the run (the race and
    the end-to-end test share it): (cluster, [(node, pod, lan)], the config's etcd section)."""
    if "lab" not in _state:
        stack = _state["lab_stack"] = contextlib.ExitStack()
        c, nodes = stack.enter_context(two_node_lab())
        _state["lab"] = (c, nodes, credentials(c, "e2e-"))
    return _state["lab"]


@test
def test_macvlan_two_nodes_and_exec():
    """end to end: macvlan + cluster-ipam on two node namespaces sharing one layer-2 segment, a pod each: one pool, traffic, DEL; the same conflist through `cni-all exec`"""
    c, nodes, etcd = lab()
    with tempfile.TemporaryDirectory() as work:
        p = new_prefix("cipam-m")
        net, names, subnet = p.strip("/").split("/")[-1], ["m-node0", "m-node1"], ipaddress.ip_network("10.77.0.0/24")
        ipam = {"type": "cluster-ipam", "ranges": [[{"subnet": str(subnet)}]], "blockSize": 28,
                "etcd": dict(etcd, prefix=p)}
        conflist = {"cniVersion": "1.1.0", "name": net,
                    "plugins": [{"type": "macvlan", "master": "eth1", "mode": "bridge", "ipam": ipam}]}
        os.mkdir(f"{work}/net.d")
        with open(f"{work}/net.d/10-{net}.conflist", "w") as f:
            json.dump(conflist, f)
        plugin = dict(conflist["plugins"][0], cniVersion=conflist["cniVersion"], name=net)

        def direct(i, command):  # the runtime's call of macvlan, in node i
            return call(names[i], command, plugin, ctr=f"pod{i}", applet="macvlan", netns=ns_path(nodes[i][1]),
                        host_ns=nodes[i][0])

        def via_exec(i, command):  # `cni-all exec` as node i, of the conflist
            r = subprocess.run(["ip", "netns", "exec", nodes[i][0], os.path.join(BIN, "cni-all"), "exec",
                                command.lower(), net, ns_path(nodes[i][1]), "--container-id", f"xpod{i}",
                                "--conf-dir", f"{work}/net.d", "--cache-dir", f"{work}/cache"],
                               env={"PATH": os.environ["PATH"]}, capture_output=True, text=True, timeout=60,
                               preexec_fn=_enter_node(names[i]))
            return r.returncode, json.loads(r.stdout) if r.stdout.strip() else r.stderr

        for run, ctr in ((direct, "pod"), (via_exec, "xpod")):
            got = []
            for i in range(2):
                rc, out = run(i, "ADD")
                check(rc == 0, f"{run.__name__} ADD on {names[i]}: rc {rc} {out}")
                got.append(out["ips"][0]["address"])
            check(got[0] != got[1] and all(ipaddress.ip_interface(a).ip in subnet for a in got), got)
            kvs = etcd_kvs(p, c)
            for i, (node, pod, _) in enumerate(nodes):
                eq([a for a in addrs(pod, "eth0") if not a.startswith("fe80:")], [got[i]], f"pod {i}'s eth0")
                h = kvs["handles/" + hname(names[i], net, f"{ctr}{i}")]
                eq((h["node"], kvs[h["addresses"][0]["block"][len(p):]]["node"]), (names[i], names[i]),
                   f"{run.__name__}: pod {i}'s handle and block are its node's")
            held, _ = consistent(p, c)
            eq(held, {hname(names[i], net, f"{ctr}{i}"): [got[i]] for i in range(2)}, f"{run.__name__}: etcd's handles")
            for i in range(2):
                sh("ip", "netns", "exec", nodes[i][1], "ping", "-c1", "-W5", got[1 - i].split("/")[0])
            for i in range(2):
                rc, out = run(i, "DEL")
                eq(rc, 0, f"{run.__name__} DEL on {names[i]}: {out}")
                check(link(nodes[i][1], "eth0") is None, f"pod {i}'s eth0 is gone")
            held, blocks = consistent(p, c)
            eq(held, {}, f"{run.__name__}: no handle left")
            check(blocks and all(not b["allocations"] for b in blocks.values()), f"{run.__name__}: {blocks}")


if __name__ == "__main__":
    try:
        run_all()
    finally:
        if "cluster" in _state:
            _state["cluster"].close()
        if "lab_stack" in _state:
            _state["lab_stack"].close()
        subprocess.run(["umount", "/etc/cni"], capture_output=True)
