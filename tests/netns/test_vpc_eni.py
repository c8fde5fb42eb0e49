#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Root tests of vpc-eni against a simulated VPC, on both iptables variants. A "vpc" namespace
plays the VPC router: a subnet per ENI, a VPC host inside the VPC CIDR and an "internet" address
outside it, and the VPC's source/destination check (a packet whose source is not in the subnet
of the ENI it arrives from is dropped, and counted). A "node" namespace has eth0 (the primary
ENI, its address and default route set up as the cloud would) and eth1 (ENI device 1, bare).
node-setup prepares the node; pod A gets a primary-ENI address, pod B an ENI-1 address. Then,
with traffic: B reaches the VPC host through eth1 and A through eth0, with their own addresses;
both reach the internet address SNATed to the primary address, out of eth0; A and B reach each
other and the node reaches both. Routes, rules, neighbour entries and sysctls are exactly the
documented ones (docs/vpc-eni.md). DEL removes everything, a second DEL succeeds, and
node-teardown leaves the node as it was, without a table of the other iptables variant. In
prefix mode, a pod on a /28 prefix of each ENI is routed as a secondary address, with the same
traffic, on both variants. node-teardown goes by its record: the primary interface setup
recorded, not one the file names since, and never an empty base chain another program set to
drop. DEL acts
only on what vpc-eni-ipam holds for its container (another program's route and rules, and a live
pod's, survive a DEL whose prevResult names their addresses), also with neither prevResult nor a
namespace, and a DEL cut short is finished by the next; with another IPAM it finds the state
through nodeFile. A host link of the pod's veth name is removed only when it is a veth into the
pod's namespace. Two networks naming one node file share its one store: they never get one
address, and one's ADD, GC and DEL (nor a same-named config's GC) leave the other's pod as it
was; only ADD makes folders, and the node file's caps refuse past them; an ADD leaves an address
routed over another link alone. A node file's errors show where it is wrong and none of its
bytes, and a network config may name only root's own under /etc/cni (every refusal the same).
ADD on a node with no setup record is refused with code 11; DEL dumps the rules once.
The suite mounts an empty tmpfs over /etc/cni in a mount namespace of its own."""
import atexit
import contextlib
import ctypes
import fcntl
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import BIN, UNDER_STRACE, Plugin, check, eq, legacy_iptables_path, netns, ns_path, run_all, sh, test  # noqa: E402

VPC_CIDR = "10.80.0.0/16"
PRIMARY_IP, ENI1_IP = "10.80.1.10", "10.80.2.10"
VPC_HOST, INTERNET = "10.80.9.10", "198.51.100.7"
ETC_CNI = "/etc/cni"
NODE_FILES = "/etc/cni/vpc-eni"  # where a node file need not be readable by all


def private_etc_cni():
    """An empty tmpfs over /etc/cni, where a network config's nodeFile must be, in a mount namespace
    of this process's own (made here, every mount in it private): the machine's /etc/cni is
    neither seen nor changed, however the suite is run."""
    if ctypes.CDLL(None, use_errno=True).unshare(0x00020000) != 0:  # CLONE_NEWNS
        sys.exit(f"unshare: {os.strerror(ctypes.get_errno())}")
    sh("mount", "--make-rprivate", "/")
    os.umask(0o022)  # node files the tests write are root's alone to change
    made = not os.path.isdir(ETC_CNI)
    os.makedirs(ETC_CNI, exist_ok=True)
    sh("mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", ETC_CNI)
    os.mkdir(NODE_FILES, 0o755)

    def undo():
        sh("umount", ETC_CNI, check_rc=False)
        if made:
            os.rmdir(ETC_CNI)
    atexit.register(undo)


def node_dir():
    """A fresh folder under /etc/cni/vpc-eni for a test's node file (and node-setup's records)."""
    return tempfile.mkdtemp(dir=NODE_FILES)


def pretend_set_up(state_dir):
    """A record in `state_dir` as node-setup leaves it on a node with no ENI to change: ADD refuses
    (code 11) on a node not set up since boot. For the tests of ADD, DEL and GC in a bare "node"
    namespace, which node-setup could not prepare."""
    os.makedirs(state_dir, mode=0o700, exist_ok=True)
    record = {"primaryInterface": "eth0", "rpFilter": "1", "localRuleAt0": True, "links": [], "iptablesNftMade": []}
    fd = os.open(os.path.join(state_dir, "node-backup.json"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(record, f)


@contextlib.contextmanager
def node_and_data(set_up=False):
    """node_dir() and a folder for the reservations, both removed after the test, pass or fail;
    with `set_up`, node_dir()/run (node_file's stateDir in the tests) as set up (pretend_set_up)."""
    state, data = node_dir(), tempfile.mkdtemp()
    if set_up:
        pretend_set_up(os.path.join(state, "run"))
    try:
        yield state, data
    finally:
        shutil.rmtree(state)
        shutil.rmtree(data)


def nft_path():
    """A PATH folder under which `iptables` is iptables-nft (the legacy one is legacy_iptables_path)."""
    d = tempfile.mkdtemp(prefix="cni-nft-path.")
    for name in ["iptables", "ip6tables", "iptables-save", "ip6tables-save", "iptables-restore", "ip6tables-restore"]:
        os.symlink(f"/usr/sbin/{name.replace('tables', 'tables-nft', 1)}", os.path.join(d, name))
    return d


VARIANTS = {"nft": nft_path(), "legacy": legacy_iptables_path()}


def in_ns(ns, *cmd, **kw):
    return sh("ip", "netns", "exec", ns, *cmd, **kw)


def vpc_knows(vpc, node, eni, addresses):
    """The VPC knows that ENI `eni` (eth<eni>) holds `addresses`, secondary or of a prefix: no ARP
    reaches a pod."""
    mac = json.loads(sh("ip", "-n", node, "-j", "link", "show", f"eth{eni}").stdout)[0]["address"]
    for a in addresses:
        sh("ip", "-n", vpc, "neigh", "replace", a, "lladdr", mac, "dev", f"r{eni}", "nud", "permanent")


def build_vpc(vpc, node):
    """The router and its source check, the node's two ENIs, the primary configured."""
    for i in (0, 1):
        sh("ip", "-n", vpc, "link", "add", f"r{i}", "type", "veth", "peer", "name", f"eth{i}", "netns", node)
        sh("ip", "-n", vpc, "addr", "add", f"10.80.{i + 1}.1/24", "dev", f"r{i}")
        sh("ip", "-n", vpc, "link", "set", f"r{i}", "up")
    sh("ip", "-n", vpc, "link", "set", "lo", "up")
    for a in (VPC_HOST, INTERNET):
        sh("ip", "-n", vpc, "addr", "add", f"{a}/32", "dev", "lo")
    counted = "".join(f'  iifname "r{i}" ip daddr {dst} counter comment "r{i} to {dst}"\n'
                      for i in (0, 1) for dst in (VPC_HOST, INTERNET))
    in_ns(vpc, "nft", "-f", "-", input=(
        "table ip vpc {\n chain pre {\n  type filter hook prerouting priority -300;\n"
        '  iifname "r0" ip saddr != 10.80.1.0/24 counter drop comment "r0 dropped"\n'
        '  iifname "r1" ip saddr != 10.80.2.0/24 counter drop comment "r1 dropped"\n' + counted + " }\n}\n"))
    for i, addresses in ((0, ("10.80.1.20", "10.80.1.21")), (1, ("10.80.2.20", "10.80.2.21"))):
        vpc_knows(vpc, node, i, addresses)
    sh("ip", "-n", node, "link", "set", "lo", "up")
    sh("ip", "-n", node, "link", "set", "eth0", "up")
    sh("ip", "-n", node, "addr", "add", f"{PRIMARY_IP}/24", "dev", "eth0")
    sh("ip", "-n", node, "route", "add", "default", "via", "10.80.1.1", "dev", "eth0")


def dad_done(ns):
    """Waits until no IPv6 address in `ns` is still in duplicate detection, so the kernel's own
    local routes for them exist before a snapshot of the node is taken."""
    for _ in range(100):
        if "tentative" not in sh("ip", "-n", ns, "-6", "addr").stdout:
            return
        time.sleep(0.05)


def vpc_counters(vpc, family="ip"):
    """The router's counters by their comments: "r1 dropped" (its source check), "r1 to <address>"."""
    rules = json.loads(in_ns(vpc, "nft", "-j", "list", "table", family, "vpc").stdout)["nftables"]
    return {item["rule"]["comment"]: next(e["counter"]["packets"] for e in item["rule"]["expr"] if "counter" in e)
            for item in rules if "rule" in item}


def node_file(state, **over):
    """A node file whose stateDir is `state`, and its ipamDir in it."""
    f = {"primaryInterface": "eth0", "vpcCidrs": [VPC_CIDR], "mtu": 1500, "stateDir": state, "ipamDir": os.path.join(state, "ipam"),
         "enis": [{"interface": "eth0", "deviceNumber": 0, "subnet": "10.80.1.0/24", "primaryIp": PRIMARY_IP,
                   "secondaryIps": ["10.80.1.20", "10.80.1.21"]},
                  {"interface": "eth1", "deviceNumber": 1, "subnet": "10.80.2.0/24", "primaryIp": ENI1_IP,
                   "secondaryIps": ["10.80.2.20", "10.80.2.21"]}]}
    f.update(over)
    return f


def conf(path, version="1.0.0", name="vpc-test"):
    return {"cniVersion": version, "name": name, "type": "vpc-eni", "nodeFile": path, "mtu": 1500,
            "ipam": {"type": "vpc-eni-ipam", "nodeFile": path}}


def held(state):
    """The addresses reserved in the store of node_file(<state>/run), sorted."""
    d = os.path.join(state, "run", "ipam", "addresses")
    return sorted(f for f in os.listdir(d) if f[0].isdigit()) if os.path.isdir(d) else []


def pod_args(pod, ip=None):
    return f"IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME={pod}" + (f";IP={ip}" if ip else "")


def veth_name(pod):
    return "eni" + hashlib.sha1(f"default.{pod}".encode()).hexdigest()[:11]


def iptables_tables(text):
    """iptables-save output as {table: its lines}, without comments and counters. A legacy table
    that holds only its empty built-in chains (policy ACCEPT) is left out: the kernel never
    unregisters a legacy table from a namespace once anything used it (docs/vpc-eni.md), so
    that is as close to "not there" as a legacy node can go back."""
    tables, table = {}, None
    for line in text.splitlines():
        if line.startswith("*"):
            table = tables.setdefault(line[1:], [])
        elif table is not None and line and not line.startswith("#") and line != "COMMIT":
            table.append(re.sub(r"\[\d+:\d+\]", "[0:0]", line))
    return {t: lines for t, lines in tables.items()
            if not all(line.startswith(":") and " ACCEPT [0:0]" in line for line in lines)}


def nft_ruleset(ns):
    """`nft list ruleset` without counters: must be exactly as before node-setup on any node."""
    return re.sub(r"counter packets \d+ bytes \d+", "counter", in_ns(ns, "nft", "list", "ruleset").stdout)


def node_state(node):
    """What node-setup changes and teardown must restore. Not settings, so left out: the noqueue
    qdisc a link that was ever up keeps where it had noop, an IPv6 address's duplicate detection
    finishing meanwhile, and the anycast routes the kernel keeps while IPv6 forwarding is on (a
    pod's ADD turns it on, as ptp's does, and no DEL turns it off)."""
    links = re.sub(r"qdisc (noop|noqueue)", "qdisc", sh("ip", "-n", node, "-d", "addr").stdout).replace(" tentative", "")
    routes = "".join(line + "\n" for line in sh("ip", "-n", node, "route", "show", "table", "all").stdout.splitlines()
                     if not line.startswith("anycast"))
    return [links, routes, sh("ip", "-n", node, "rule").stdout,
            in_ns(node, "sysctl", "net.ipv4.conf.eth0.rp_filter").stdout, nft_ruleset(node),
            iptables_tables(in_ns(node, "iptables-nft-save").stdout), iptables_tables(in_ns(node, "iptables-legacy-save").stdout)]


def connect(src_ns, dst, port, server_ns):
    """A TCP connection from `src_ns` to dst:port served in `server_ns`: the peer address the
    server saw."""
    server = subprocess.Popen(
        ["ip", "netns", "exec", server_ns, "python3", "-c",
         f"import socket;s=socket.socket(socket.AF_INET6 if ':' in '{dst}' else socket.AF_INET);"
         "s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);"
         f"s.bind(('{dst}',{port}));s.listen(1);print('ready',flush=True);s.settimeout(8);"
         "c,a=s.accept();print(a[0],flush=True)"], stdout=subprocess.PIPE, text=True)
    try:
        eq(server.stdout.readline().strip(), "ready")
        in_ns(src_ns, "python3", "-c", f"import socket;socket.create_connection(('{dst}',{port}),timeout=5).close()")
        return server.stdout.readline().strip()
    finally:
        server.kill()
        server.wait()


PRIMARY_ENI_MARK = ("-A PREROUTING -i eth0 -m comment --comment \"AWS, primary ENI\" -m addrtype --dst-type LOCAL "
                    "--limit-iface-in -j CONNMARK --set-xmark 0x80/0x80")
PRIMARY_ENI_NFT = 'iifname "eth0" fib daddr . iif type local ct mark set ct mark | 0x00000080'


def node_port_reply(vpc, pod_ns, port, timeout=3):
    """A client beyond the VPC (INTERNET, in the router's namespace) connects to the node's
    primary address at 30080, which the node DNATs to pod B's 10.80.2.20:<port>: the peer the pod
    saw, or None when no reply came back within `timeout` seconds."""
    server = subprocess.Popen(
        ["ip", "netns", "exec", pod_ns, "python3", "-c",
         "import socket;s=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1);"
         f"s.bind(('10.80.2.20',{port}));s.listen(1);print('ready',flush=True);s.settimeout(5);"
         "c,a=s.accept();print(a[0],flush=True)"], stdout=subprocess.PIPE, text=True)
    try:
        eq(server.stdout.readline().strip(), "ready")
        client = in_ns(vpc, "python3", "-c",
                       f"import socket;socket.create_connection(('{PRIMARY_IP}',30080),timeout={timeout},"
                       f"source_address=('{INTERNET}',0)).close()", check_rc=False)
        return server.stdout.readline().strip() if client.returncode == 0 else None
    finally:
        server.kill()
        server.wait()


def node_port(vpc, node, pb, variant, backend, path, setup):
    """NodePort replies (docs/vpc-eni.md): a DNAT on the node's primary address to pod B on ENI 1,
    as kube-proxy's, in a table of the test's own. With nodePortSupport the primary ENI's
    connmark sends B's reply out of eth0, where the DNAT is undone, and the client gets it;
    without it the reply leaves through eth1 with the primary's address and the VPC's source
    check drops it. Then nodePortSupport is on again, its rule there once, and first in mangle
    PREROUTING (iptables) even when another program's ACCEPT was first and the rule after it."""
    in_ns(node, "nft", "-f", "-", input=(
        "table ip sx_kube {\n chain pre {\n  type nat hook prerouting priority dstnat;\n"
        f"  ip daddr {PRIMARY_IP} tcp dport 30080 dnat to 10.80.2.20:7100\n }}\n}}\n"))

    def marks():
        if backend == "nftables":
            return in_ns(node, "nft", "list", "chain", "ip", "cni_vpc_eni", "prerouting").stdout.count(PRIMARY_ENI_NFT)
        return in_ns(node, f"iptables-{variant}-save", "-t", "mangle").stdout.count(PRIMARY_ENI_MARK)

    def prerouting():
        return [line for line in in_ns(node, f"iptables-{variant}-save", "-t", "mangle").stdout.splitlines()
                if line.startswith("-A PREROUTING ")]

    def node_port_support(on):
        with open(path) as f:
            content = json.load(f)
        with open(path, "w") as f:
            json.dump(dict(content, nodePortSupport=on), f)
        setup("node-setup")

    eq(marks(), 1)
    if backend != "nftables":  # first in mangle PREROUTING
        eq(prerouting()[0], PRIMARY_ENI_MARK)
    eq(node_port_reply(vpc, pb, 7100), INTERNET)
    dropped = vpc_counters(vpc)["r1 dropped"]
    eq(dropped, 0)
    node_port_support(False)
    eq(marks(), 0)
    check("fwmark 0x80" not in sh("ip", "-n", node, "rule").stdout)
    eq(node_port_reply(vpc, pb, 7101, timeout=0.5), None)  # the drop below is the evidence, not the wait
    check(vpc_counters(vpc)["r1 dropped"] > dropped, "the reply was not dropped by the VPC's source check")
    if backend != "nftables":
        # Another program's ACCEPT first in mangle PREROUTING, and the mark appended after it (as an
        # earlier version did): setup puts the mark first again, in one commit.
        iptables = ["ip", "netns", "exec", node, f"iptables-{variant}", "-t", "mangle"]
        sh(*iptables, "-I", "PREROUTING", "1", "-i", "sxother", "-j", "ACCEPT")
        sh(*iptables, "-A", "PREROUTING", "-i", "eth0", "-m", "comment", "--comment", "AWS, primary ENI", "-m", "addrtype",
           "--dst-type", "LOCAL", "--limit-iface-in", "-j", "CONNMARK", "--set-xmark", "0x80/0x80")
    node_port_support(True)
    eq(marks(), 1)
    if backend != "nftables":
        eq(prerouting()[0], PRIMARY_ENI_MARK, prerouting())
        sh(*iptables, "-D", "PREROUTING", "-i", "sxother", "-j", "ACCEPT")
    in_ns(node, "nft", "delete", "table", "ip", "sx_kube")


def ping(src_ns, dst):
    in_ns(src_ns, "ping", "-c1", "-W2", dst)


def scenario(variant, backend=None):
    path_env = {"PATH": VARIANTS[variant] + ":" + os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")}
    with node_and_data() as (state, data):
        plugin = Plugin(os.path.join(BIN, "vpc-eni"))
        with netns("vpc") as vpc, netns("node") as node, netns("poda") as pa, netns("podb") as pb:
            build_vpc(vpc, node)
            path = os.path.join(state, "node.json")
            with open(path, "w") as f:
                json.dump(node_file(os.path.join(state, "run"), **({"firewallBackend": backend} if backend else {})), f)
            dad_done(node)
            # Another program's table before node-setup (a chain of its own in mangle, no built-in
            # chain yet): teardown must leave it, and remove only what node-setup made.
            in_ns(node, "env", f"PATH={path_env['PATH']}", "iptables", "-t", "mangle", "-N", "SX-OTHER")
            # And its empty filter table (setting a built-in chain's policy makes the chain).
            in_ns(node, "env", f"PATH={path_env['PATH']}", "iptables", "-t", "filter", "-P", "INPUT", "ACCEPT")
            before = node_state(node)

            def setup(verb):
                sh("ip", "netns", "exec", node, "env", f"PATH={path_env['PATH']}", os.path.join(BIN, "vpc-eni"), verb, path)

            setup("node-setup")
            setup("node-setup")  # idempotent
            eq(in_ns(node, "sysctl", "-n", "net.ipv4.conf.eth0.rp_filter").stdout.strip(), "2")
            rules = sh("ip", "-n", node, "rule").stdout
            check("1024:\tfrom all fwmark 0x80/0x80 lookup main" in rules, rules)
            eq(sh("ip", "-n", node, "route", "show", "table", "2").stdout.splitlines(),
               ["default via 10.80.2.1 dev eth1 ", "10.80.2.1 dev eth1 scope link "])
            check("10.80.2.0/24" not in sh("ip", "-n", node, "route").stdout, "the main table keeps ENI 1's subnet route")
            check(f"inet {ENI1_IP}/24" in sh("ip", "-n", node, "addr", "show", "eth1").stdout)
            if backend == "nftables":
                table = in_ns(node, "nft", "list", "table", "ip", "cni_vpc_eni").stdout
                for want in (f"ip daddr {VPC_CIDR} return", f"fib daddr type != local snat to {PRIMARY_IP} fully-random",
                             'iifname "eni*" ct state new jump outbound', "ct mark set ct mark | 0x00000080",
                             'iifname "eni*" ct mark & 0x00000080 == 0x00000080 meta mark set meta mark | 0x00000080'):
                    check(want in table, f"{want!r} in {table}")
                for v in ("nft", "legacy"):
                    check("AWS" not in in_ns(node, f"iptables-{v}-save").stdout, f"iptables rules in the {v} variant")
            else:
                save = in_ns(node, f"iptables-{variant}-save", "-t", "nat").stdout
                check(f"-A AWS-SNAT-CHAIN-0 -m comment --comment \"AWS, SNAT\" -m addrtype ! --dst-type LOCAL -j SNAT "
                      f"--to-source {PRIMARY_IP} --random-fully" in save, save)
                mangle = in_ns(node, f"iptables-{variant}-save", "-t", "mangle").stdout
                check("-A PREROUTING -i eni+ -m comment --comment \"AWS, CONNMARK\" -j CONNMARK --restore-mark --nfmask 0x80 "
                      "--ctmask 0x80" in mangle, mangle)
                check("-A AWS-CONNMARK-CHAIN-0 -m comment --comment \"AWS, CONNMARK\" -j CONNMARK --set-xmark 0x80/0x80" in mangle,
                      mangle)
                eq(mangle.count(PRIMARY_ENI_MARK), 1, mangle)
                other = "legacy" if variant == "nft" else "nft"
                check("AWS" not in in_ns(node, f"iptables-{other}-save").stdout, f"rules in the {other} variant")

            c = conf(path)
            a = plugin.run("ADD", c, host_ns=node, netns=ns_path(pa), container_id="ca", args=pod_args("a"),
                           extra_env=path_env).ok().json()
            b = plugin.run("ADD", c, host_ns=node, netns=ns_path(pb), container_id="cb", args=pod_args("b", "10.80.2.20"),
                           extra_env=path_env).ok().json()
            eq(a["ips"][0]["address"], "10.80.1.20/32")
            eq(b["ips"][0]["address"], "10.80.2.20/32")
            eq(a["interfaces"][0]["name"], veth_name("a"))
            for pod, ns, ip in (("a", pa, "10.80.1.20"), ("b", pb, "10.80.2.20")):
                host_mac = json.loads(sh("ip", "-n", node, "-j", "link", "show", veth_name(pod)).stdout)[0]["address"]
                eq(sh("ip", "-n", ns, "route").stdout.splitlines(),
                   ["default via 169.254.1.1 dev eth0 ", "169.254.1.1 dev eth0 scope link "])
                check(f"inet {ip}/32 scope global eth0" in sh("ip", "-n", ns, "addr", "show", "eth0").stdout)
                eq(sh("ip", "-n", ns, "neigh", "show", "169.254.1.1").stdout.split(),
                   ["169.254.1.1", "dev", "eth0", "lladdr", host_mac, "PERMANENT"])
                check(f"{ip} dev {veth_name(pod)} scope link" in sh("ip", "-n", node, "route").stdout)
            rules = sh("ip", "-n", node, "rule").stdout
            for line in ("512:\tfrom all to 10.80.1.20 lookup main", "512:\tfrom all to 10.80.2.20 lookup main",
                         "1536:\tfrom 10.80.2.20 lookup 2"):
                check(line in rules, f"{line!r} in {rules}")
            check("from 10.80.1.20 lookup" not in rules, "a primary-ENI pod has no from-rule")
            plugin.run("CHECK", dict(c, prevResult=a), host_ns=node, netns=ns_path(pa), container_id="ca",
                       args=pod_args("a"), extra_env=path_env).ok()
            plugin.run("CHECK", dict(c, prevResult=b), host_ns=node, netns=ns_path(pb), container_id="cb",
                       args=pod_args("b"), extra_env=path_env).ok()

            # Traffic.
            for src, dst in ((node, "10.80.1.20"), (node, "10.80.2.20"), (pa, "10.80.2.20"), (pb, "10.80.1.20")):
                ping(src, dst)
            eq(connect(pb, VPC_HOST, 7001, vpc), "10.80.2.20")
            eq(connect(pa, VPC_HOST, 7002, vpc), "10.80.1.20")
            seen = vpc_counters(vpc)
            check(seen[f"r1 to {VPC_HOST}"] > 0 and seen[f"r0 to {VPC_HOST}"] > 0, seen)
            eq(connect(pb, INTERNET, 7003, vpc), PRIMARY_IP)  # SNATed, and out of eth0
            eq(connect(pa, INTERNET, 7004, vpc), PRIMARY_IP)
            seen = vpc_counters(vpc)
            eq(seen["r0 dropped"] + seen["r1 dropped"], 0, f"the VPC's source check dropped packets: {seen}")
            eq(seen[f"r1 to {INTERNET}"], 0, f"B's internet traffic left through eth1: {seen}")
            check(seen[f"r0 to {INTERNET}"] > 0, seen)
            node_port(vpc, node, pb, variant, backend, path, setup)

            # DEL, twice; then the node goes back to how it was.
            for _ in range(2):
                plugin.run("DEL", dict(c, prevResult=a), host_ns=node, netns=ns_path(pa), container_id="ca",
                           args=pod_args("a"), extra_env=path_env).ok()
                plugin.run("DEL", c, host_ns=node, netns=ns_path(pb), container_id="cb", args=pod_args("b"),
                           extra_env=path_env).ok()
            rules = sh("ip", "-n", node, "rule").stdout
            check("10.80.1.20" not in rules and "10.80.2.20" not in rules, rules)
            check("eni" not in sh("ip", "-n", node, "link").stdout)
            check("10.80.1.20" not in sh("ip", "-n", node, "route").stdout)
            eq(sh("ip", "-n", pa, "link", "show", "eth0", check_rc=False).returncode != 0, True)
            eq(held(state), [])
            # A record in stateDir forged to name that filter table and its INPUT: teardown must not
            # act on what setup cannot have made.
            record = os.path.join(state, "run", "node-backup.json")
            with open(record) as f:
                backup = json.load(f)
            backup["iptablesNftMade"] = backup.get("iptablesNftMade", []) + ["filter", "filter/INPUT"]
            with open(record, "w") as f:
                json.dump(backup, f)
            setup("node-teardown")
            eq(node_state(node), before)
            check("chain SX-OTHER" in nft_ruleset(node) if variant == "nft" else "SX-OTHER" in in_ns(node, "iptables-legacy-save").stdout)
            if variant == "nft":
                eq(in_ns(node, "iptables-legacy-save").stdout, "", "a legacy table on an nft node")
            else:
                eq(in_ns(node, "nft", "list", "ruleset").stdout, "", "an nf_tables table on a legacy node")
            if backend == "nftables":
                check("cni_vpc_eni" not in nft_ruleset(node), "the nftables driver left its table")


@test
def simulated_vpc_nft():
    """vpc-eni on an iptables-nft node: routes, rules, neighbours, SNAT and traffic in a simulated VPC; DEL and node-teardown"""
    scenario("nft")


@test
def simulated_vpc_legacy():
    """vpc-eni on an iptables-legacy node: the same"""
    scenario("legacy")


@test
def simulated_vpc_nftables_driver():
    """vpc-eni with firewallBackend nftables: the SNAT and connmark in a native table, the same traffic"""
    scenario("nft", "nftables")


@test
def teardown_goes_by_its_record():
    """vpc-eni node-teardown on iptables-nft: the recorded primary interface's NodePort rule and rp_filter though the file names another now; a base chain set to drop since stays; it goes by the node file kept in stateDir, not the file edited since, saying so; a record's primaryInterface, rpFilter or links (names, MTUs, addresses' family and count) forged, or the record or the kept node file not root's with mode 0600, is refused"""
    path_env = {"PATH": VARIANTS["nft"] + ":" + os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")}
    with node_and_data() as (state, _), netns("vpc") as vpc, netns("node") as node:
        build_vpc(vpc, node)
        path = write_node_file(state, node_file(os.path.join(state, "run")))
        dad_done(node)
        before = node_state(node)

        def run(verb):
            in_ns(node, "env", f"PATH={path_env['PATH']}", os.path.join(BIN, "vpc-eni"), verb, path)

        run("node-setup")
        eq(in_ns(node, "sysctl", "-n", "net.ipv4.conf.eth0.rp_filter").stdout.strip(), "2")
        eq(read_json(os.path.join(state, "run", "node-backup.json"))["primaryInterface"], "eth0")
        # Another program sets mangle PREROUTING, which setup made, to drop: its chain now.
        in_ns(node, "iptables-nft", "-t", "mangle", "-P", "PREROUTING", "DROP")
        # The file now names another primary interface (renamed, say).
        f = node_file(os.path.join(state, "run"), primaryInterface="eth9")
        f["enis"][0]["interface"] = "eth9"
        write_node_file(state, f)
        # While another node-setup or teardown holds the node's lock, teardown waits for it.
        with open(os.path.join(state, "run", "node.lock"), "a") as held:
            fcntl.flock(held, fcntl.LOCK_EX)
            waiting = subprocess.Popen(["ip", "netns", "exec", node, "env", f"PATH={path_env['PATH']}",
                                        os.path.join(BIN, "vpc-eni"), "node-teardown", path],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(1)
            check(waiting.poll() is None, "node-teardown ran while another held the node's lock")
            check("AWS" in in_ns(node, "iptables-nft-save").stdout, "node-teardown changed the node while waiting")
        _, err = waiting.communicate(timeout=60)
        # It goes by the node file the node was set up by, which stateDir keeps, not the edited one.
        kept = os.path.join(state, "run", "node-applied.json")
        eq((waiting.returncode, err),
           (0, f"vpc-eni node-teardown: going by {kept}, the node file the node was set up by, not {path}, which differs\n"))
        eq(in_ns(node, "sysctl", "-n", "net.ipv4.conf.eth0.rp_filter").stdout.strip(), before[3].split("=")[1].strip())
        check("AWS" not in in_ns(node, "iptables-nft-save").stdout, in_ns(node, "iptables-nft-save").stdout)
        check("policy drop" in in_ns(node, "nft", "list", "chain", "ip", "mangle", "PREROUTING").stdout, "the chain set to drop went")
        check("table ip nat" not in nft_ruleset(node), nft_ruleset(node))
        in_ns(node, "iptables-nft", "-t", "mangle", "-P", "PREROUTING", "ACCEPT")
        # A record naming no interface name is refused, naming the record.
        write_node_file(state, node_file(os.path.join(state, "run")))
        run("node-setup")
        record = os.path.join(state, "run", "node-backup.json")
        write_node_file(os.path.dirname(record), dict(read_json(record), primaryInterface="../eth0"), name="node-backup.json", mode=0o600)
        r = in_ns(node, os.path.join(BIN, "vpc-eni"), "node-teardown", path, check_rc=False)
        check(r.returncode == 1 and f"{record}: primaryInterface" in r.stderr, r.stderr)
        # So is one whose rpFilter is none of rp_filter's values: nothing is written or removed.
        was = before[3].split("=")[1].strip()
        for forged in ("7", "0\n", "", "1 "):
            write_node_file(os.path.dirname(record), dict(read_json(record), primaryInterface="eth0", rpFilter=forged),
                            name="node-backup.json", mode=0o600)
            r = in_ns(node, os.path.join(BIN, "vpc-eni"), "node-teardown", path, check_rc=False)
            eq((r.returncode, r.stderr.strip()), (1, f'vpc-eni node-teardown: vpc-eni: {record}: rpFilter is not "0", "1" or "2"'))
            eq(in_ns(node, "sysctl", "-n", "net.ipv4.conf.eth0.rp_filter").stdout.strip(), "2")
            check("AWS" in in_ns(node, "iptables-nft-save").stdout, "a refused teardown removed the rules")
        # And one whose links (written back to the node) are no interface names or MTUs a link has.
        good = dict(read_json(record), rpFilter=was)
        for key, value, said in (("name", "../eth1", "links[1].name: "), ("mtu", 70000, "links[1].mtu 70000 is not within 68..65535"),
                                 ("addresses", ["fd00::7/64"], "links[1].addresses: fd00::7/64 is not of the family of eth1's subnet 10.80.2.0/24"),
                                 ("addresses", [f"10.80.2.{i % 250}/24" for i in range(257)], "links[1].addresses: more than 256")):
            links = [dict(link) for link in good["links"]]
            links[1][key] = value
            write_node_file(os.path.dirname(record), dict(good, links=links), name="node-backup.json", mode=0o600)
            r = in_ns(node, os.path.join(BIN, "vpc-eni"), "node-teardown", path, check_rc=False)
            check(r.returncode == 1 and f"vpc-eni node-teardown: vpc-eni: {record}: {said}" in r.stderr, r.stderr)
            check("AWS" in in_ns(node, "iptables-nft-save").stdout, "a refused teardown removed the rules")
        write_node_file(os.path.dirname(record), good, name="node-backup.json", mode=0o600)
        # And one that is not root's with mode 0600, as node-setup writes it; so is the node file
        # kept there, which a node-teardown whose FILE does not load goes by.
        broken = write_node_file(state, {"stateDir": os.path.join(state, "run")}, name="broken.json")
        for name, mode, file in (("node-backup.json", 0o644, path), ("node-applied.json", 0o640, broken)):
            at = os.path.join(state, "run", name)
            os.chmod(at, mode)
            r = in_ns(node, os.path.join(BIN, "vpc-eni"), "node-teardown", file, check_rc=False)
            check(r.returncode == 1 and f"vpc-eni: {at}: refused: owned by uid 0 with mode 0{mode:o}, not root's with mode 0600 as "
                  "node-setup writes it" in r.stderr, r.stderr)
            check("AWS" in in_ns(node, "iptables-nft-save").stdout, "a refused teardown removed the rules")
            os.chmod(at, 0o600)
        run("node-teardown")
        eq(in_ns(node, "sysctl", "-n", "net.ipv4.conf.eth0.rp_filter").stdout.strip(), was)


def read_json(path):
    with open(path) as f:
        return json.load(f)


def prefix_scenario(variant):
    """Prefix mode: ENI 0 with a /28 prefix and no secondary address, ENI 1 with a secondary address
    and a /28 prefix. Pod C gets ENI 0's prefix's first address (the first of the node's), pod D
    asks for ENI 1's prefix's last; both are routed as secondary addresses, with traffic."""
    path_env = {"PATH": VARIANTS[variant] + ":" + os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")}
    c_ip, d_ip = "10.80.1.32", "10.80.2.63"
    with node_and_data() as (state, _), netns("vpc") as vpc, netns("node") as node, netns("podc") as pc, \
            netns("podd") as pd:
        build_vpc(vpc, node)
        vpc_knows(vpc, node, 0, [c_ip])
        vpc_knows(vpc, node, 1, [d_ip])
        f = node_file(os.path.join(state, "run"))
        f["enis"][0].update(secondaryIps=[], ipv4Prefixes=["10.80.1.32/28"])
        f["enis"][1].update(secondaryIps=["10.80.2.20"], ipv4Prefixes=["10.80.2.48/28"])
        path = write_node_file(state, f)
        dad_done(node)
        before = node_state(node)

        def run(verb):
            sh("ip", "netns", "exec", node, "env", f"PATH={path_env['PATH']}", os.path.join(BIN, "vpc-eni"), verb, path)

        run("node-setup")
        plugin, c = Plugin(os.path.join(BIN, "vpc-eni")), conf(path)
        pods = (("c", pc, "cc", None), ("d", pd, "cd", d_ip))
        results = {pod: plugin.run("ADD", c, host_ns=node, netns=ns_path(ns), container_id=cid, args=pod_args(pod, ip),
                                   extra_env=path_env).ok().json() for pod, ns, cid, ip in pods}
        eq([results[p]["ips"][0]["address"] for p in "cd"], [f"{c_ip}/32", f"{d_ip}/32"])
        routes = sh("ip", "-n", node, "route").stdout
        for pod, ip in (("c", c_ip), ("d", d_ip)):
            check(f"{ip} dev {veth_name(pod)} scope link" in routes, routes)
        rules = sh("ip", "-n", node, "rule").stdout
        for line in (f"512:\tfrom all to {c_ip} lookup main", f"512:\tfrom all to {d_ip} lookup main",
                     f"1536:\tfrom {d_ip} lookup 2"):
            check(line in rules, f"{line!r} in {rules}")
        check(f"from {c_ip} lookup" not in rules, "a primary-ENI pod has no from-rule")
        for pod, ns, cid, _ in pods:
            plugin.run("CHECK", dict(c, prevResult=results[pod]), host_ns=node, netns=ns_path(ns), container_id=cid,
                       args=pod_args(pod), extra_env=path_env).ok()

        for src, dst in ((node, c_ip), (node, d_ip), (pc, d_ip)):
            ping(src, dst)
        eq(connect(pd, VPC_HOST, 7031, vpc), d_ip)  # out of eth1 with its own address
        eq(connect(pc, VPC_HOST, 7032, vpc), c_ip)
        eq(connect(pd, INTERNET, 7033, vpc), PRIMARY_IP)  # SNATed, and out of eth0
        seen = vpc_counters(vpc)
        check(seen[f"r1 to {VPC_HOST}"] > 0 and seen[f"r0 to {VPC_HOST}"] > 0, seen)
        eq(seen["r0 dropped"] + seen["r1 dropped"], 0, f"the VPC's source check dropped packets: {seen}")
        eq(seen[f"r1 to {INTERNET}"], 0, f"D's internet traffic left through eth1: {seen}")

        for pod, ns, cid, _ in pods:
            plugin.run("DEL", c, host_ns=node, netns=ns_path(ns), container_id=cid, args=pod_args(pod), extra_env=path_env).ok()
        rules = sh("ip", "-n", node, "rule").stdout
        check(c_ip not in rules and d_ip not in rules, rules)
        eq(held(state), [])
        run("node-teardown")
        eq(node_state(node), before)


@test
def prefix_mode_nft():
    """vpc-eni prefix mode on an iptables-nft node: a pod on a /28 prefix of each ENI, routed as a secondary address, with traffic"""
    prefix_scenario("nft")


@test
def prefix_mode_legacy():
    """vpc-eni prefix mode on an iptables-legacy node: the same"""
    prefix_scenario("legacy")


@test
def simulated_vpc_ipv6():
    """vpc-eni with IPv6 ENIs: the /128, fe80::1 as gateway and neighbour, the rules and tables, traffic; DEL and teardown"""
    with node_and_data() as (state, data):
        plugin = Plugin(os.path.join(BIN, "vpc-eni"))
        with netns("vpc6") as vpc, netns("node6") as node, netns("poda") as pa, netns("podb") as pb:
            for i in (0, 1):
                sh("ip", "-n", vpc, "link", "add", f"r{i}", "type", "veth", "peer", "name", f"eth{i}", "netns", node)
                sh("ip", "-n", vpc, "addr", "add", f"fd80:{i + 1}::1/64", "dev", f"r{i}", "nodad")
                sh("ip", "-n", vpc, "link", "set", f"r{i}", "up")
                mac = json.loads(sh("ip", "-n", node, "-j", "link", "show", f"eth{i}").stdout)[0]["address"]
                sh("ip", "-n", vpc, "-6", "neigh", "replace", f"fd80:{i + 1}::20", "lladdr", mac, "dev", f"r{i}", "nud", "permanent")
            sh("ip", "-n", vpc, "link", "set", "lo", "up")
            sh("ip", "-n", vpc, "addr", "add", "fd80:9::10/128", "dev", "lo")
            in_ns(vpc, "nft", "-f", "-", input=(
                "table ip6 vpc {\n chain pre {\n  type filter hook prerouting priority -300;\n"
                '  iifname "r0" ip6 saddr != fd80:1::/64 ip6 saddr != fe80::/10 ip6 saddr != :: counter drop comment "r0 dropped"\n'
                '  iifname "r1" ip6 saddr != fd80:2::/64 ip6 saddr != fe80::/10 ip6 saddr != :: counter drop comment "r1 dropped"\n'
                '  iifname "r1" ip6 daddr fd80:9::10 counter comment "r1 to fd80:9::10"\n }\n}\n'))
            sh("ip", "-n", node, "link", "set", "lo", "up")
            sh("ip", "-n", node, "link", "set", "eth0", "up")
            sh("ip", "-n", node, "addr", "add", "fd80:1::10/64", "dev", "eth0", "nodad")
            sh("ip", "-n", node, "-6", "route", "add", "default", "via", "fd80:1::1", "dev", "eth0")
            path = os.path.join(state, "node.json")
            with open(path, "w") as f:
                json.dump({"primaryInterface": "eth0", "vpcCidrs": ["fd80::/16"], "mtu": 1500, "stateDir": os.path.join(state, "run"),
                           "ipamDir": os.path.join(state, "run", "ipam"),
                           "enis": [{"interface": "eth0", "deviceNumber": 0, "subnet": "fd80:1::/64", "primaryIp": "fd80:1::10",
                                     "secondaryIps": ["fd80:1::20"]},
                                    {"interface": "eth1", "deviceNumber": 1, "subnet": "fd80:2::/64", "primaryIp": "fd80:2::10",
                                     "secondaryIps": ["fd80:2::20"]}]}, f)
            dad_done(node)
            before = node_state(node)
            sh("ip", "netns", "exec", node, os.path.join(BIN, "vpc-eni"), "node-setup", path)
            eq([line.strip() for line in sh("ip", "-n", node, "-6", "route", "show", "table", "2").stdout.splitlines()
                if line.startswith("default")], ["default via fd80:2::1 dev eth1 metric 1024 pref medium"])
            check("fd80:2::/64" not in sh("ip", "-n", node, "-6", "route").stdout, "the main table keeps ENI 1's subnet route")
            check("AWS" not in in_ns(node, "iptables-save").stdout, "no IPv4 SNAT for an IPv6 VPC")
            c = conf(path)
            a = plugin.run("ADD", c, host_ns=node, netns=ns_path(pa), container_id="ca", args=pod_args("a")).ok().json()
            b = plugin.run("ADD", c, host_ns=node, netns=ns_path(pb), container_id="cb", args=pod_args("b")).ok().json()
            eq((a["ips"][0]["address"], a["ips"][0]["gateway"]), ("fd80:1::20/128", "fe80::1"))
            eq(b["ips"][0]["address"], "fd80:2::20/128")
            for pod, ns in (("a", pa), ("b", pb)):
                host_mac = json.loads(sh("ip", "-n", node, "-j", "link", "show", veth_name(pod)).stdout)[0]["address"]
                check("default via fe80::1 dev eth0" in sh("ip", "-n", ns, "-6", "route").stdout)
                neigh = sh("ip", "-n", ns, "-6", "neigh", "show", "fe80::1").stdout.split()
                check(neigh[:5] == ["fe80::1", "dev", "eth0", "lladdr", host_mac] and neigh[-1] == "PERMANENT", neigh)
            rules = sh("ip", "-n", node, "-6", "rule").stdout
            for line in ("512:\tfrom all to fd80:1::20 lookup main", "512:\tfrom all to fd80:2::20 lookup main",
                         "1536:\tfrom fd80:2::20 lookup 2"):
                check(line in rules, f"{line!r} in {rules}")
            plugin.run("CHECK", dict(c, prevResult=b), host_ns=node, netns=ns_path(pb), container_id="cb", args=pod_args("b")).ok()
            for src, dst in ((node, "fd80:1::20"), (node, "fd80:2::20"), (pa, "fd80:2::20")):
                in_ns(src, "ping", "-6", "-c1", "-W2", dst)
            eq(connect(pb, "fd80:9::10", 7011, vpc), "fd80:2::20")
            eq(connect(pa, "fd80:9::10", 7012, vpc), "fd80:1::20")
            counts = vpc_counters(vpc, "ip6")
            check(counts["r1 to fd80:9::10"] > 0, counts)
            eq(counts["r0 dropped"] + counts["r1 dropped"], 0, counts)
            for pod, ns, cid in (("a", pa, "ca"), ("b", pb, "cb")):
                plugin.run("DEL", c, host_ns=node, netns=ns_path(ns), container_id=cid, args=pod_args(pod)).ok()
            check("fd80:" not in sh("ip", "-n", node, "-6", "rule").stdout)
            sh("ip", "netns", "exec", node, os.path.join(BIN, "vpc-eni"), "node-teardown", path)
            eq(node_state(node), before)


@test
def del_and_gc_when_the_pod_is_gone():
    """vpc-eni: DEL of a pod whose namespace is gone, and GC of a vanished pod, remove its rules and address"""
    with node_and_data(set_up=True) as (state, data):
        plugin = Plugin(os.path.join(BIN, "vpc-eni"))
        with netns("node") as node:
            path = os.path.join(state, "node.json")
            with open(path, "w") as f:
                json.dump(node_file(os.path.join(state, "run")), f)
            c = conf(path)
            results = {}
            for pod, ip in (("gone", "10.80.2.20"), ("leaked", "10.80.2.21")):
                with netns("pod") as ns:
                    results[pod] = plugin.run("ADD", c, host_ns=node, netns=ns_path(ns), container_id=pod,
                                              args=pod_args(pod, ip)).ok().json()
                    check(f"from {ip} lookup 2" in sh("ip", "-n", node, "rule").stdout)
                # the namespace is gone, and the veth with it; the rules stay until DEL or GC
                check(f"from {ip} lookup 2" in sh("ip", "-n", node, "rule").stdout)
            plugin.run("DEL", dict(c, prevResult=results["gone"]), host_ns=node, netns="/run/netns/gone-already",
                       container_id="gone", args=pod_args("gone")).ok()
            rules = sh("ip", "-n", node, "rule").stdout
            check("10.80.2.20" not in rules and "10.80.2.21" in rules, rules)
            # a namespace is destroyed asynchronously: wait for the vanished pod's veth to go
            for _ in range(100):
                if sh("ip", "-n", node, "link", "show", veth_name("leaked"), check_rc=False).returncode != 0:
                    break
                time.sleep(0.05)
            gc = dict(c, cniVersion="1.1.0")
            gc["cni.dev/valid-attachments"] = []
            plugin.run("GC", gc, host_ns=node).ok()
            check("10.80.2.21" not in sh("ip", "-n", node, "rule").stdout)
            eq(held(state), [])


@test
def bad_node_files_are_clear_errors():
    """vpc-eni: a node file with a bad key or value is a CNI error naming it, before anything changes"""
    with node_and_data() as (state, data):
        with netns("node") as node, netns("pod") as pod:
            cases = [
                ({"mtu": "x"}, "mtu"),
                ({"enis": [{"interface": "eth0", "deviceNumber": 1, "subnet": "10.80.1.0/24", "primaryIp": PRIMARY_IP}]},
                 "no ENI has deviceNumber 0"),
                ({"enis": [{"interface": "eth0", "deviceNumber": 0, "subnet": "10.80.1.0/24", "primaryIp": "10.9.9.9"}]},
                 "primaryIp 10.9.9.9 is not in subnet 10.80.1.0/24"),
                ({"vpcCidrs": []}, "vpcCidrs is missing"),
                ({"primaryInterface": "../eth0"}, "primaryInterface"),
                ({"nodePortSuport": False}, 'unknown key "nodePortSuport" (cni-all vpc-eni --help and docs/vpc-eni.md list them)'),
                ({"enis": [dict(node_file(state)["enis"][0], secondaryIp=["10.80.1.20"])]}, 'enis[0]: unknown key "secondaryIp"'),
                ({"enis": [{"interface": "eth0", "deviceNumber": 0, "subnet": "10.80.1.0/24", "primaryIp": PRIMARY_IP,
                            "ipv4Prefixes": ["10.80.1.17/28"]}]},
                 "enis[0]: ipv4Prefixes: 10.80.1.17/28 has host bits set: the prefix is 10.80.1.16/28"),
            ]
            path = os.path.join(state, "node.json")
            for over, want in cases:
                with open(path, "w") as f:
                    json.dump(node_file(state, **over), f)
                err = Plugin(os.path.join(BIN, "vpc-eni")).run("ADD", conf(path), host_ns=node, netns=ns_path(pod),
                                                               args=pod_args("a")).error()
                check(want in err["msg"] and f"node file {path}: " in err["msg"], f"{want!r} in {err}")
                r = sh("ip", "netns", "exec", node, os.path.join(BIN, "vpc-eni"), "node-setup", path, check_rc=False)
                check(r.returncode == 1 and want in r.stderr and f"node file {path}: " in r.stderr, f"node-setup: {r.stderr}")
            check("eni" not in sh("ip", "-n", node, "link").stdout)
            eq(os.listdir(data), [])
            # A valid file naming links the node does not have: node-setup names the key and the
            # link (not a /proc/sys path), and records nothing.
            with open(path, "w") as f:
                json.dump(node_file(os.path.join(state, "run")), f)
            for missing, want in (("eth0", "primaryInterface eth0"), ("eth1", "enis[1].interface eth1")):
                r = sh("ip", "netns", "exec", node, os.path.join(BIN, "vpc-eni"), "node-setup", path, check_rc=False)
                eq((r.returncode, r.stderr.strip()),
                   (1, f"vpc-eni node-setup: vpc-eni: node file {path}: {want}: no such link in this network namespace"))
                check(not os.path.exists(os.path.join(state, "run", "node-backup.json")), "a record of a failed node-setup")
                sh("ip", "-n", node, "link", "add", missing, "type", "veth", "peer", "name", f"sx{missing}")


def host_state(node):
    """The node's routes in every table, rules and link names: what a DEL may change."""
    links = sorted(line.split()[1].split("@")[0] for line in sh("ip", "-n", node, "-o", "link").stdout.splitlines())
    return [sh("ip", "-n", node, "route", "show", "table", "all").stdout, sh("ip", "-n", node, "rule").stdout, links]


def write_node_file(directory, content, name="node.json", mode=0o644):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(content if isinstance(content, str) else json.dumps(content))
    os.chmod(path, mode)
    return path


FOREIGN = "10.80.2.21"  # a node address no pod holds; another program routes it
FOREIGN_RULES = [["to", FOREIGN, "lookup", "main", "pref", "512"], ["from", FOREIGN, "lookup", "100", "pref", "1536"],
                 ["from", FOREIGN, "lookup", "2", "pref", "1536"]]


def add_foreign(node, *route_options):
    """Another program's route to FOREIGN over a link of its own (sxother0), and FOREIGN_RULES."""
    sh("ip", "-n", node, "link", "add", "sxother0", "type", "veth", "peer", "name", "sxother1")
    sh("ip", "-n", node, "link", "set", "sxother0", "up")
    sh("ip", "-n", node, "route", "add", f"{FOREIGN}/32", "dev", "sxother0", *route_options)
    for rule in FOREIGN_RULES:
        sh("ip", "-n", node, "rule", "add", *rule)


@test
def del_acts_only_on_its_own_addresses():
    """vpc-eni DEL: a prevResult naming addresses the container does not hold, or another sandbox of the same pod, deletes nothing"""
    with node_and_data(set_up=True) as (state, data):
        plugin = Plugin(os.path.join(BIN, "vpc-eni"))
        with netns("node") as node, netns("pod") as pod:
            c = conf(write_node_file(state, node_file(os.path.join(state, "run"))))
            live = plugin.run("ADD", c, host_ns=node, netns=ns_path(pod), container_id="live",
                              args=pod_args("b", "10.80.2.20")).ok().json()
            # Another program's route and rules for a node address, of the shapes vpc-eni makes.
            add_foreign(node)
            before = host_state(node)
            check(f"{FOREIGN} dev sxother0" in before[0] and "10.80.2.20 dev " + veth_name("b") in before[0], before)
            prev = dict(live, ips=[{"address": f"{FOREIGN}/32", "gateway": "169.254.1.1", "interface": 1}] + live["ips"])
            # A container that holds nothing, its prevResult naming the foreign address and the live
            # pod's; then the same as another sandbox of the live pod (its veth has the same name).
            for args in (pod_args("intruder"), pod_args("b")):
                plugin.run("DEL", dict(c, prevResult=prev), host_ns=node, container_id="intruder", args=args).ok()
                eq(host_state(node), before, f"a DEL of a container holding nothing ({args}) changed the node")
            # The live pod's own DEL removes its rules, route and veth, and nothing of the other program's.
            plugin.run("DEL", c, host_ns=node, netns=ns_path(pod), container_id="live", args=pod_args("b")).ok()
            routes, rules, links = host_state(node)
            check("10.80.2.20" not in rules and "10.80.2.20" not in routes and veth_name("b") not in links, (routes, rules, links))
            check(f"{FOREIGN} dev sxother0" in routes, routes)
            for want in (f"512:\tfrom all to {FOREIGN} lookup main", f"1536:\tfrom {FOREIGN} lookup 100",
                         f"1536:\tfrom {FOREIGN} lookup 2"):
                check(want in rules, f"{want!r} in {rules}")
            eq(held(state), [])


# Another program's rules with the pod's address and vpc-eni's priority and table, each with a
# selector more than vpc-eni's (the kernel matches a delete on the request's selectors only).
WIDER_RULES = [["to", "10.80.2.20", "iif", "sxwide0", "lookup", "main", "pref", "512"],
               ["to", "10.80.2.20", "fwmark", "0x7", "lookup", "main", "pref", "512"],
               ["from", "10.80.9.0/24", "to", "10.80.2.20", "lookup", "main", "pref", "512"],
               ["to", "10.80.2.20", "ipproto", "tcp", "lookup", "main", "pref", "512"],
               ["from", "10.80.2.20", "to", "10.80.9.0/24", "lookup", "2", "pref", "1536"],
               ["from", "10.80.2.20", "oif", "sxwide0", "lookup", "2", "pref", "1536"],
               ["from", "10.80.2.20", "uidrange", "1000-2000", "lookup", "2", "pref", "1536"]]


def wider_rules(node):
    """The lines of `ip rule` that are WIDER_RULES'."""
    return [line for line in sh("ip", "-n", node, "rule").stdout.splitlines()
            if "10.80.2.20" in line and any(w in line for w in ("sxwide0", "fwmark", "10.80.9.0", "ipproto", "uidrange"))]


@test
def del_removes_only_its_exact_rules():
    """vpc-eni DEL: rules of another program with the pod's address, vpc-eni's priorities and tables, and a selector more (iif, oif, fwmark, src, dst, ipproto, uidrange) survive; made after the pod's, the pod's own go (and CHECK does not take theirs for the pod's); made before them, the pod's are left with a warning, since the kernel would delete the other's in their place; one the kernel takes for the pod's makes ADD fail (fails before the fix: DEL deleted them)"""
    with node_and_data(set_up=True) as (state, data):
        plugin = Plugin(os.path.join(BIN, "vpc-eni"))
        ours = ("512:\tfrom all to 10.80.2.20 lookup main", "1536:\tfrom 10.80.2.20 lookup 2")
        with netns("node") as node, netns("pod") as pod:
            c = conf(write_node_file(state, node_file(os.path.join(state, "run"))))
            # Before the pod's, only rules the kernel's "exists" test tells from them: it would
            # take one with a source or destination more for the pod's, and add none of those.
            for wider_first, wider in ((False, WIDER_RULES), (True, [r for r in WIDER_RULES if "10.80.9.0/24" not in r])):
                if wider_first:
                    for rule in wider:
                        sh("ip", "-n", node, "rule", "add", *rule)
                added = plugin.run("ADD", c, host_ns=node, netns=ns_path(pod), container_id="p",
                                   args=pod_args("b", "10.80.2.20")).ok().json()
                if not wider_first:
                    for rule in wider:
                        sh("ip", "-n", node, "rule", "add", *rule)
                    # CHECK wants the pod's rule itself: another's with a selector more is not it.
                    check_pod = functools.partial(plugin.run, "CHECK", dict(c, prevResult=added), host_ns=node,
                                                  netns=ns_path(pod), container_id="p", args=pod_args("b"))
                    check_pod().ok()
                    sh("ip", "-n", node, "rule", "del", "to", "10.80.2.20", "lookup", "main", "pref", "512")  # the pod's: first
                    eq(check_pod().error()["msg"], "vpc-eni: the rule to 10.80.2.20 lookup main pref 512 is missing")
                theirs = wider_rules(node)
                eq(len(theirs), len(wider), theirs)
                out = plugin.run("DEL", c, host_ns=node, netns=ns_path(pod), container_id="p", args=pod_args("b")).ok()
                eq(wider_rules(node), theirs)
                rules = [line.rstrip() for line in sh("ip", "-n", node, "rule").stdout.splitlines()]
                for line in ours:
                    eq(line in rules, wider_first, f"{line!r} in {rules}")
                if wider_first:
                    check("vpc-eni: the rule 512: from all to 10.80.2.20/32 lookup 254 is left: another program's rule" in out.err,
                          out.err)
                for rule in wider:  # theirs first: `ip rule del` of the pod's would take one of them
                    sh("ip", "-n", node, "rule", "del", *rule)
                if wider_first:
                    sh("ip", "-n", node, "rule", "del", "to", "10.80.2.20", "lookup", "main", "pref", "512")
                    sh("ip", "-n", node, "rule", "del", "from", "10.80.2.20", "lookup", "2", "pref", "1536")
                check("10.80.2.20" not in sh("ip", "-n", node, "rule").stdout, sh("ip", "-n", node, "rule").stdout)
            eq(held(state), [])
            # A rule the kernel takes for the pod's (its "exists" test ignores a source the new
            # rule lacks): the ADD is refused, that rule left, nothing of the pod's kept.
            wide = ["from", "10.80.9.0/24", "to", "10.80.2.20", "lookup", "main", "pref", "512"]
            sh("ip", "-n", node, "rule", "add", *wide)
            before = host_state(node)
            err = plugin.run("ADD", c, host_ns=node, netns=ns_path(pod), container_id="p", args=pod_args("b", "10.80.2.20")).error()
            check("adding rule 512: from all to 10.80.2.20/32 lookup 254: the kernel takes it for a rule already there" in err["msg"],
                  err)
            eq(host_state(node), before)
            eq(held(state), [])


def record(state, network, ip):
    """What network `network`'s record of `ip` says (container ID, ifname, ipam digest, pod
    namespace), or None."""
    path = os.path.join(state, "run", "ipam", "networks", network, ip)
    return open(path, newline="").read().split("\r\n") if os.path.exists(path) else None


def digest(c):
    """The SHA-1 of a config's ipam object, compact with its keys sorted, as a record keeps it."""
    return hashlib.sha1(json.dumps(c["ipam"], sort_keys=True, separators=(",", ":")).encode()).hexdigest()


@test
def two_networks_on_one_node_file():
    """vpc-eni: two networks naming one node file (their names and dataDirs apart) never get one address; one's ADD, GC and DEL leave the other's reservation, route, rules and veth"""
    with node_and_data(set_up=True) as (state, data):
        plugin = Plugin(os.path.join(BIN, "vpc-eni"))
        with netns("node") as node, netns("pod") as pa, netns("pod") as pb, netns("pod") as pc:
            path = write_node_file(state, node_file(os.path.join(state, "run")))
            na, nb = conf(path, name="net-a"), conf(path, name="net-b")
            na["ipam"]["dataDir"], nb["ipam"]["dataDir"] = os.path.join(data, "a"), os.path.join(data, "b")
            ip_a = "10.80.2.20"  # ENI 1: rules 512 and 1536
            plugin.run("ADD", na, host_ns=node, netns=ns_path(pa), container_id="ca", args=pod_args("a", ip_a)).ok()

            def a_intact(when):
                routes, rules, links = host_state(node)
                check(f"{ip_a} dev {veth_name('a')} scope link" in routes, f"{when}: {routes}")
                for want in (f"512:\tfrom all to {ip_a} lookup main", f"1536:\tfrom {ip_a} lookup 2"):
                    check(want in rules, f"{when}: {want!r} in {rules}")
                check(veth_name("a") in links and ip_a in held(state), f"{when}: {links} {held(state)}")
                eq(record(state, "net-a", ip_a), ["ca", "eth0", digest(na), "default"], when)
                plugin.run("CHECK", dict(na, prevResult=a), host_ns=node, netns=ns_path(pa), container_id="ca",
                           args=pod_args("a")).ok()

            a = plugin.run("ADD", dict(na, cniVersion="1.0.0"), host_ns=node, netns=ns_path(pc), container_id="probe",
                           args=pod_args("probe", ip_a)).error()  # the address is taken, in the one store
            check(ip_a in a["msg"], a)
            a = {"cniVersion": "1.0.0", "ips": [{"address": f"{ip_a}/32", "gateway": "169.254.1.1", "interface": 1}]}
            a_intact("after the same network's refused ADD")
            # Network B asks for A's address, then gets a free one; its dataDir holds nothing.
            err = plugin.run("ADD", nb, host_ns=node, netns=ns_path(pb), container_id="cb", args=pod_args("b", ip_a)).error()
            check(ip_a in err["msg"], err)
            a_intact("after B's ADD asking for A's address")
            b = plugin.run("ADD", nb, host_ns=node, netns=ns_path(pb), container_id="cb", args=pod_args("b")).ok().json()
            ip_b = b["ips"][0]["address"].split("/")[0]
            eq(ip_b, "10.80.2.21")  # the one after A's, in the one store's round-robin order
            eq(held(state), sorted([ip_a, ip_b]))
            eq(record(state, "net-b", ip_b), ["cb", "eth0", digest(nb), "default"])
            eq(record(state, "net-b", ip_a), None)
            check(not os.path.exists(os.path.join(data, "a")) and not os.path.exists(os.path.join(data, "b")), os.listdir(data))
            a_intact("after B's ADD")
            # B's GC, none of its attachments valid: B's rules and reservation go, none of A's.
            gc = dict(nb, cniVersion="1.1.0")
            gc["cni.dev/valid-attachments"] = []
            plugin.run("GC", gc, host_ns=node).ok()
            rules = sh("ip", "-n", node, "rule").stdout
            check(ip_b not in rules, rules)
            eq(held(state), [ip_a])
            a_intact("after B's GC")
            # B's DEL of A's container, interface and pod (a runtime's DEL after B's ADD failed for them).
            plugin.run("DEL", nb, host_ns=node, container_id="ca", args=pod_args("a")).ok()
            a_intact("after B's DEL of A's attachment")
            # A config of A's name with another ipam object (a tenant's, say): its GC with no valid
            # attachment leaves A's address, record, rules and veth, with a warning.
            same_name = dict(na, cniVersion="1.1.0", ipam=dict(na["ipam"], dataDir=os.path.join(data, "elsewhere")))
            same_name["cni.dev/valid-attachments"] = []
            out = plugin.run("GC", same_name, host_ns=node).ok()
            check('of network "net-a" were given under another ipam config of that name' in out.err, out)
            a_intact("after the GC of another config named net-a")
            # A's GC keeps what is valid; A's DEL removes A's own.
            gc = dict(na, cniVersion="1.1.0")
            gc["cni.dev/valid-attachments"] = [{"containerID": "ca", "ifname": "eth0"}]
            plugin.run("GC", gc, host_ns=node).ok()
            a_intact("after A's GC")
            plugin.run("DEL", na, host_ns=node, netns=ns_path(pa), container_id="ca", args=pod_args("a")).ok()
            routes, rules, links = host_state(node)
            check(ip_a not in routes and ip_a not in rules and veth_name("a") not in links, (routes, rules, links))
            eq(held(state), [])
            eq(record(state, "net-a", ip_a), None)
            eq(os.listdir(os.path.join(state, "run", "ipam", "networks")), [])  # each network's folder went with its last address


@test
def add_leaves_an_address_routed_elsewhere():
    """vpc-eni ADD of an address the node routes over another link is refused, and the other link's route and rules stay; a rule of vpc-eni's shape already there is kept, once"""
    with node_and_data(set_up=True) as (state, data):
        plugin = Plugin(os.path.join(BIN, "vpc-eni"))
        with netns("node") as node, netns("pod") as pod:
            c = conf(write_node_file(state, node_file(os.path.join(state, "run"))))
            add_foreign(node, "metric", "100")
            before = host_state(node)
            err = plugin.run("ADD", c, host_ns=node, netns=ns_path(pod), container_id="c", args=pod_args("c", FOREIGN)).error()
            check(f"the node already routes {FOREIGN} over another link" in err["msg"] and "sxother" not in err["msg"], err)
            eq(host_state(node), before)
            eq(held(state), [])
            # A rule "to 10.80.2.20 lookup main" at 512 is there already: the ADD keeps it, adds none.
            sh("ip", "-n", node, "rule", "add", "to", "10.80.2.20", "lookup", "main", "pref", "512")
            plugin.run("ADD", c, host_ns=node, netns=ns_path(pod), container_id="c", args=pod_args("c", "10.80.2.20")).ok()
            rules = sh("ip", "-n", node, "rule").stdout
            eq(rules.count("512:\tfrom all to 10.80.2.20 lookup main"), 1, rules)
            plugin.run("DEL", c, host_ns=node, netns=ns_path(pod), container_id="c", args=pod_args("c")).ok()
            eq(host_state(node), before)


@test
def add_waits_for_node_setup():
    """vpc-eni ADD on a node not set up since boot (no record in stateDir, which a reboot empties) is refused with code 11, try again later, naming the record, and changes nothing; STATUS says 50 with the same text; once the record is there it works (fails before the fix: the pod was added, routed through ENI tables not there yet)"""
    with node_and_data() as (state, data):
        plugin = Plugin(os.path.join(BIN, "vpc-eni"))
        with netns("node") as node, netns("pod") as ns:
            c = conf(write_node_file(state, node_file(os.path.join(state, "run"))))
            before = host_state(node)
            record = os.path.join(state, "run", "node-backup.json")
            for _ in range(2):  # no stateDir, then a stateDir without the record
                err = plugin.run("ADD", c, host_ns=node, netns=ns_path(ns), container_id="early", args=pod_args("early")).error()
                eq((err["code"], err["msg"]),
                   (11, f"vpc-eni: the node is not set up: {record}, node-setup's record, is missing (node-setup has not run "
                        "since boot, or node-teardown ran since): try again once it has"))
                eq(host_state(node), before)
                eq(held(state), [])
                status = plugin.run("STATUS", dict(c, cniVersion="1.1.0"), host_ns=node).error()
                eq((status["code"], status["msg"]), (50, err["msg"]), "STATUS: not ready before node-setup")
                os.makedirs(os.path.dirname(record), mode=0o700, exist_ok=True)
            pretend_set_up(os.path.dirname(record))
            plugin.run("STATUS", dict(c, cniVersion="1.1.0"), host_ns=node).ok()
            plugin.run("ADD", c, host_ns=node, netns=ns_path(ns), container_id="early", args=pod_args("early")).ok()
            plugin.run("DEL", c, host_ns=node, netns=ns_path(ns), container_id="early", args=pod_args("early")).ok()
            eq(held(state), [])


@test
def del_without_prev_result_or_namespace():
    """vpc-eni DEL with neither prevResult nor a namespace removes the pod's rules 512 and 1536; one cut short before the release is finished by the next"""
    with node_and_data(set_up=True) as (state, data):
        plugin = Plugin(os.path.join(BIN, "vpc-eni"))
        no_ipam = Plugin(os.path.join(BIN, "vpc-eni"), cni_path=tempfile.mkdtemp())  # vpc-eni-ipam cannot be found
        with netns("node") as node:
            c = conf(write_node_file(state, node_file(os.path.join(state, "run"))))
            for pod, ip in (("gone", "10.80.2.20"), ("cut", "10.80.2.21")):
                with netns("pod") as ns:
                    plugin.run("ADD", c, host_ns=node, netns=ns_path(ns), container_id=pod, args=pod_args(pod, ip)).ok()
            rules = sh("ip", "-n", node, "rule").stdout
            for ip in ("10.80.2.20", "10.80.2.21"):
                check(f"512:\tfrom all to {ip} lookup main" in rules and f"1536:\tfrom {ip} lookup 2" in rules, rules)
            # The namespaces are gone (their veths and routes with them); the runtime has no prevResult.
            plugin.run("DEL", c, host_ns=node, container_id="gone", args=pod_args("gone")).ok()
            rules = sh("ip", "-n", node, "rule").stdout
            check("10.80.2.20" not in rules, rules)
            check("10.80.2.20" not in held(state), "gone's address is still reserved")
            # A DEL that fails at the release has removed the host's rules first and keeps the
            # reservation, so the next DEL still knows the address and finishes.
            err = no_ipam.run("DEL", c, host_ns=node, container_id="cut", args=pod_args("cut")).error()
            check("vpc-eni-ipam" in err["msg"], err)
            rules = sh("ip", "-n", node, "rule").stdout
            check("10.80.2.21" not in rules, rules)
            check("10.80.2.21" in held(state), "the reservation went before the DEL finished")
            for _ in range(2):
                for pod in ("cut", "gone"):
                    plugin.run("DEL", c, host_ns=node, container_id=pod, args=pod_args(pod)).ok()
            eq(held(state), [])
            eq("eni" in sh("ip", "-n", node, "link").stdout, False)


@test
def del_dumps_the_rules_once():
    """vpc-eni DEL of a pod on ENI 1 (rules 512 and 1536) dumps the host's rules once and deletes both from that dump (fails before the fix: five dumps, each of every rule on the node)"""
    with node_and_data(set_up=True) as (state, data):
        plugin = Plugin(os.path.join(BIN, "vpc-eni"))
        with netns("node") as node, netns("pod") as ns:
            c = conf(write_node_file(state, node_file(os.path.join(state, "run"))))
            plugin.run("ADD", c, host_ns=node, netns=ns_path(ns), container_id="once", args=pod_args("once", "10.80.2.20")).ok()
            trace = os.path.join(data, "strace.log")
            plugin.run("DEL", c, host_ns=node, netns=ns_path(ns), container_id="once", args=pod_args("once"),
                       wrap=["strace", "-f", "-qq", "-e", "trace=sendto,sendmsg", "-o", trace], extra_env=UNDER_STRACE).ok()
            with open(trace) as f:
                sent = f.read()
            eq(sent.count("RTM_GETRULE"), 1, sent)
            check("10.80.2.20" not in sh("ip", "-n", node, "rule").stdout)
            eq(held(state), [])


@test
def del_after_a_device_number_change():
    """vpc-eni DEL removes the pod's rule 1536 from the table its ENI had at ADD when the ENI's device number changed since (table 2 then, 4 now), with no warning"""
    with node_and_data(set_up=True) as (state, data):
        plugin = Plugin(os.path.join(BIN, "vpc-eni"))
        with netns("node") as node, netns("pod") as ns:
            f = node_file(os.path.join(state, "run"))
            c = conf(write_node_file(state, f))
            plugin.run("ADD", c, host_ns=node, netns=ns_path(ns), container_id="moved", args=pod_args("moved", "10.80.2.20")).ok()
            check("1536:\tfrom 10.80.2.20 lookup 2" in sh("ip", "-n", node, "rule").stdout)
            f["enis"][1]["deviceNumber"] = 3  # detached and attached again at another index
            write_node_file(state, f)
            out = plugin.run("DEL", c, host_ns=node, netns=ns_path(ns), container_id="moved", args=pod_args("moved")).ok()
            check("is left" not in out.err, out)
            rules = sh("ip", "-n", node, "rule").stdout
            check("10.80.2.20" not in rules, rules)
            eq(held(state), [])


@test
def del_with_another_ipam_finds_the_state_through_node_file():
    """vpc-eni DEL with an ipam type other than vpc-eni-ipam succeeds with a warning: through nodeFile it removes the container's rules, its veth and the pod's end and releases its address; another sandbox's veth stays, and no IPAM runs"""
    with node_and_data(set_up=True) as (state, data):
        plugin = Plugin(os.path.join(BIN, "vpc-eni"))
        with netns("node") as node, netns("pod") as pod, netns("pod") as bare:
            c = conf(write_node_file(state, node_file(os.path.join(state, "run"))))
            plugin.run("ADD", c, host_ns=node, netns=ns_path(pod), container_id="live", args=pod_args("b", "10.80.2.20")).ok()
            before = host_state(node)
            other = dict(c, ipam={"type": "host-local", "subnet": "10.81.0.0/24", "dataDir": os.path.join(data, "hl")})
            # Another sandbox of the live pod: its veth (the same name) is not into this DEL's namespace.
            out = plugin.run("DEL", other, host_ns=node, netns=ns_path(bare), container_id="other", args=pod_args("b")).ok()
            check('ipam type "host-local" is not vpc-eni-ipam: DEL finds the container\'s addresses through nodeFile' in out.err, out)
            check(f"{veth_name('b')} is left as it is: it is not a veth to eth0 in the container's namespace" in out.err, out)
            eq(host_state(node), before)
            # A veth of pod c's name into c's namespace, and the pod's end: both go.
            sh("ip", "-n", node, "link", "add", veth_name("c"), "type", "veth", "peer", "name", "eth0", "netns", bare)
            plugin.run("DEL", other, host_ns=node, netns=ns_path(bare), container_id="c", args=pod_args("c")).ok()
            eq(host_state(node), before)
            eq(sh("ip", "-n", bare, "link", "show", "eth0", check_rc=False).returncode != 0, True)
            plugin.run("DEL", other, host_ns=node, netns=ns_path(bare), container_id="c", args=pod_args("c")).ok()
            # The live pod's DEL with the edited config: its rules, route and veth go and its address is released.
            plugin.run("DEL", other, host_ns=node, netns=ns_path(pod), container_id="live", args=pod_args("b")).ok()
            routes, rules, links = host_state(node)
            check("10.80.2.20" not in routes and "10.80.2.20" not in rules and veth_name("b") not in links, (routes, rules, links))
            eq(held(state), [])
            eq(record(state, "vpc-test", "10.80.2.20"), None)
            check(not os.path.exists(os.path.join(data, "hl")), "host-local ran")


def link_index(ns, name):
    return json.loads(sh("ip", "-n", ns, "-j", "link", "show", name).stdout)[0]["ifindex"]


@test
def add_and_del_act_only_on_a_veth_into_the_pod():
    """vpc-eni: a host link of the pod's veth name that is not a veth to CNI_IFNAME in the pod's namespace (both ends on the host, another pod's, or the same pod's other attachment's) stays: ADD refuses, DEL warns; one to the pod's own interface is replaced; vethPrefix must be the node file's (the second attachment's part fails before the fix: its DEL deleted the first's veth)"""
    with node_and_data(set_up=True) as (state, data):
        plugin = Plugin(os.path.join(BIN, "vpc-eni"))
        with netns("node") as node, netns("pod") as pod, netns("pod") as other:
            c = conf(write_node_file(state, node_file(os.path.join(state, "run"))))
            name = veth_name("v")
            run = functools.partial(plugin.run, host_ns=node, netns=ns_path(pod), container_id="v", args=pod_args("v"))
            for peer in (["sxpeer0"], ["eth0", "netns", other]):
                sh("ip", "-n", node, "link", "add", name, "type", "veth", "peer", "name", *peer)
                before = host_state(node)
                err = run("ADD", c).error()
                check(f"a link named {name} is on the host and is not a veth to eth0 in this container's namespace" in err["msg"], err)
                eq(host_state(node), before, f"ADD with {peer}")
                eq(held(state), [])
                out = run("DEL", c).ok()
                check(f"{name} is left as it is: it is not a veth to eth0 in the container's namespace" in out.err, out)
                eq(host_state(node), before, f"DEL with {peer}")
                eq(sh("ip", "-n", other, "link", "show", "eth0", check_rc=False).returncode, 0 if "netns" in peer else 1)
                sh("ip", "-n", node, "link", "del", name)
            # A leftover into the pod's own namespace (an earlier ADD's) is replaced.
            sh("ip", "-n", node, "link", "add", name, "type", "veth", "peer", "name", "eth0", "netns", pod)
            old = link_index(node, name)
            run("ADD", c).ok()
            check(link_index(node, name) != old and link_index(pod, "eth0") != 0)
            # A second attachment of the pod (net1): its veth would have the first's name, so its ADD
            # is refused and its DEL leaves the first's veth, with a warning.
            before = host_state(node)
            err = run("ADD", c, ifname="net1").error()
            check(f"a link named {name} is on the host and is not a veth to net1 in this container's namespace" in err["msg"], err)
            out = run("DEL", c, ifname="net1").ok()
            check(f"{name} is left as it is: it is not a veth to net1 in the container's namespace" in out.err, out)
            eq(host_state(node), before)
            eq(len(held(state)), 1)
            check("eth0" in sh("ip", "-n", pod, "link").stdout, "the first attachment's end")
            run("DEL", c).ok()
            check(name not in host_state(node)[2])
            eq(held(state), [])
            err = run("ADD", dict(c, vethPrefix="sx")).error()
            check('vpc-eni: vethPrefix "sx" is not the node file\'s ("eni"' in err["msg"], err)


@test
def node_file_and_ipam_node_file_are_one():
    """vpc-eni: a config whose nodeFile is not its ipam.nodeFile is refused, naming both, before anything changes"""
    with node_and_data(set_up=True) as (state, data):
        plugin = Plugin(os.path.join(BIN, "vpc-eni"))
        with netns("node") as node, netns("pod") as pod:
            path = write_node_file(state, node_file(os.path.join(state, "run")))
            other = write_node_file(state, node_file(os.path.join(state, "run")), name="other.json")
            before = host_state(node)
            for verb in ("ADD", "CHECK", "GC"):
                err = plugin.run(verb, dict(conf(path), cniVersion="1.1.0", nodeFile=other), host_ns=node, netns=ns_path(pod),
                                 args=pod_args("p")).error()
                eq(err["msg"], f'vpc-eni: nodeFile "{other}" is not ipam.nodeFile "{path}": both name the one node file', verb)
            eq(host_state(node), before)
            eq(held(state), [])


@test
def no_folders_but_add_s_and_caps():
    """vpc-eni: DEL, CHECK and GC of what holds nothing make no folder in ipamDir, and a network's folder goes with its last address; maxAddressesPerNamespace refuses the next pod of a namespace, naming the cap"""
    with node_and_data(set_up=True) as (state, data):
        plugin = Plugin(os.path.join(BIN, "vpc-eni"))
        with netns("node") as node, netns("pod") as pod, netns("pod") as second:
            path = write_node_file(state, node_file(os.path.join(state, "run"), maxAddressesPerNamespace=1))
            c, ipam = conf(path), os.path.join(state, "run", "ipam")
            prev = {"cniVersion": "1.0.0", "ips": [{"address": "10.80.2.20/32", "gateway": "169.254.1.1", "interface": 1}]}
            plugin.run("DEL", c, host_ns=node, netns=ns_path(pod), container_id="x", args=pod_args("x")).ok()
            plugin.run("CHECK", dict(c, prevResult=prev), host_ns=node, netns=ns_path(pod), container_id="x",
                       args=pod_args("x")).error()
            gc = dict(c, cniVersion="1.1.0")
            gc["cni.dev/valid-attachments"] = []
            plugin.run("GC", gc, host_ns=node).ok()
            check(not os.path.exists(ipam), os.listdir(os.path.join(state, "run")) if os.path.exists(os.path.join(state, "run")) else None)
            plugin.run("ADD", c, host_ns=node, netns=ns_path(pod), container_id="p", args=pod_args("p")).ok()
            before = host_state(node)
            err = plugin.run("ADD", c, host_ns=node, netns=ns_path(second), container_id="q", args=pod_args("q")).error()
            check('namespace "default" holds 1 of the node\'s addresses, as many as maxAddressesPerNamespace (1' in err["msg"], err)
            eq(host_state(node), before)
            eq(len(held(state)), 1)
            x = conf(path, name="net-x")
            plugin.run("DEL", x, host_ns=node, container_id="x", args=pod_args("x")).ok()
            plugin.run("GC", dict(gc, name="net-x"), host_ns=node).ok()
            eq(os.listdir(os.path.join(ipam, "networks")), ["vpc-test"])
            plugin.run("DEL", c, host_ns=node, netns=ns_path(pod), container_id="p", args=pod_args("p")).ok()
            eq(held(state), [])
            eq(os.listdir(os.path.join(ipam, "networks")), [])


@test
def node_file_errors_show_no_content():
    """vpc-eni: a node file that is not valid is named with the position of its fault, never its bytes (ADD, vpc-eni-ipam, node-setup)"""
    enis = '"enis": [{"interface": "eth0", "deviceNumber": 0, "subnet": "s3cr3t", "primaryIp": "10.80.1.10"}]'
    cases = [("tQZ%$&", "not valid JSON at line 1, column 2 (byte 1)", ["QZ%$&", "'Q'"]),
             ('{\n  "mtu": 9001,\n  "primaryInterface": Xs3cr3t\n}', "not valid JSON at line 3, column 23 (byte 39)",
              ["Xs3cr3t", "'X'"]),
             ('{"primaryInterface": "eth0", "vpcCidrs": ["10.80.0.0/16"], ' + enis + "}", "enis[0].subnet: not a valid string",
              ["s3cr3t"])]
    with node_and_data(set_up=True) as (state, data), netns("node") as node, netns("pod") as pod:
        for content, where, secrets in cases:
            path = write_node_file(state, content, mode=0o600)  # root's alone
            c = conf(path)
            said = [Plugin(os.path.join(BIN, "vpc-eni")).run("ADD", c, host_ns=node, netns=ns_path(pod),
                                                             args=pod_args("a")).error()["msg"],
                    Plugin(os.path.join(BIN, "vpc-eni-ipam")).run("ADD", c, netns=ns_path(pod)).error()["msg"],
                    sh("ip", "netns", "exec", node, os.path.join(BIN, "vpc-eni"), "node-setup", path, check_rc=False).stderr]
            for msg in said:
                check(f"node file {path}: {where}" in msg, f"{where!r} in {msg!r}")
                for secret in secrets:
                    check(secret not in msg, f"{secret!r} from the file in {msg!r}")
        check("eni" not in sh("ip", "-n", node, "link").stdout)


@test
def exhaustion_is_one_short_line():
    """vpc-eni-ipam: with every node address reserved, ADD and STATUS say "no free address on ENIs eth0, eth1 (4 addresses, all reserved)", not every one-address range"""
    with node_and_data(set_up=True) as (state, data):
        ipam = Plugin(os.path.join(BIN, "vpc-eni-ipam"))
        c = dict(conf(write_node_file(state, node_file(os.path.join(state, "run")))), cniVersion="1.1.0")
        for i in range(4):
            ipam.run("ADD", c, netns="/x", container_id=f"c{i}", args=pod_args(f"p{i}")).ok()
            if i == 0:  # a requested address that is taken: the set named short too
                err = ipam.run("ADD", c, netns="/x", container_id="r", args=pod_args("r", "10.80.1.20")).error()
                eq(err["msg"], "failed to allocate for range 0: requested IP address 10.80.1.20 is not available in range set "
                               "the node's addresses (ENIs eth0, eth1)")
        want = "vpc-eni-ipam: no free address on ENIs eth0, eth1 (4 addresses, all reserved)"
        err = ipam.run("ADD", c, netns="/x", container_id="c4", args=pod_args("p4")).error()
        eq(err["msg"], want)
        err = ipam.run("STATUS", c).error()
        eq((err["code"], err["msg"]), (50, want))
        for i in range(4):
            ipam.run("DEL", c, netns="/x", container_id=f"c{i}", args=pod_args(f"p{i}")).ok()
        ipam.run("STATUS", c).ok()
        eq(held(state), [])


def unusable(path):
    return (f'vpc-eni: nodeFile "{path}" is not a usable node file: a network config may name only a regular file under '
            "/etc/cni/ that only root may write, in /etc/cni/vpc-eni/ or readable by all (docs/vpc-eni.md)")


@test
def node_file_only_roots_under_etc_cni():
    """vpc-eni: a network config's nodeFile is read only when it is root's own file in a folder of root's under /etc/cni, in /etc/cni/vpc-eni or readable by all; every refusal is the same"""
    with node_and_data(set_up=True) as (state, data), netns("node") as node, netns("pod") as pod:
        valid = node_file(os.path.join(state, "run"))
        good = write_node_file(state, valid, mode=0o600)  # in /etc/cni/vpc-eni: root's alone is enough
        outside = write_node_file(tempfile.mkdtemp(), valid)
        os.symlink(outside, os.path.join(state, "link.json"))
        os.chown(write_node_file(state, valid, "nobody.json"), 65534, 65534)
        write_node_file(state, valid, "shared.json", mode=0o664)
        os.mkdir(os.path.join(state, "folder.json"))
        os.mkfifo(os.path.join(state, "fifo.json"))
        # Elsewhere under /etc/cni: only a file others may read (a tenant probing root's files
        # there, such as a kubeconfig of mode 0600, learns nothing), in a folder others cannot
        # change, reached through no link.
        other = tempfile.mkdtemp(dir=ETC_CNI)
        os.chmod(other, 0o755)
        readable = write_node_file(other, valid, "readable.json", mode=0o644)
        write_node_file(other, valid, "kubeconfig", mode=0o600)
        open_folder = tempfile.mkdtemp(dir=ETC_CNI)
        os.chmod(open_folder, 0o777)
        write_node_file(open_folder, valid, mode=0o644)
        os.symlink(other, os.path.join(ETC_CNI, "linked"))
        dotdot = os.path.join(state, "..", "..", "..", os.path.relpath(outside, "/"))  # /etc/cni/vpc-eni/x/../../.. is /
        refused = [outside, dotdot, os.path.join(state, "link.json"), os.path.join(state, "nobody.json"),
                   os.path.join(state, "shared.json"), os.path.join(state, "folder.json"), os.path.join(state, "fifo.json"),
                   os.path.join(state, "missing.json"), os.path.join(other, "kubeconfig"), os.path.join(other, "missing"),
                   os.path.join(open_folder, "node.json"), os.path.join(ETC_CNI, "linked", "readable.json"),
                   os.path.join(ETC_CNI, "missing-folder", "node.json")]
        for path in refused:
            for applet in ("vpc-eni", "vpc-eni-ipam"):
                err = Plugin(os.path.join(BIN, applet)).run("ADD", conf(path), host_ns=node, netns=ns_path(pod),
                                                            args=pod_args("a")).error()
                eq(err["msg"], unusable(path), f"{applet} {path}")
        check("eni" not in sh("ip", "-n", node, "link").stdout)
        eq(held(state), [])
        plugin = Plugin(os.path.join(BIN, "vpc-eni"))
        for path in (good, readable):
            plugin.run("ADD", conf(path), host_ns=node, netns=ns_path(pod), args=pod_args("a")).ok()
            plugin.run("DEL", conf(path), host_ns=node, netns=ns_path(pod), args=pod_args("a")).ok()
        for d in (other, open_folder):
            shutil.rmtree(d)
        os.unlink(os.path.join(ETC_CNI, "linked"))


def tree(root):
    """Every path under `root` with its content (folders as None), for a before-and-after comparison."""
    out = {}
    for d, dirs, files in os.walk(root):
        for n in dirs:
            out[os.path.relpath(os.path.join(d, n), root)] = None
        for n in files:
            with open(os.path.join(d, n), "rb") as f:
                out[os.path.relpath(os.path.join(d, n), root)] = f.read()
    return out


@test
def host_local_never_writes_in_ipam_dir():
    """vpc-eni-ipam: its ipamDir is marked as the node's (by node-setup and by its ADD), and a host-local dataDir a tenant points at it, into it, through a link to it or with ".." is refused with code 7 naming ipam.dataDir and its value; the store, its records and the namespaces' counts are untouched, and a dataDir of the tenant's own still works (fails before the fix: host-local reserved the ENI's addresses in the node's store)"""
    with node_and_data() as (state, data), netns("vpc") as vpc, netns("node") as node:
        build_vpc(vpc, node)
        path = write_node_file(state, node_file(os.path.join(state, "run")))
        ipam_dir = os.path.join(state, "run", "ipam")
        sh("ip", "netns", "exec", node, os.path.join(BIN, "vpc-eni"), "node-setup", path)
        Plugin(os.path.join(BIN, "vpc-eni-ipam")).run("ADD", conf(path), netns="/x", container_id="victim", args=pod_args("victim")).ok()
        before = tree(os.path.join(state, "run"))
        link = os.path.join(data, "link")
        os.symlink(ipam_dir, link)
        hl = Plugin(os.path.join(BIN, "host-local"))

        def host_local(data_dir, name="vpc-test"):
            rng = {"subnet": "10.80.2.0/24", "rangeStart": "10.80.2.20", "rangeEnd": "10.80.2.21"}
            return {"cniVersion": "1.0.0", "name": name, "ipam": {"type": "host-local", "dataDir": data_dir, "ranges": [[rng]]}}
        attacks = [(ipam_dir, "addresses"), (os.path.join(ipam_dir, "networks"), "vpc-test"),
                   (os.path.join(ipam_dir, "namespaces"), "default"), (os.path.join(ipam_dir, "new", "deeper"), "x"),
                   (link, "addresses"), (os.path.join(link, "networks"), "vpc-test"), (os.path.join(state, "run"), "ipam")]
        for data_dir, name in attacks:
            err = hl.run("ADD", host_local(data_dir, name), netns="/x", container_id="tenant").error()
            eq(err["code"], 7, data_dir)
            check(f'host-local: ipam.dataDir "{data_dir}" lies in ' in err["msg"] and "no network config may choose" in err["msg"], err)
            eq(err.get("details"), data_dir)
        dotdot = os.path.join(data, "gone", "..", "..", os.path.relpath(ipam_dir, os.path.dirname(data)))
        err = hl.run("ADD", host_local(dotdot, "addresses"), netns="/x", container_id="tenant").error()
        eq((err["code"], err["msg"]), (7, f'host-local: ipam.dataDir "{dotdot}" has "." or ".." in it'))
        eq(tree(os.path.join(state, "run")), before)
        check(not os.path.exists(os.path.join(data, "gone")), "nothing made on the way")
        own = os.path.join(data, "pools")
        hl.run("ADD", host_local(own), netns="/x", container_id="tenant").ok()
        eq(sorted(f for f in os.listdir(os.path.join(own, "vpc-test")) if f[0].isdigit()), ["10.80.2.20"])
        for marked in (ipam_dir, os.path.join(state, "run")):  # by node-setup, ipamDir by vpc-eni-ipam's calls too
            with open(os.path.join(marked, ".cni-all-node-folder")) as f:
                check(f.read().startswith(marked + ", vpc-eni"), marked)


if __name__ == "__main__":
    private_etc_cni()
    run_all(cleanup=[BIN, *VARIANTS.values()])
