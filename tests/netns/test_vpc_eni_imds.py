#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Root tests of `vpc-eni node-setup --imds` (docs/vpc-eni.md, The node from the instance metadata
service) in test_vpc_eni.py's simulated VPC, with a third ENI (eth2, device 2) that the node has
from the start but the metadata lists only from the second run, and a /28 prefix delegated to
eth1 from the second run (prefix mode: the first has no ipv4-prefix path at all). A stand-in
metadata service (tests/lib/fake_imds.py) listens on 169.254.169.254:80 inside the node's
namespace only, serves the documented paths for the ENIs, requires an IMDSv2 token, and changes
its answers between runs. The first run writes the node file (keeping the keys root wrote there)
and sets the node up; a pod takes an ENI-1 address; then a daemon run (--interval) sees an ENI
and addresses added and that address removed: it sets up eth2, whose pod reaches the VPC through
it (as does a pod on eth1's prefix through eth1), rewrites the file, and the removed address
stays reserved, with its pod's rules, until the pod's DEL. node-teardown then leaves the node as
it was. Every failure (no route, no token offered, 401, a missing path, garbage, no answer, a 5xx
to the end of the retries, an ENI with no link, a node file past 4 MiB, a folder it cannot write)
is an error naming it, and leaves the node file and the node as they were; a setup that fails
partway (an ENI refusing its MTU), or whose file cannot then be renamed into place (a bind mount
over it; ENI 1 moved to device 3 too), is undone, on a fresh node and on one set up before, also
when the node file no longer loads (it goes back to the node file kept in stateDir). A FILE
naming no file, and a node file that no longer loads beside a record that kept no node file, are
refused before anything changes; node-teardown goes by the kept node file when its own is gone
or not given (the default stateDir, on a tmpfs of the run's own). An IMDSv1-only service is read
with --imds-v1 alone. On both iptables variants, another program's rules kept first in mangle
PREROUTING stay first through the next round, unless they may end it (an ACCEPT, a goto), and
a fan of chains is looked into once per chain. A removed node file's settings come from the kept
one; a stateDir that is a link or that others may write is refused; a fresh setup keeps the node
file before its record; node-teardown without FILE finds the stateDir /etc/cni/vpc-eni/node.json
names; a killed round's temporary is removed by the next."""
import atexit
import contextlib
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import cnitest  # noqa: E402

_registered = len(cnitest._TESTS)
import test_vpc_eni as vpc  # noqa: E402 - the simulated VPC; its own tests are its suite's
del cnitest._TESTS[_registered:]
from cnitest import BIN, UNDER_STRACE, Plugin, check, eq, netns, ns_path, run_all, sh, test  # noqa: E402

IMDS = "169.254.169.254"
SERVER = os.path.join(os.path.dirname(__file__), "..", "lib", "fake_imds.py")
META = "/latest/meta-data/"
VPC_HOST = vpc.VPC_HOST


def mac_of(ns, dev):
    return json.loads(sh("ip", "-n", ns, "-j", "link", "show", dev).stdout)[0]["address"]


def answers(node, enis):
    """The metadata paths of `enis` [(interface, device, eni id, subnet, [addresses], [prefixes])],
    the first the primary ENI (prefixes optional: no ipv4-prefix path without); the MAC of each is
    its interface's in `node`."""
    macs = [mac_of(node, e[0]) for e in enis]
    paths = {META + "mac": macs[0], META + "network/interfaces/macs/": "\n".join(m + "/" for m in macs)}
    for mac, (_, device, eni_id, subnet, addresses, *prefixes) in zip(macs, enis):
        at = f"{META}network/interfaces/macs/{mac}/"
        paths.update({at + "device-number": str(device), at + "interface-id": eni_id, at + "subnet-ipv4-cidr-block": subnet,
                      at + "local-ipv4s": "\n".join(addresses), at + "vpc-ipv4-cidr-blocks": vpc.VPC_CIDR})
        if prefixes:
            paths[at + "ipv4-prefix"] = "\n".join(prefixes[0])
    return {"paths": paths}


FIRST = [("eth0", 0, "eni-0a0", "10.80.1.0/24", ["10.80.1.10", "10.80.1.20", "10.80.1.21"]),
         ("eth1", 1, "eni-0b1", "10.80.2.0/24", ["10.80.2.10", "10.80.2.20", "10.80.2.21"])]
SECOND = [FIRST[0], ("eth1", 1, "eni-0b1", "10.80.2.0/24", ["10.80.2.10", "10.80.2.20", "10.80.2.22"], ["10.80.2.48/28"]),
          ("eth2", 2, "eni-0c2", "10.80.3.0/24", ["10.80.3.10", "10.80.3.20"])]


class Metadata:
    """fake_imds.py in `node`, on 169.254.169.254:80, answering what set() last wrote."""

    def __init__(self, node, folder):
        self.path = os.path.join(folder, "answers.json")
        self.node = node

    def __enter__(self):
        sh("ip", "-n", self.node, "addr", "add", f"{IMDS}/32", "dev", "lo")
        self.set({"paths": {}})
        self.proc = subprocess.Popen(["ip", "netns", "exec", self.node, sys.executable, SERVER, IMDS, "80", self.path],
                                     stdout=subprocess.PIPE, text=True)
        eq(self.proc.stdout.readline().strip(), "ready")
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()

    def set(self, a):
        with open(self.path + ".new", "w") as f:
            json.dump(a, f)
        os.replace(self.path + ".new", self.path)

    def log(self):
        with open(self.path + ".log") as f:
            return [json.loads(line) for line in f]


def add_eni2(vpc_ns, node):
    """ENI device 2: eth2 on the node, bare and down, r2 (10.80.3.1/24) on the router, which
    knows 10.80.3.20 is behind it and drops what comes from it with another source."""
    sh("ip", "-n", vpc_ns, "link", "add", "r2", "type", "veth", "peer", "name", "eth2", "netns", node)
    sh("ip", "-n", vpc_ns, "addr", "add", "10.80.3.1/24", "dev", "r2")
    sh("ip", "-n", vpc_ns, "link", "set", "r2", "up")
    sh("ip", "-n", vpc_ns, "neigh", "replace", "10.80.3.20", "lladdr", mac_of(node, "eth2"), "dev", "r2", "nud", "permanent")
    vpc.in_ns(vpc_ns, "nft", "add", "rule", "ip", "vpc", "pre", "iifname", "r2", "ip", "saddr", "!=", "10.80.3.0/24",
              "counter", "drop", "comment", '"r2 dropped"')


def node_setup(node, *args, check_rc=True, ns=None, variant=None):
    """vpc-eni node-setup in `node` (or `ns`), on the node's iptables or on `variant`'s."""
    path = ["env", f"PATH={vpc.VARIANTS[variant]}:{os.environ.get('PATH', '/usr/sbin:/usr/bin')}"] if variant else []
    return sh("ip", "netns", "exec", ns or node, *path, os.path.join(BIN, "vpc-eni"), "node-setup", *args, check_rc=check_rc)


def settled(node):
    """The node as node_state() sees it once the ENIs set up just now (eth1, eth2) have their
    carrier and their link-local addresses have passed duplicate detection."""
    for _ in range(100):
        if "NO-CARRIER" not in sh("ip", "-n", node, "link", "show", "up").stdout:
            break
        time.sleep(0.05)
    time.sleep(0.1)
    vpc.dad_done(node)
    return vpc.node_state(node)


def read(path):
    with open(path) as f:
        return json.load(f)


def settings(state):
    """The keys root writes in the node file before the metadata fills in the rest."""
    return {"mtu": 1500, "stateDir": os.path.join(state, "run"), "ipamDir": os.path.join(state, "run", "ipam")}


def learned(state, enis):
    return {"primaryInterface": "eth0", "vpcCidrs": [vpc.VPC_CIDR], "nodePortSupport": True, "podEniSupport": False,
            "mtu": 1500, "enis": [{"interface": e[0], "deviceNumber": e[1], "subnet": e[3], "primaryIp": e[4][0],
                                   "secondaryIps": e[4][1:], **({"ipv4Prefixes": e[5]} if e[5:] else {})} for e in enis],
            "vethPrefix": "eni", **{k: v for k, v in settings(state).items() if k != "mtu"},
            "maxAddressesPerNamespace": 0}


@test
def learns_the_node_and_follows_its_enis():
    """vpc-eni node-setup --imds: the node file and the node from the metadata service, then an ENI and addresses added and one removed"""
    with vpc.node_and_data() as (state, _), netns("vpc") as vpc_ns, netns("node") as node, \
            netns("poda") as pa, netns("podc") as pc, netns("podp") as pp:
        vpc.build_vpc(vpc_ns, node)
        add_eni2(vpc_ns, node)
        path = vpc.write_node_file(state, settings(state))
        with Metadata(node, state) as md:
            vpc.dad_done(node)
            before = vpc.node_state(node)
            md.set(answers(node, FIRST))
            start = time.monotonic()
            node_setup(node, "--imds", path)
            check(time.monotonic() - start < 2, "a run against a local service takes well under a second or two")
            eq(read(path), learned(state, FIRST))
            eq(os.stat(path).st_mode & 0o777, 0o644)
            log = md.log()
            eq((log[0]["method"], log[0]["path"], log[0]["ttl"]), ("PUT", "/latest/api/token", "21600"))
            check(all(e["token"] for e in log[1:]) and len({e["token"] for e in log[1:]}) == 1, log)
            eq(sh("ip", "-n", node, "route", "show", "table", "2").stdout.splitlines(),
               ["default via 10.80.2.1 dev eth1 ", "10.80.2.1 dev eth1 scope link "])
            eq(sh("ip", "-n", node, "route", "show", "table", "3", check_rc=False).stdout, "")
            c = vpc.conf(path)
            plugin = Plugin(os.path.join(BIN, "vpc-eni"))
            a = plugin.run("ADD", c, host_ns=node, netns=ns_path(pa), container_id="ca",
                           args=vpc.pod_args("a", "10.80.2.21")).ok().json()

            # The daemon: an ENI and an address attached since, and the pod's address removed.
            daemon = subprocess.Popen(["ip", "netns", "exec", node, os.path.join(BIN, "vpc-eni"), "node-setup", "--imds",
                                       f"http://{IMDS}/", "--interval", "1", path],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            try:
                md.set(answers(node, SECOND))
                for _ in range(100):
                    if read(path) == learned(state, SECOND):
                        break
                    time.sleep(0.1)
            finally:
                daemon.kill()
                _, err = daemon.communicate()
            eq(read(path), learned(state, SECOND))
            check(f"{path} written from http://{IMDS}" in err, err)
            eq(sh("ip", "-n", node, "route", "show", "table", "3").stdout.splitlines(),
               ["default via 10.80.3.1 dev eth2 ", "10.80.3.1 dev eth2 scope link "])
            check("inet 10.80.3.10/24" in sh("ip", "-n", node, "addr", "show", "eth2").stdout)
            check("10.80.3.0/24" not in sh("ip", "-n", node, "route").stdout, "the main table keeps ENI 2's subnet route")

            # The removed address stays the pod's, rules and all, and no one else's.
            eq(vpc.held(state), ["10.80.2.21"])
            rules = sh("ip", "-n", node, "rule").stdout
            check("from 10.80.2.21 lookup 2" in rules and "to 10.80.2.21 lookup main" in rules, rules)
            err = plugin.run("CHECK", dict(c, prevResult=a), host_ns=node, netns=ns_path(pa), container_id="ca",
                             args=vpc.pod_args("a")).error()
            check(f"10.80.2.21 is no ENI's secondary or prefix address in {path}" in err["msg"], err)
            with netns("podx") as px:
                err = plugin.run("ADD", c, host_ns=node, netns=ns_path(px), container_id="cx",
                                 args=vpc.pod_args("x", "10.80.2.21")).error()
                check("10.80.2.21" in err["msg"], err)
                # One without IP= takes a listed free address, never the one that left the file.
                x = plugin.run("ADD", c, host_ns=node, netns=ns_path(px), container_id="cx", args=vpc.pod_args("x")).ok().json()
                listed = {"10.80.1.20", "10.80.1.21", "10.80.2.20", "10.80.2.22", "10.80.3.20"}
                listed |= {f"10.80.2.{h}" for h in range(48, 64)}  # eth1's prefix, new in SECOND
                check(x["ips"][0]["address"].removesuffix("/32") in listed, x)
                plugin.run("DEL", c, host_ns=node, netns=ns_path(px), container_id="cx", args=vpc.pod_args("x")).ok()

            # A pod on the new ENI reaches the VPC through it.
            r = plugin.run("ADD", c, host_ns=node, netns=ns_path(pc), container_id="cc", args=vpc.pod_args("c", "10.80.3.20")).ok()
            eq(r.json()["ips"][0]["address"], "10.80.3.20/32")
            check("1536:\tfrom 10.80.3.20 lookup 3" in sh("ip", "-n", node, "rule").stdout)
            eq(vpc.connect(pc, VPC_HOST, 7021, vpc_ns), "10.80.3.20")
            # And one on eth1's prefix, delegated since (prefix mode), through eth1.
            vpc.vpc_knows(vpc_ns, node, 1, ["10.80.2.50"])
            r = plugin.run("ADD", c, host_ns=node, netns=ns_path(pp), container_id="cp", args=vpc.pod_args("p", "10.80.2.50")).ok()
            eq(r.json()["ips"][0]["address"], "10.80.2.50/32")
            check("1536:\tfrom 10.80.2.50 lookup 2" in sh("ip", "-n", node, "rule").stdout)
            eq(vpc.connect(pp, VPC_HOST, 7022, vpc_ns), "10.80.2.50")
            counts = vpc.vpc_counters(vpc_ns)
            eq(counts["r0 dropped"] + counts["r1 dropped"] + counts["r2 dropped"], 0, counts)

            for pod, ns, cid in (("a", pa, "ca"), ("c", pc, "cc"), ("p", pp, "cp")):
                plugin.run("DEL", c, host_ns=node, netns=ns_path(ns), container_id=cid, args=vpc.pod_args(pod)).ok()
            eq(vpc.held(state), [])
            rules = sh("ip", "-n", node, "rule").stdout
            check("10.80.2.21" not in rules and "10.80.3.20" not in rules and "10.80.2.50" not in rules, rules)
            inode = os.stat(path).st_ino
            os.chmod(path, 0o600)
            md.set(dict(answers(node, SECOND), mode="expire"))
            open(md.path + ".log", "w").close()
            node_setup(node, "--imds", path)  # the same answers: the file stays as it is
            eq(os.stat(path).st_ino, inode, "the node file was rewritten")
            puts = [e for e in md.log() if e["method"] == "PUT"]
            eq(len(puts), 2, "an expired token is renewed, once")
            third = SECOND[:2] + [("eth2", 2, "eni-0c2", "10.80.3.0/24", ["10.80.3.10", "10.80.3.20", "10.80.3.21"])]
            md.set(answers(node, third))
            node_setup(node, "--imds", path)
            eq(read(path), learned(state, third))
            eq(os.stat(path).st_mode & 0o777, 0o600, "the node file keeps its mode")
            sh("ip", "netns", "exec", node, os.path.join(BIN, "vpc-eni"), "node-teardown", path)
            eq(vpc.node_state(node), before)


@test
def failures_leave_the_node_file_and_the_node():
    """vpc-eni node-setup --imds: no route, no token, 401, a missing path, garbage, too long, no answer, 5xx, a MAC with no link, a link: clear errors, nothing changed; an IMDSv1-only service is read only with --imds-v1"""
    with vpc.node_and_data() as (state, _), netns("vpc") as vpc_ns, netns("node") as node, netns("bare") as bare:
        vpc.build_vpc(vpc_ns, node)
        path = vpc.write_node_file(state, settings(state))
        with Metadata(node, state) as md:
            good = answers(node, FIRST)
            md.set(good)
            node_setup(node, "--imds", path)
            vpc.dad_done(node)
            with open(path, "rb") as f:
                written = f.read()
            node_before = vpc.node_state(node)
            eth1 = f"{META}network/interfaces/macs/{mac_of(node, 'eth1')}/"
            garbled = json.loads(json.dumps(good))
            garbled["paths"][eth1 + "device-number"] = "one"
            missing = json.loads(json.dumps(good))
            del missing["paths"][eth1 + "subnet-ipv4-cidr-block"]
            bad_prefix = json.loads(json.dumps(good))
            bad_prefix["paths"][eth1 + "ipv4-prefix"] = "10.80.2.49/28"
            prefix_elsewhere = json.loads(json.dumps(good))
            prefix_elsewhere["paths"][eth1 + "ipv4-prefix"] = "10.80.2.48/28\n10.80.1.48/28"
            huge = json.loads(json.dumps(good))
            huge["paths"][eth1 + "local-ipv4s"] = "\n".join(f"10.80.2.{i % 250 + 1}" for i in range(7000))
            stranger = answers(node, FIRST)
            stranger["paths"][META + "network/interfaces/macs/"] += "\n02:00:00:00:00:09/"
            for mac_path, value in (("device-number", "2"), ("interface-id", "eni-0d9"), ("subnet-ipv4-cidr-block", "10.80.4.0/24"),
                                    ("local-ipv4s", "10.80.4.10"), ("vpc-ipv4-cidr-blocks", vpc.VPC_CIDR)):
                stranger["paths"][f"{META}network/interfaces/macs/02:00:00:00:00:09/{mac_path}"] = value
            url = f"http://{IMDS}"
            cases = [
                ("no route", good, [], bare, f"PUT {url}/latest/api/token: connecting: network is unreachable (4 attempts)"),
                ("no token", dict(good, mode="no-token"), [], None,
                 f"PUT {url}/latest/api/token: HTTP 403: the metadata service gave no IMDSv2 session token "
                 "(node-setup falls back to IMDSv1 only with --imds-v1)"),
                ("401", dict(good, mode="no-token"), ["--imds-v1"], None,
                 f"GET {url}{META}mac: HTTP 401 Unauthorized: the metadata service refused the request without a session token (IMDSv1)"),
                ("missing", missing, [], None, f"GET {url}{eth1}subnet-ipv4-cidr-block: HTTP 404: the metadata service has no such path"),
                ("garbage", garbled, [], None, f"GET {url}{eth1}device-number: \"one\" is not a device number"),
                ("garbled prefix", bad_prefix, [], None, f"GET {url}{eth1}ipv4-prefix: \"10.80.2.49/28\" is not a list of IPv4 prefixes"),
                ("prefix elsewhere", prefix_elsewhere, [], None,
                 f"the node as the metadata service describes it: vpc-eni: node file {path}: enis[1]: ipv4Prefixes: "
                 "10.80.1.48/28 is not in subnet 10.80.2.0/24"),
                ("5xx", dict(good, status={META + "mac": 503}), [], None, f"GET {url}{META}mac: HTTP 503 (4 attempts)"),
                ("no answer", dict(good, mode="hang"), [], None,
                 f"PUT {url}/latest/api/token: no answer within 1000 ms (4 attempts)"),
                ("too long", huge, [], None, f"GET {url}{eth1}local-ipv4s: an answer of more than 64 KiB"),
                ("no link", stranger, [], None, "ENI eni-0d9 (device number 2, MAC 02:00:00:00:00:09): no link on the node has its MAC"),
            ]
            for name, a, flags, ns, want in cases:
                md.set(a)
                open(md.path + ".log", "w").close()
                start = time.monotonic()
                r = node_setup(node, "--imds", *flags, path, check_rc=False, ns=ns)
                took = time.monotonic() - start
                eq((r.returncode, r.stderr.strip()), (1, f"vpc-eni node-setup: {want}"), name)
                check(took < 8, f"{name}: {took:.1f} s")
                with open(path, "rb") as f:
                    eq(f.read(), written, f"{name}: the node file changed")
                eq(vpc.node_state(node), node_before, f"{name}: the node changed")
                if name == "5xx":
                    eq([e["path"] for e in md.log()].count(META + "mac"), 4, "a 5xx is tried 4 times, no more")
            eq(sorted(os.listdir(state)), sorted(["node.json", "run", "answers.json", "answers.json.log"]), "no temporary left")
            # A service that offers IMDSv1 only: refused without --imds-v1, read with it.
            v1 = answers(node, [FIRST[0], FIRST[1][:4] + (FIRST[1][4] + ["10.80.2.22"],)])
            md.set(dict(v1, mode="v1"))
            r = node_setup(node, "--imds", path, check_rc=False)
            eq((r.returncode, r.stderr.strip()), (1, f"vpc-eni node-setup: PUT {url}/latest/api/token: HTTP 403: the metadata service "
                                                     "gave no IMDSv2 session token (node-setup falls back to IMDSv1 only with --imds-v1)"))
            with open(path, "rb") as f:
                eq(f.read(), written, "v1 without --imds-v1: the node file changed")
            open(md.path + ".log", "w").close()
            node_setup(node, "--imds", "--imds-v1", path)
            eq(read(path)["enis"][1]["secondaryIps"], ["10.80.2.20", "10.80.2.21", "10.80.2.22"])
            gets = [e for e in md.log() if e["method"] == "GET"]
            check(gets and all(e["token"] is None for e in gets), md.log())
            with open(path, "rb") as f:
                written = f.read()
            md.set(good)
            link = os.path.join(state, "link.json")
            os.symlink(path, link)
            r = node_setup(node, "--imds", link, check_rc=False)
            check(r.returncode == 1 and f"open {link}: " in r.stderr, r.stderr)
            os.unlink(link)
            with open(path, "rb") as f:
                eq(f.read(), written, "a node file named through a link changed")
            for args, want in ((["--imds", "https://169.254.169.254", path], "not an http:// URL"),
                               (["--imds", "http://metadata.internal", path], "no name is resolved"),
                               (["--imds", "--interval", "0", path], "--interval \"0\" is not a number of seconds"),
                               (["--imds-v1", path], "go with --imds"), (["--imds", path, "other"], "one node file")):
                r = node_setup(node, *args, check_rc=False)
                check(r.returncode == 1 and want in r.stderr, f"{args}: {r.stderr}")
            md.set(good)
            sh("ip", "netns", "exec", node, os.path.join(BIN, "vpc-eni"), "node-teardown", path)


def unchanged(node, path, written, before, fresh=False):
    """After a failed round: the node file's bytes as `written`, the node as `before` (fresh: set up
    by no one) and no temporary file left beside the node file."""
    with open(path, "rb") as f:
        eq(f.read(), written, "the node file changed")
    eq(vpc.node_state(node), before, f"{'a fresh' if fresh else 'a set-up'} node changed")
    folder = os.path.dirname(path)
    check(not any(n.endswith(".tmp") for n in os.listdir(folder)), os.listdir(folder))


@test
def a_failed_setup_is_undone():
    """vpc-eni node-setup --imds: a setup that fails partway (an ENI refusing its MTU) is undone, on a fresh node and on one set up before"""
    with vpc.node_and_data() as (state, _), netns("vpc") as vpc_ns, netns("node") as node:
        vpc.build_vpc(vpc_ns, node)
        # ENI 2 a macvlan over a link of MTU 1400: it refuses the node file's 1500, after the
        # primary's rp_filter, the fwmark rule and ENI 1 are set up.
        sh("ip", "-n", node, "link", "add", "sxlow", "mtu", "1400", "type", "veth", "peer", "name", "sxlowp")
        sh("ip", "-n", node, "link", "add", "eth2", "link", "sxlow", "type", "macvlan", "mode", "bridge")
        refused = FIRST + [("eth2", 2, "eni-0c2", "10.80.3.0/24", ["10.80.3.10", "10.80.3.20"])]
        path = vpc.write_node_file(state, settings(state))
        record = os.path.join(state, "run", "node-backup.json")
        with Metadata(node, state) as md:
            vpc.dad_done(node)
            before = vpc.node_state(node)
            for fresh in (True, False):
                with open(path, "rb") as f:
                    written = f.read()
                md.set(answers(node, refused))
                r = node_setup(node, "--imds", path, check_rc=False)
                check(r.returncode == 1 and "eth2" in r.stderr and "undoing" not in r.stderr, r.stderr)
                unchanged(node, path, written, before, fresh)
                if fresh:
                    check(not os.path.exists(record), "a record of a setup undone")
                    md.set(answers(node, FIRST))
                    node_setup(node, "--imds", path)
                    before = settled(node)
                else:
                    eq([link["name"] for link in read(record)["links"]], ["eth0", "eth1"])
            sh("ip", "netns", "exec", node, os.path.join(BIN, "vpc-eni"), "node-teardown", path)


@contextlib.contextmanager
def vpc_with_eni2():
    """The simulated VPC with eth2 (add_eni2), a node file of settings() and the metadata service
    answering FIRST, duplicate detection done: (state, node, the file's path, the record's, md)."""
    with vpc.node_and_data() as (state, _), netns("vpc") as vpc_ns, netns("node") as node:
        vpc.build_vpc(vpc_ns, node)
        add_eni2(vpc_ns, node)
        path = vpc.write_node_file(state, settings(state))
        with Metadata(node, state) as md:
            vpc.dad_done(node)
            md.set(answers(node, FIRST))
            yield state, node, path, os.path.join(state, "run", "node-backup.json"), md


@test
def a_file_it_cannot_replace_undoes_the_setup():
    """vpc-eni node-setup --imds: a node file that cannot be replaced after the setup (a mount point) has the setup undone, on a fresh node and on one whose ENI 1 moved to device 3 (table 4), which a round that can moves; a FILE naming no file is refused first"""
    moved = [FIRST[0], ("eth2", 2, "eni-0c2", "10.80.3.0/24", ["10.80.3.10", "10.80.3.20"]), ("eth1", 3) + FIRST[1][2:]]
    with vpc_with_eni2() as (state, node, path, record, md):
        before = initial = vpc.node_state(node)
        for arg in (state + "/", path + "/.", path + "/.."):
            r = node_setup(node, "--imds", arg, check_rc=False)
            eq((r.returncode, r.stderr.strip()), (1, f'vpc-eni node-setup: node file "{arg}" names a folder, not a file in one'))
        check(not os.path.exists(os.path.join(state, "run")), "node-setup made its stateDir")
        eq(vpc.node_state(node), before, "a FILE naming no file changed the node")
        for fresh in (True, False):
            with open(path, "rb") as f:
                written = f.read()
            md.set(answers(node, FIRST if fresh else moved))
            sh("mount", "--bind", path, path)  # renaming over a mount point fails: EBUSY
            try:
                r = node_setup(node, "--imds", path, check_rc=False)
            finally:
                sh("umount", path)
            check(r.returncode == 1 and f"rename {state}/.node.json." in r.stderr and "device or resource busy" in r.stderr
                  and "undoing" not in r.stderr, r.stderr)
            unchanged(node, path, written, before, fresh)
            if fresh:
                check(not os.path.exists(record), "a record of a setup undone")
                node_setup(node, "--imds", path)
                before = settled(node)
            else:
                eq([link["name"] for link in read(record)["links"]], ["eth0", "eth1"])
        # The same round, the file free: ENI 1's routes move from table 2 to table 4.
        node_setup(node, "--imds", path)
        eq(read(path), learned(state, moved))
        eq(sh("ip", "-n", node, "route", "show", "table", "4").stdout.splitlines(),
           ["default via 10.80.2.1 dev eth1 ", "10.80.2.1 dev eth1 scope link "])
        eq(sh("ip", "-n", node, "route", "show", "table", "2").stdout, "")
        sh("ip", "netns", "exec", node, os.path.join(BIN, "vpc-eni"), "node-teardown", path)
        eq(vpc.node_state(node), initial)


@test
def a_node_file_that_does_not_load_goes_by_the_kept_one():
    """vpc-eni node-setup --imds: on a node set up before, a node file that no longer loads does not stop the rounds: a failed one (its file cannot be renamed into place) goes back to the node file kept in stateDir, the next writes the file anew; without that copy (an earlier version's record) a round is refused, naming it, before anything changes, and node-teardown with the file put back works"""
    with vpc_with_eni2() as (state, node, path, record, md):
        initial = vpc.node_state(node)
        applied = os.path.join(state, "run", "node-applied.json")
        node_setup(node, "--imds", path)
        before = settled(node)
        recorded = read(record)
        eq(read(applied), read(path), "the node file kept")

        def edited():  # read as a setting would be, refused by the node file's checks
            e = read(path)
            e["enis"][1]["deviceNumber"] = 300
            vpc.write_node_file(state, e)
            with open(path, "rb") as f:
                return f.read()

        written = edited()
        md.set(answers(node, SECOND))  # eth2 and a prefix more: a round that changes the node
        sh("mount", "--bind", path, path)  # renaming over a mount point fails: EBUSY
        try:
            r = node_setup(node, "--imds", path, check_rc=False)
        finally:
            sh("umount", path)
        check(r.returncode == 1 and "device or resource busy" in r.stderr and "undoing" not in r.stderr, r.stderr)
        unchanged(node, path, written, before)
        eq(read(record), recorded, "the record changed")
        eq(read(applied), learned(state, FIRST), "the node file kept changed")
        node_setup(node, "--imds", path)
        eq(read(path), learned(state, SECOND))
        eq(read(applied), learned(state, SECOND))
        before = settled(node)
        recorded = read(record)
        written = edited()
        os.unlink(applied)  # as an earlier version's record, which kept no node file
        md.set(answers(node, FIRST))
        r = node_setup(node, "--imds", path, check_rc=False)
        eq((r.returncode, r.stderr.strip()),
           (1, f"vpc-eni node-setup: vpc-eni: node file {path}: enis[1]: deviceNumber 300 is not within 0..250; {record} "
               f"records a setup, which a failed round goes back to, but {applied}, the node file it was set up by, is missing "
               "(a setup by an earlier version): put back the node file the node was set up by (or correct this one), or run "
               "node-teardown with it first"))
        unchanged(node, path, written, before)
        eq(read(record), recorded, "the record changed")
        vpc.write_node_file(state, learned(state, SECOND))
        sh("ip", "netns", "exec", node, os.path.join(BIN, "vpc-eni"), "node-teardown", path)
        eq(vpc.node_state(node), initial)


RUN_CNI_ALL = "/run/cni-all"  # above vpc-eni's default stateDir


def private_run_cni_all():
    """An empty tmpfs over /run/cni-all in this process's mount namespace (vpc.private_etc_cni made
    it): the default stateDir, which node-teardown without FILE goes by, is the run's own."""
    made = not os.path.isdir(RUN_CNI_ALL)
    os.makedirs(RUN_CNI_ALL, exist_ok=True)
    sh("mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", RUN_CNI_ALL)

    def undo():
        sh("umount", RUN_CNI_ALL, check_rc=False)
        if made:
            with contextlib.suppress(OSError):  # another run made something there meanwhile
                os.rmdir(RUN_CNI_ALL)
    atexit.register(undo)


def teardown(node, *args):
    return sh("ip", "netns", "exec", node, os.path.join(BIN, "vpc-eni"), "node-teardown", *args, check_rc=False)


@test
def node_teardown_without_its_node_file():
    """vpc-eni node-teardown with the node file gone, or with no FILE (the default stateDir), goes by the node file kept in stateDir, saying so, and leaves the node as it was; --imds after the file was removed writes it anew with the kept file's settings, saying so, and is refused when the record is there without the kept file; with nothing recorded there is nothing to undo"""
    with vpc.node_and_data() as (state, _), netns("vpc") as vpc_ns, netns("node") as node:
        vpc.build_vpc(vpc_ns, node)
        mine = {"mtu": 1500, "ipamDir": os.path.join(state, "ipam")}  # the default stateDir
        path = vpc.write_node_file(state, mine)
        kept = os.path.join(RUN_CNI_ALL, "vpc-eni", "node-applied.json")
        going_by = f"going by {kept}, the node file the node was set up by"
        with Metadata(node, state) as md:
            vpc.dad_done(node)
            initial = vpc.node_state(node)
            md.set(answers(node, FIRST))
            node_setup(node, "--imds", path)
            os.unlink(path)
            r = teardown(node, path)
            eq((r.returncode, r.stderr.strip()),
               (0, f"vpc-eni node-teardown: vpc-eni: node file {path} does not exist; {going_by}"))
            eq(vpc.node_state(node), initial)
            check(not os.path.exists(kept), "the node file kept outlived the teardown")
            # Removed between two rounds: the next writes it anew with the settings of the node
            # file kept in stateDir, saying so (fails before the fix: mtu 9001 and the default
            # ipamDir), and node-teardown without FILE restores the node.
            vpc.write_node_file(state, mine)
            node_setup(node, "--imds", path)
            os.unlink(path)
            r = node_setup(node, "--imds", path)
            eq(r.stderr.strip(), f"vpc-eni node-setup: node file {path} does not exist: its settings taken from {kept}, "
                                 "the node file the node was set up by")
            eq((read(path)["mtu"], read(path)["ipamDir"]), (1500, mine["ipamDir"]))
            eq(read(kept), read(path))
            # A record without the kept node file (an earlier version's): a round with the node
            # file gone is refused, naming them, rather than going by the defaults.
            before = settled(node)
            os.unlink(path)
            os.rename(kept, kept + ".away")
            r = node_setup(node, "--imds", path, check_rc=False)
            state_dir = os.path.dirname(kept)
            eq((r.returncode, r.stderr.strip()),
               (1, f"vpc-eni node-setup: node file {path} does not exist, and its settings cannot be taken from {state_dir}: "
                   f"{state_dir}/node-backup.json records a setup, but {kept}, the node file it was set up by, is missing: run "
                   "node-teardown with the node file the node was set up by"))
            check(not os.path.exists(path), "the node file was written")
            eq(vpc.node_state(node), before)
            os.rename(kept + ".away", kept)
            r = teardown(node)
            eq((r.returncode, r.stderr.strip()), (0, f"vpc-eni node-teardown: no node file given; {going_by}"))
            eq(vpc.node_state(node), initial)
            r = teardown(node)
            eq((r.returncode, r.stderr.strip()),
               (0, f"vpc-eni node-teardown: no node file given; {RUN_CNI_ALL}/vpc-eni records no setup: nothing to undo"))
            gone = path + ".gone"
            r = teardown(node, gone)
            eq((r.returncode, r.stderr.strip()),
               (1, f"vpc-eni node-teardown: vpc-eni: node file {gone} does not exist; {RUN_CNI_ALL}/vpc-eni records no setup either"))
            eq(vpc.node_state(node), initial)


def torn_down(node, path, initial):
    """node-teardown of `path` succeeds and leaves the node as `initial` was."""
    eq(teardown(node, path).returncode, 0)
    eq(vpc.node_state(node), initial)


@test
def a_state_dir_others_could_change_is_refused():
    """vpc-eni node-setup --imds: a stateDir that is a symbolic link, or that others may write, is refused, naming it, before the node changes (fails before the fix: the link was followed, and what others planted there went by)"""
    with vpc_with_eni2() as (state, node, path, record, md):
        initial = vpc.node_state(node)
        with open(path, "rb") as f:
            written = f.read()
        at, elsewhere = os.path.dirname(record), os.path.join(state, "elsewhere")
        os.mkdir(elsewhere, 0o700)
        os.symlink(elsewhere, at)
        r = node_setup(node, "--imds", path, check_rc=False)
        eq((r.returncode, r.stderr.strip()), (1, f"vpc-eni node-setup: open {at}: a symbolic link"))
        unchanged(node, path, written, initial, fresh=True)
        eq(os.listdir(elsewhere), [])
        os.unlink(at)
        os.mkdir(at)
        os.chmod(at, 0o770)
        r = node_setup(node, "--imds", path, check_rc=False)
        eq((r.returncode, r.stderr.strip()), (1, f"vpc-eni node-setup: open {at}: others may write it"))
        unchanged(node, path, written, initial, fresh=True)
        eq(os.listdir(at), [])
        os.chmod(at, 0o700)
        node_setup(node, "--imds", path)
        torn_down(node, path, initial)


@test
def a_fresh_setup_keeps_its_node_file_before_its_record():
    """vpc-eni node-setup --imds on a fresh node renames the kept node file into place before the record, so that a round killed between them leaves no record without it (fails before the fix: the record came first, and such a node refused every round); each, and the node file, is synced before its rename and its folder after it"""
    with vpc_with_eni2() as (state, node, path, record, md):
        initial = vpc.node_state(node)
        r = sh("ip", "netns", "exec", node, "strace", "-f", "-qq", "-e", "trace=openat,fsync,rename,renameat,renameat2",
               os.path.join(BIN, "vpc-eni"), "node-setup", "--imds", path, env=dict(os.environ, **UNDER_STRACE))
        calls = [line.split("] ", 1)[-1] for line in r.stderr.splitlines()]
        names = ("node-applied.json", "node-backup.json", os.path.basename(path))
        renamed = [name for call in calls if call.startswith("rename") for name in names if f', "{name}"' in call]
        eq(renamed, list(names), r.stderr)
        for name in names:
            opened = next(i for i, call in enumerate(calls) if call.startswith("openat(") and f'"{"." + name}.' in call)
            fd = calls[opened].rsplit("= ", 1)[1]
            at = next(i for i, call in enumerate(calls) if call.startswith("rename") and f', "{name}"' in call)
            check(f"fsync({fd})" in [call.split(" =")[0].rstrip() for call in calls[opened:at]], f"{name}: no fsync({fd}) before its rename: {calls[opened:at + 1]}")
            check(calls[at + 1].startswith("fsync("), f"{name}: no fsync of its folder after its rename: {calls[at + 1]}")
        torn_down(node, path, initial)


@test
def a_killed_round_s_temporary_is_removed():
    """vpc-eni node-setup --imds: a temporary of the node file that a killed round left beside it is removed by the next round; a folder of such a name stays"""
    with vpc_with_eni2() as (state, node, path, record, md):
        initial = vpc.node_state(node)
        folder, name = os.path.split(path)
        left, other = os.path.join(folder, f".{name}.0123456789abcdef.tmp"), os.path.join(folder, f".{name}.x.tmp")
        with open(left, "w") as f:
            f.write("{")
        os.mkdir(other)
        node_setup(node, "--imds", path)
        check(not os.path.exists(left) and os.path.isdir(other), os.listdir(folder))
        os.rmdir(other)
        torn_down(node, path, initial)


DOCUMENTED = "/etc/cni/vpc-eni/node.json"  # in the suite's own /etc/cni (vpc.private_etc_cni)


@test
def node_teardown_without_file_goes_by_the_documented_one_s_state_dir():
    """vpc-eni node-teardown without FILE goes by the stateDir that /etc/cni/vpc-eni/node.json names, saying so, and leaves the node as it was (fails before the fix: "records no setup: nothing to undo", exit 0, the node still set up)"""
    with vpc_with_eni2() as (state, node, path, record, md):
        initial = vpc.node_state(node)
        node_setup(node, "--imds", path)
        os.rename(path, DOCUMENTED)
        try:
            r = teardown(node)
            kept = os.path.join(os.path.dirname(record), "node-applied.json")
            eq((r.returncode, r.stderr.strip()),
               (0, f"vpc-eni node-teardown: no node file given; going by {kept}, the node file the node was set up by"))
            eq(vpc.node_state(node), initial)
            check(not os.path.exists(record), "the record outlived the teardown")
        finally:
            os.unlink(DOCUMENTED)


@test
def another_program_s_rule_first_is_left_first():
    """vpc-eni node-setup --imds on both iptables variants: another program's rules kept first in mangle PREROUTING (a MARK, a jump to a chain that marks and returns) stay first through the next round, the table unchanged; an ACCEPT first, and a goto to that chain, have the NodePort mark put before them, once"""
    for variant in ("nft", "legacy"):
        with vpc.node_and_data() as (state, _), netns("vpc") as vpc_ns, netns("node") as node:
            vpc.build_vpc(vpc_ns, node)
            path = vpc.write_node_file(state, settings(state))
            iptables = ["ip", "netns", "exec", node, f"iptables-{variant}", "-t", "mangle"]

            def mangle():  # without counters
                return vpc.iptables_tables(vpc.in_ns(node, f"iptables-{variant}-save", "-t", "mangle").stdout).get("mangle", [])

            with Metadata(node, state) as md:
                md.set(answers(node, FIRST))
                node_setup(node, "--imds", path, variant=variant)
                eq([line for line in mangle() if line.startswith("-A PREROUTING")][0], vpc.PRIMARY_ENI_MARK, variant)
                # Another agent's, first: a jump to its chain (a RETURN and a MARK there), and a MARK.
                sh(*iptables, "-N", "SX-AGENT")
                sh(*iptables, "-A", "SX-AGENT", "-i", "sxother", "-j", "RETURN")
                sh(*iptables, "-A", "SX-AGENT", "-j", "MARK", "--set-xmark", "0x4/0x4")
                sh(*iptables, "-I", "PREROUTING", "1", "-j", "SX-AGENT")
                sh(*iptables, "-I", "PREROUTING", "1", "-i", "sxother", "-j", "MARK", "--set-xmark", "0x2/0x2")
                table = mangle()
                prerouting = [line for line in table if line.startswith("-A PREROUTING")]
                eq(prerouting.index(vpc.PRIMARY_ENI_MARK), 2, prerouting)
                node_setup(node, "--imds", path, variant=variant)
                eq(mangle(), table, f"{variant}: the round changed mangle")
                # An ACCEPT first, then a goto to the chain a jump goes on from (where that chain
                # ends, PREROUTING ends, and the mark after it would never be reached): each time the
                # mark goes before it, and the next round leaves it there.
                for verdict in (["-j", "ACCEPT"], ["-g", "SX-AGENT"]):
                    sh(*iptables, "-I", "PREROUTING", "1", "-i", "sxother", *verdict)
                    node_setup(node, "--imds", path, variant=variant)
                    table = mangle()
                    prerouting = [line for line in table if line.startswith("-A PREROUTING")]
                    eq(prerouting[:2], [vpc.PRIMARY_ENI_MARK, "-A PREROUTING -i sxother " + " ".join(verdict)], prerouting)
                    eq(prerouting.count(vpc.PRIMARY_ENI_MARK), 1, prerouting)
                    node_setup(node, "--imds", path, variant=variant)
                    eq(mangle(), table, f"{variant}: the round changed mangle")
                sh("ip", "netns", "exec", node, os.path.join(BIN, "vpc-eni"), "node-teardown", path)
                check("AWS" not in "\n".join(mangle()), mangle())


@test
def a_fan_of_chains_is_looked_into_once():
    """vpc-eni node-setup --imds: another program's chains in mangle PREROUTING that fan out (12 jumps from each of 7 chains into the next, none ending) are looked into once per chain, so the round takes seconds, not 12^7 visits under the xtables lock (fails before the fix: it ran for minutes)"""
    with vpc.node_and_data() as (state, _), netns("vpc") as vpc_ns, netns("node") as node:
        vpc.build_vpc(vpc_ns, node)
        path = vpc.write_node_file(state, settings(state))
        chains = [f"SX-FAN{k}" for k in range(1, 8)]
        rules = [f":{c} - [0:0]" for c in chains] + ["-I PREROUTING 1 -j SX-FAN1"]
        for c, after in zip(chains, chains[1:]):
            rules += [f"-A {c} -s 192.0.2.{i}/32 -j {after}" for i in range(12)]
        rules += [f"-A {chains[-1]} -j MARK --set-xmark 0x4/0x4"]
        vpc.in_ns(node, "iptables-restore", "--noflush", input="*mangle\n" + "\n".join(rules) + "\nCOMMIT\n")
        with Metadata(node, state) as md:
            md.set(answers(node, FIRST))
            started = time.monotonic()
            node_setup(node, "--imds", path)
            took = time.monotonic() - started
            check(took < 15, f"the round took {took:.1f} s")
            sh("ip", "netns", "exec", node, os.path.join(BIN, "vpc-eni"), "node-teardown", path)


@test
def a_folder_it_cannot_write_changes_nothing():
    """vpc-eni node-setup --imds: a node file whose folder cannot take it (read-only) is an error before the node changes"""
    with vpc.node_and_data() as (state, _), netns("vpc") as vpc_ns, netns("node") as node:
        vpc.build_vpc(vpc_ns, node)
        folder = os.path.join(state, "ro")
        os.mkdir(folder, 0o755)
        path = vpc.write_node_file(folder, settings(state))
        with Metadata(node, state) as md:
            vpc.dad_done(node)
            before = vpc.node_state(node)
            md.set(answers(node, FIRST))
            sh("mount", "--bind", folder, folder)
            try:
                sh("mount", "-o", "remount,bind,ro", folder)
                r = node_setup(node, "--imds", path, check_rc=False)
            finally:
                sh("umount", folder, check_rc=False)
            check(r.returncode == 1 and f"open {folder}/.node.json." in r.stderr and "read-only file system" in r.stderr, r.stderr)
            eq(vpc.node_state(node), before, "the node changed")
            eq(read(path), settings(state))
            check(not os.path.exists(os.path.join(state, "run", "node-backup.json")), "a record")


@test
def a_node_file_past_its_limit_changes_nothing():
    """vpc-eni node-setup --imds: a node whose file would pass 4 MiB (40 ENIs of 3,500 prefixes, each answer under 64 KiB) is refused before the node changes"""
    count, prefixes_each = 40, 3500
    with vpc.node_and_data() as (state, _), netns("node") as node:
        sh("ip", "-n", node, "link", "set", "lo", "up")
        enis = []
        for i in range(count):
            sh("ip", "-n", node, "link", "add", f"sxd{i}", "address", f"02:00:00:00:01:{i:02x}", "type", "veth", "peer", "name", f"sxp{i}")
            prefixes = [f"10.{100 + i}.{k * 16 // 256 + 1}.{k * 16 % 256}/28" for k in range(prefixes_each)]
            enis.append((f"sxd{i}", i, f"eni-0{i:02x}", f"10.{100 + i}.0.0/16", [f"10.{100 + i}.0.10"], prefixes))
        path = vpc.write_node_file(state, settings(state))
        with Metadata(node, state) as md:
            a = answers(node, enis)
            for key in a["paths"]:
                if key.endswith("vpc-ipv4-cidr-blocks"):
                    a["paths"][key] = "10.0.0.0/8"
            md.set(a)
            rules = sh("ip", "-n", node, "rule").stdout
            r = node_setup(node, "--imds", path, check_rc=False)
            check(r.returncode == 1 and "the node as the metadata service describes it: its node file would take " in r.stderr
                  and f"more than the 4 MiB a node file may hold ({count * prefixes_each * 16} addresses on {count} ENIs)" in r.stderr,
                  r.stderr)
            eq(read(path), settings(state))
            eq(sh("ip", "-n", node, "rule").stdout, rules)
            check(not os.path.exists(os.path.join(state, "run")), "node-setup made its stateDir")


if __name__ == "__main__":
    vpc.private_etc_cni()
    private_run_cni_all()
    run_all(cleanup=[BIN, *vpc.VARIANTS.values()])
