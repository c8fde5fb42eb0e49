#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Root tests of `cni-all exec`, the runtime built into the binary, in throwaway namespaces:
a conflist loaded by name (capabilities to runtimeConfig, prevResult passing, libcni's result
cache with cnitool's container id), traffic through the published port, CHECK against the
cache, DEL in reverse with the cached result, disableCheck, single .conf files and lookup order,
GC of attachments whose namespace is gone plus the plugins' own GC, STATUS, a failed ADD undone,
and command-line errors."""
import base64
import concurrent.futures
import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import BIN, addrs, check, eq, iptables_list, iptables_save, link, netns, ns_path, run_all, sh, test  # noqa: E402

EXE = os.path.join(BIN, "cni-all")


def conflist(work, **extra):
    c = {"cniVersion": "1.1.0", "name": "exnet", "plugins": [
        {"type": "bridge", "bridge": "exbr0", "isGateway": True, "ipMasq": True,
         "ipam": {"type": "host-local", "subnet": "10.216.0.0/24", "dataDir": f"{work}/ipam"}},
        {"type": "portmap", "capabilities": {"portMappings": True}},
        {"type": "tuning", "dataDir": f"{work}/tuning", "sysctl": {"net.ipv4.conf.IFNAME.log_martians": "1"}},
        {"type": "bandwidth", "capabilities": {"bandwidth": True}}]}
    c.update(extra)
    return c


CAPS = {"portMappings": [{"hostPort": 8081, "containerPort": 80, "protocol": "tcp"}],
        "bandwidth": {"ingressRate": 100000000, "ingressBurst": 1000000, "egressRate": 100000000, "egressBurst": 1000000}}


def write(work, name, obj):
    os.makedirs(f"{work}/net.d", exist_ok=True)
    text = json.dumps(obj, indent=1)
    with open(f"{work}/net.d/{name}", "w") as f:
        f.write(text)
    return text


def cni(host, work, *args, env=None, caps=CAPS):
    cmd = ["ip", "netns", "exec", host, EXE, "exec", *args, "--conf-dir", f"{work}/net.d", "--cache-dir", f"{work}/cache"]
    if caps is not None:
        cmd += ["--capability-args", json.dumps(caps)]
    return subprocess.run(cmd, capture_output=True, text=True, env=dict({"PATH": os.environ["PATH"]}, **(env or {})))


def ok(r):
    if r.returncode != 0:
        raise AssertionError(f"exec failed ({r.returncode}): {r.stdout}{r.stderr}")
    return r


def cnitool_id(netns_path):
    return "cnitool-" + hashlib.sha512(netns_path.encode()).hexdigest()[:20]


def reservations(work, net="exnet"):
    d = f"{work}/ipam/{net}"
    return sorted(f for f in os.listdir(d) if f[0].isdigit()) if os.path.isdir(d) else []


@contextlib.contextmanager
def workdir():
    work = tempfile.mkdtemp(prefix="cni-exec.")
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def serve_http(ctr):
    server = subprocess.Popen(["ip", "netns", "exec", ctr, "python3", "-c",
                               "import socket;s=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);"
                               "s.bind(('0.0.0.0',80));s.listen(1);print('ready',flush=True);"
                               "c,a=s.accept();c.sendall(b'hello');c.close()"], stdout=subprocess.PIPE, text=True)
    eq(server.stdout.readline().strip(), "ready")
    return server


@test
def exec_add_check_del_a_conflist():
    """exec: ADD of bridge+portmap+tuning+bandwidth by network name, libcni's cache, traffic via the published port, CHECK, DEL"""
    with workdir() as work, netns("exh") as host, netns("exc") as ctr:
        text = write(work, "10-exnet.conflist", conflist(work))
        result = json.loads(ok(cni(host, work, "add", "exnet", ns_path(ctr))).stdout)
        eq(result["cniVersion"], "1.1.0")
        eq(result["ips"][0]["address"], "10.216.0.2/24")
        eq(addrs(ctr, "eth0")[:1], ["10.216.0.2/24"])
        cid = cnitool_id(ns_path(ctr))
        cache = json.load(open(f"{work}/cache/results/exnet-{cid}-eth0"))
        eq((cache["kind"], cache["containerId"], cache["ifName"], cache["networkName"], cache["netns"]),
           ("cniCacheV1", cid, "eth0", "exnet", ns_path(ctr)))
        eq(base64.b64decode(cache["config"]).decode(), text, "the conflist bytes, as libcni caches them")
        eq(cache["capabilityArgs"], CAPS)
        eq(cache["result"]["ips"], result["ips"])
        eq(oct(os.stat(f"{work}/cache/results").st_mode & 0o777), "0o700")
        # runtimeConfig reached the plugins that declared the capabilities
        nat = iptables_save(host)
        check("--dport 8081" in nat and "CNI-DN-" in nat, nat)
        qdiscs = sh("ip", "netns", "exec", host, "tc", "qdisc", "show").stdout
        check("tbf" in qdiscs, qdiscs)
        server = serve_http(ctr)
        try:  # from the host namespace to the bridge address's published port, through portmap's DNAT
            got = sh("ip", "netns", "exec", host, "python3", "-c",
                     "import socket;s=socket.create_connection(('10.216.0.1',8081),timeout=5);print(s.recv(10).decode())").stdout
            eq(got.strip(), "hello")
        finally:
            server.kill()
            server.wait()
        ok(cni(host, work, "check", "exnet", ns_path(ctr)))
        ok(cni(host, work, "status", "exnet"))
        ok(cni(host, work, "del", "exnet", ns_path(ctr)))
        check(link(ctr, "eth0") is None, "the container interface is gone")
        eq(reservations(work), [])
        check(not os.path.exists(f"{work}/cache/results/exnet-{cid}-eth0"), "the cache entry is removed")
        nat = iptables_save(host)
        check("CNI-DN-" not in nat and "8081" not in nat, nat)
        check("tbf" not in sh("ip", "netns", "exec", host, "tc", "qdisc", "show").stdout, "no shaping left")
        ok(cni(host, work, "del", "exnet", ns_path(ctr)))  # idempotent, without a cache entry
        err = cni(host, work, "check", "exnet", ns_path(ctr))
        eq(err.returncode, 1)
        check('"msg"' in err.stderr, err.stderr)


@test
def exec_conf_files_lookup_and_disable_check():
    """exec: .conflist before .conf/.json, files in name order, a single .conf runs as a one-plugin list; disableCheck; unknown network"""
    with workdir() as work, netns("exh") as host, netns("exc") as ctr:
        single = {"cniVersion": "1.0.0", "name": "solo", "type": "bridge", "bridge": "exbr1",
                  "ipam": {"type": "host-local", "subnet": "10.217.0.0/24", "dataDir": f"{work}/ipam"}}
        write(work, "50-solo.conf", single)
        write(work, "60-solo.json", dict(single, bridge="exbr9"))  # a later file with the same name loses
        r = json.loads(ok(cni(host, work, "add", "solo", ns_path(ctr), caps=None)).stdout)
        eq(r["cniVersion"], "1.0.0")
        check(link(host, "exbr1") is not None and link(host, "exbr9") is None, "the first file in name order wins")
        cache = json.load(open(f"{work}/cache/results/solo-{cnitool_id(ns_path(ctr))}-eth0"))
        eq(json.loads(base64.b64decode(cache["config"]))["plugins"][0]["bridge"], "exbr1")
        ok(cni(host, work, "del", "solo", ns_path(ctr), caps=None))
        # a conflist of the same name is preferred over the .conf
        write(work, "90-solo.conflist", {"cniVersion": "1.0.0", "name": "solo", "disableCheck": True,
                                         "plugins": [dict(single, bridge="exbr2")]})
        ok(cni(host, work, "add", "solo", ns_path(ctr), "--ifname", "net1", caps=None))
        check(link(ctr, "net1") is not None and link(host, "exbr2") is not None, "the conflist ran")
        os.unlink(f"{work}/cache/results/solo-{cnitool_id(ns_path(ctr))}-net1")
        ok(cni(host, work, "check", "solo", ns_path(ctr), "--ifname", "net1", caps=None))  # disableCheck: nothing runs
        ok(cni(host, work, "del", "solo", ns_path(ctr), "--ifname", "net1", caps=None))
        err = cni(host, work, "add", "nosuch", ns_path(ctr), caps=None)
        eq(err.returncode, 1)
        check(f'no net configuration with name \\"nosuch\\" in {work}/net.d' in err.stderr, err.stderr)


@test
def exec_gc_dels_attachments_whose_netns_is_gone():
    """exec gc: attachments whose namespace is gone are DELeted from the cache, the plugins' GC gets the live ones"""
    with workdir() as work, netns("exh") as host, netns("exc1") as c1:
        write(work, "10-exnet.conflist", conflist(work))
        ok(cni(host, work, "add", "exnet", ns_path(c1)))
        dnat_rules = iptables_save(host).count("-A CNI-DN-")
        with netns("exc2") as c2:
            ok(cni(host, work, "add", "exnet", ns_path(c2)))
            gone = cnitool_id(ns_path(c2))
        eq(len(reservations(work)), 2)
        # a reservation no cache entry knows: host-local's GC releases it
        with open(f"{work}/ipam/exnet/10.216.0.99", "w") as f:
            f.write("stranger\r\neth0")
        ok(cni(host, work, "gc", "exnet"))
        eq(reservations(work), ["10.216.0.2"], "the stale attachment's and the stranger's addresses are released")
        eq(sorted(os.listdir(f"{work}/cache/results")), [f"exnet-{cnitool_id(ns_path(c1))}-eth0"])
        nat = iptables_save(host)
        eq(nat.count("-A CNI-DN-"), dnat_rules, "only the live attachment's DNAT chain is left")
        check(gone not in json.dumps(os.listdir(f"{work}/cache/results")))
        ok(cni(host, work, "del", "exnet", ns_path(c1)))


@test
def exec_second_add_of_an_attachment_is_refused():
    """exec: an ADD of an attachment already cached is refused before any plugin runs; the first stays whole"""
    with workdir() as work, netns("exh") as host, netns("exc") as ctr:
        write(work, "10-exnet.conflist", conflist(work))
        ok(cni(host, work, "add", "exnet", ns_path(ctr)))
        # -S, not iptables-save: no counters or timestamp, which any stray packet or a second's tick changes
        nat_rules = lambda: iptables_list(host)
        before = (addrs(ctr, "eth0"), reservations(work), nat_rules())
        r = cni(host, work, "add", "exnet", ns_path(ctr))
        eq(r.returncode, 1)
        cached = f"{work}/cache/results/exnet-{cnitool_id(ns_path(ctr))}-eth0"
        check(f'network \\"exnet\\" is already attached to container \\"{cnitool_id(ns_path(ctr))}\\" as eth0 ({cached}): DEL it first'
              in r.stderr, r.stderr)
        eq((addrs(ctr, "eth0"), reservations(work), nat_rules()), before, "address, reservation and rules unchanged")
        check(os.path.exists(cached))
        # Another interface is another attachment (without shaping: bandwidth's IFB is per network and container).
        ok(cni(host, work, "add", "exnet", ns_path(ctr), "--ifname", "net1", caps=None))
        check(link(ctr, "net1") is not None)
        for ifname in ("net1", "eth0"):
            ok(cni(host, work, "del", "exnet", ns_path(ctr), "--ifname", ifname))
        eq(reservations(work), [])


@test
def exec_concurrent_adds_and_dels_of_many_containers():
    """exec: 16 chain ADDs at once onto a bridge that does not exist yet, then 8 DELs beside 8 more
    ADDs, then every DEL at once: each pod gets its own address, veth and published port, and
    nothing is left at the end (no veth, reservation, nat chain, forward rule or cache entry)"""
    with workdir() as work, netns("exh") as host, contextlib.ExitStack() as stack:
        write(work, "10-exnet.conflist", conflist(work, plugins=conflist(work)["plugins"][:3]))
        pods = [stack.enter_context(netns("exc")) for _ in range(24)]

        def call(verb, i):
            caps = {"portMappings": [{"hostPort": 9100 + i, "containerPort": 80, "protocol": "tcp"}]}
            return i, cni(host, work, verb, "exnet", ns_path(pods[i]), caps=caps)

        def run(jobs):
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                for i, r in pool.map(lambda job: call(*job), jobs):
                    check(r.returncode == 0, f"{jobs[0][0]} pod {i}: {r.stdout}{r.stderr}")

        def state():
            nat = iptables_save(host)
            ports = sorted(int(p) for p in re.findall(r"--dports (\d+) -j CNI-DN-", nat))
            masq = len(re.findall(r"^:CNI-[0-9a-f]{24} ", nat, re.M))
            veths = [l for l in sh("ip", "-n", host, "-br", "link").stdout.splitlines() if l.startswith("veth")]
            return ports, masq, len(veths), len(reservations(work)), len(os.listdir(f"{work}/cache/results"))

        run([("add", i) for i in range(16)])
        got = [addrs(pods[i], "eth0")[0] for i in range(16)]
        eq(len(set(got)), 16, f"distinct addresses: {got}")
        eq(state(), (list(range(9100, 9116)), 16, 16, 16, 16))
        eq(link(host, "exbr0")["operstate"] in ("UP", "UNKNOWN"), True)
        with concurrent.futures.ThreadPoolExecutor(2) as both:
            dels = both.submit(run, [("del", i) for i in range(8)])
            adds = both.submit(run, [("add", i) for i in range(16, 24)])
            dels.result()
            adds.result()
        eq(state(), (list(range(9108, 9124)), 16, 16, 16, 16))
        for i in range(8):
            check(link(pods[i], "eth0") is None, f"pod {i}'s interface is gone")
        run([("del", i) for i in range(8, 24)])
        eq(state(), ([], 0, 0, 0, 0))
        fwd = iptables_list(host, "filter", "CNI-FORWARD")
        check("10.216." not in fwd, fwd)


@test
def exec_failed_add_is_undone():
    """exec: a plugin failing mid-list makes the earlier ones DEL (no veth, no reservation, no cache)"""
    with workdir() as work, netns("exh") as host, netns("exc") as ctr:
        bad = conflist(work)
        bad["plugins"][3] = {"type": "bandwidth", "ingressRate": 1000}  # no burst: the bandwidth plugin refuses
        write(work, "10-exnet.conflist", bad)
        r = cni(host, work, "add", "exnet", ns_path(ctr))
        eq(r.returncode, 1)
        check("burst" in r.stderr, r.stderr)
        msg = json.loads(r.stderr[r.stderr.index("{"):])["msg"]
        check(msg.startswith('plugin type="bandwidth" failed (add): '), f"libcni's wording: {msg}")
        check(link(ctr, "eth0") is None, "the bridge's veth is gone")
        eq(reservations(work), [])
        eq(os.listdir(f"{work}/cache/results") if os.path.isdir(f"{work}/cache/results") else [], [])


@test
def exec_hands_plugins_libcnis_round_trip():
    """exec: each plugin's config is what libcni hands on after its interface{} round trip, so a
    number written as a float ("mtu": 1400.0, "txQLen": 1e3) reaches the plugin as an integer"""
    with workdir() as work, netns("exh") as host, netns("exc") as ctr:
        c = conflist(work)
        c["plugins"][0]["mtu"] = 1400.0
        c["plugins"][2]["txQLen"] = 1e3
        write(work, "10-exnet.conflist", c)
        ok(cni(host, work, "add", "exnet", ns_path(ctr)))
        eth0 = link(ctr, "eth0")
        eq((eth0["mtu"], eth0["txqlen"]), (1400, 1000))
        ok(cni(host, work, "del", "exnet", ns_path(ctr)))
        check(link(ctr, "eth0") is None)
        eq(reservations(work), [])


@test
def exec_command_line_errors():
    """exec: usage errors exit 2 with the usage; malformed capability args and CNI_ARGS are named"""
    with workdir() as work, netns("exh") as host:
        for args in (["frob", "n"], ["add", "n"], ["gc"], ["add", "n", "/x", "--bogus", "1"]):
            r = cni(host, work, *args, caps=None)
            eq(r.returncode, 2, args)
            check("usage: cni-all exec" in r.stderr, r.stderr)
        r = cni(host, work, "add", "n", "/x", caps=None, env={"CAP_ARGS": "[1]"})
        check("capability args are not a JSON object" in r.stderr, r.stderr)
        r = cni(host, work, "add", "n", "/x", "--args", "novalue", caps=None)
        check('invalid CNI_ARGS pair \\"novalue\\"' in r.stderr or 'invalid CNI_ARGS pair "novalue"' in r.stderr, r.stderr)


@test
def exec_speaks_cnitool():
    """exec: cnitool's forms: -i and --opt=value, gc and status with a NETNS, -h; a DEL failure names the plugin as libcni"""
    with workdir() as work, netns("exh") as host, netns("exc") as ctr:
        write(work, "10-exnet.conflist", conflist(work))
        ok(cni(host, work, "add", "exnet", ns_path(ctr), "-i", "net1", "--container-id=cnitool-form"))
        check(link(ctr, "net1") is not None, "-i names the interface")
        check(os.path.exists(f"{work}/cache/results/exnet-cnitool-form-net1"), "--opt=value sets the container id")
        ok(cni(host, work, "status", "exnet", ns_path(ctr)))
        ok(cni(host, work, "gc", "exnet", ns_path(ctr)))
        check(link(ctr, "net1") is not None, "gc keeps a live attachment")
        # A plugin whose DEL fails (it is not installed): libcni names it, with its name.
        c = conflist(work)
        c["plugins"].append({"type": "not-installed", "name": "extra"})
        write(work, "10-exnet.conflist", c)
        r = cni(host, work, "del", "exnet", ns_path(ctr), "--ifname=net1", "--container-id", "cnitool-form")
        eq(r.returncode, 1)
        msg = json.loads(r.stderr[r.stderr.index("{"):])["msg"]
        check(msg.startswith('plugin type="not-installed" name="extra" failed (delete): '), msg)
        write(work, "10-exnet.conflist", conflist(work))
        ok(cni(host, work, "del", "exnet", ns_path(ctr), "--ifname=net1", "--container-id", "cnitool-form"))
        check(link(ctr, "net1") is None)
        for flag in ("-h", "--help"):
            r = subprocess.run([EXE, "exec", flag], capture_output=True, text=True)
            eq(r.returncode, 0)
            check(r.stdout.startswith("usage: cni-all exec"), r.stdout)
        r = subprocess.run([EXE, "dhcp", "daemon", "-h"], capture_output=True, text=True)
        eq(r.returncode, 0)
        check("-socketpath string" in r.stdout, r.stdout)


if __name__ == "__main__":
    run_all(cleanup=[BIN])
