#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Hostile input for every applet: each applet's working config (a "seed") is mutated one key
at a time - the key removed, or its value replaced by null, a bool, zero, negative, huge and
fractional numbers, empty, long and odd strings, arrays and objects - and so are CNI_IFNAME,
CNI_ARGS and CNI_CONTAINERID. Each variant runs ADD, CHECK (after a successful ADD), DEL,
STATUS and GC in a throwaway host namespace against a throwaway container namespace. Every
call must end with exit code 0, or exit code 1 and a CNI error (an integer code, a message) on
stdout - never a signal, a hang or a C++ exception text - and a CHECK right after a successful
ADD must pass (but see check_may_fail). After a failed ADD, and after a
successful ADD's DEL, nothing of the attachment may remain: no extra link, address, route or
rule (any table) in the container, no veth, macvlan, tap or ifb left on the host, no
iptables/nftables rule naming the container or a test address, no host-local allocation, saved
state or flannel file (also under /var/lib/cni and /run/cni, private tmpfs mounts for the run). One TAP test per applet; the
failing variants are listed. CNI_FUZZ_SAMPLE=N tries N variants per applet (default 16; 0: all),
drawn with the seed CNI_FUZZ_SEED (default: the day's number, so each day's runs try others; the
output names it, and setting it repeats a run's draw). Beyond those, every applet gets MULTI_KEY
(CNI_FUZZ_MULTI, default 2) variants that mutate two or
three keys at once, and every key naming a file or folder (dataDir, subnetFile, resolvConf,
daemonSocketPath) is set in turn to a hostile path: a link to a folder elsewhere, /proc, /sys, a
file where a folder belongs, a path below a file, a folder owned by someone else, /dev/zero and
a FIFO. A link is followed as the reference follows it (an operator may link a state folder
elsewhere), so the folder behind it is a state folder too: after DEL it may keep only what an
idle state folder keeps (folders, lock files), and the file already there is untouched."""
import copy
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import BIN, check, netns, ns_path, run_all, sh, test  # noqa: E402

SAMPLE = int(os.environ.get("CNI_FUZZ_SAMPLE", "16"))
# Variants per applet that mutate several keys at once (CNI_FUZZ_MULTI; the VM's: 1).
MULTI_KEY = int(os.environ.get("CNI_FUZZ_MULTI", "2"))
# The draw of the sampled variants: a day's runs try the same ones, the next day's others.
SEED = int(os.environ.get("CNI_FUZZ_SEED", str(int(time.time()) // 86400)))
CONTAINER_ID = "fuzz" + uuid.uuid4().hex[:8]  # per run: tuning and others keep state per container ID
CALL_TIMEOUT = 20  # a plugin call that takes longer is a hang

# Values every key is replaced with, in turn. No real device names (the plugin runs in a
# throwaway namespace, but a name like eth0 would only test the namespace, not the plugin).
HOSTILE = [None, True, False, 0, -1, 1, 4096, 65536, 2**31, 2**63, 2**64, -2**63 - 1, 1.5, -0.0, 1e308,
           "", " ", "x" * 300, "-1", "0", "lo", "a/b", "../..", "10.1.2.3/33", "::1/200", "é\u0000",
           [], {}, [None], [{}], {"a": []}, ["x"], [1]]
IFNAMES = ["", "a" * 16, "eth0/x", ".", "..", "lo", "eth 0", "é"]
CNI_ARGS = ["IP=bogus", "IgnoreUnknown=1;IP=10.99.0.300", "=;=;", "K8S_POD_NAME", "IgnoreUnknown=true;MAC=zz",
            "IgnoreUnknown=1;IP=10.99.0.5,10.99.0.6", "a=b=c;" * 50]
CONTAINER_IDS = ["", "a/b", "x" * 300, "é", "-"]
# Keys naming files: left out of the value mutations (they would write outside the test's
# directories) and given hostile_paths() instead.
PATH_KEYS = {"dataDir", "subnetFile", "daemonSocketPath", "socketPath", "resolvConf"}
# Every address the seeds use (pods, prevResults, flannel's network) starts so.
TEST_ADDRESSES = "10.99."
# Per-attachment iptables chains (ipMasq, portmap DNAT/SNAT) when left behind.
PER_ATTACHMENT_CHAIN = re.compile(r"^:(CNI-[0-9a-f]{24}|CNI-DN-\w+|CNI-SN-\w+)\b", re.M)


def prev_result(version="1.0.0"):
    return {"cniVersion": version,
            "interfaces": [{"name": "eth0", "sandbox": "@NETNS@"}],
            "ips": [{"address": "10.99.7.2/24", "gateway": "10.99.7.1", "interface": 0}],
            "routes": [{"dst": "0.0.0.0/0"}]}


def host_local(data):
    return {"type": "host-local", "dataDir": data, "ranges": [[{"subnet": "10.99.7.0/24"}]],
            "routes": [{"dst": "0.0.0.0/0"}]}


def seeds(data):
    """(applet, config, needs an eth0 in the container) for every applet the host kernel runs;
    vlan, ipvlan, dummy and vrf fail at link creation here, which fuzzes their failure paths."""
    static_ipam = {"type": "static", "addresses": [{"address": "10.99.7.5/24", "gateway": "10.99.7.1"}],
                   "routes": [{"dst": "0.0.0.0/0"}], "dns": {"nameservers": ["10.99.7.1"]}}
    base = {"cniVersion": "1.0.0", "name": "fuzznet"}
    return [
        ("bridge", dict(base, type="bridge", bridge="fzbr0", isGateway=True, ipMasq=True, hairpinMode=True,
                        mtu=1400, ipam=host_local(data)), False),
        ("ptp", dict(base, type="ptp", ipMasq=True, mtu=1400, ipam=host_local(data)), False),
        ("macvlan", dict(base, type="macvlan", master="fzm0", mode="bridge", ipam=static_ipam), False),
        ("ipvlan", dict(base, type="ipvlan", master="fzm0", mode="l2", ipam=static_ipam), False),
        ("vlan", dict(base, type="vlan", master="fzm0", vlanId=100, ipam=static_ipam), False),
        ("host-device", dict(base, type="host-device", device="fzd0", ipam=static_ipam), False),
        ("tap", dict(base, type="tap", multiQueue=True, mtu=1400, ipam=host_local(data)), False),
        ("dummy", dict(base, type="dummy", ipam=static_ipam), False),
        ("loopback", dict(base, type="loopback"), False),
        ("host-local", dict(base, type="bridge", ipam=dict(host_local(data), rangeStart="10.99.7.10",
                                                           resolvConf=data + "/resolv.conf")), False),
        ("static", dict(base, type="static", ipam=static_ipam), False),
        ("dhcp", dict(base, type="macvlan", ipam={"type": "dhcp", "daemonSocketPath": data + "/dhcp.sock"}), False),
        ("flannel", dict(base, type="flannel", subnetFile=data + "/subnet.env", dataDir=data + "/flannel",
                         delegate={"bridge": "fzbr1", "isDefaultGateway": True}), False),
        ("portmap", dict(base, type="portmap", capabilities={"portMappings": True}, snat=True,
                         runtimeConfig={"portMappings": [{"hostPort": 18080, "containerPort": 80, "protocol": "tcp"}]},
                         prevResult=prev_result()), True),
        ("firewall", dict(base, type="firewall", backend="iptables", prevResult=prev_result()), True),
        ("firewall-nftables", dict(base, type="firewall", backend="nftables", prevResult=prev_result()), True),
        ("tuning", dict(base, type="tuning", mtu=1300, promisc=True, sysctl={"net.ipv4.conf.eth0.rp_filter": "2"},
                        dataDir=data + "/tuning", prevResult=prev_result()), True),
        ("bandwidth", dict(base, type="bandwidth", ingressRate=1000000, ingressBurst=100000,
                           egressRate=1000000, egressBurst=100000, prevResult=prev_result()), True),
        ("sbr", dict(base, type="sbr", prevResult=prev_result()), True),
        ("vrf", dict(base, type="vrf", vrfname="fzvrf", prevResult=prev_result()), True),
    ]


def key_paths(value, prefix=()):
    """Every key path and list index in a config, outermost first."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
    for k, v in items:
        if k in PATH_KEYS:
            continue
        yield prefix + (k,)
        yield from key_paths(v, prefix + (k,))


def path_keys(value, prefix=()):
    """Every key path to a key naming a file or folder."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
    for k, v in items:
        if k in PATH_KEYS:
            yield prefix + (k,)
        else:
            yield from path_keys(v, prefix + (k,))


def mutated(conf, *changes):
    """conf with each (path, value, remove) applied in turn; a change whose path an earlier one
    removed or replaced is left out."""
    c = copy.deepcopy(conf)
    for path, value, remove in changes:
        node = c
        try:
            for k in path[:-1]:
                node = node[k]
            if remove:
                del node[path[-1]]
            else:
                node[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue
    return c


def label_of(path, value, remove):
    name = ".".join(map(str, path))
    return f"{name} removed" if remove else f"{name}={json.dumps(value)[:40]}"


def variants(conf, sample, hostile_paths=(), multi=0, seed=None):
    """(label, config, env overrides) for one seed: every key removed or replaced, then the
    environment mutations, `sample` of them (all when 0); then `multi` variants changing two or
    three keys at once; then every path key set to each hostile path. The same `seed`, the same
    variants; without one, always the same (fuzz-reference's, whose differences from Go's are
    each accounted for)."""
    changes = []
    for path in key_paths(conf):
        changes.append((path, None, True))
        changes += [(path, v, False) for v in HOSTILE]
    single = [(label_of(*ch), mutated(conf, ch), {}) for ch in changes]
    single += [(f"CNI_IFNAME={n!r}", conf, {"CNI_IFNAME": n}) for n in IFNAMES]
    single += [(f"CNI_ARGS={a[:40]!r}", conf, {"CNI_ARGS": a}) for a in CNI_ARGS]
    single += [(f"CNI_CONTAINERID={c[:40]!r}", conf, {"CNI_CONTAINERID": c}) for c in CONTAINER_IDS]
    rng = random.Random(len(single) if seed is None else f"{seed}/{len(single)}")
    if sample and len(single) > sample:
        single = rng.sample(single, sample)
    combined = []
    for _ in range(multi if len(changes) > 1 else 0):
        picked = rng.sample(changes, min(len(changes), rng.choice((2, 3))))
        combined.append((" & ".join(label_of(*ch) for ch in picked), mutated(conf, *picked), {}))
    paths = [(label_of(path, value, False), mutated(conf, (path, value, False)), {})
             for path in path_keys(conf) for value in hostile_paths]
    return single + combined + paths


def hostile_paths(data, elsewhere):
    """Paths a file or folder key is set to (made under `data`): a link to the folder
    `elsewhere`, /proc, /sys, a regular file, a path below it, a folder owned by nobody (mode
    0700), /dev/zero and a FIFO."""
    os.symlink(elsewhere, os.path.join(data, "link-elsewhere"))
    with open(os.path.join(data, "a-file"), "w") as f:
        f.write("not a folder\n")
    nobody = os.path.join(data, "nobody")
    os.mkdir(nobody, 0o700)
    os.chown(nobody, 65534, 65534)
    os.mkfifo(os.path.join(data, "fifo"))
    return [os.path.join(data, "link-elsewhere"), "/proc", "/sys", os.path.join(data, "a-file"),
            os.path.join(data, "a-file", "below"), nobody, "/dev/zero", os.path.join(data, "fifo")]


def idle_state_file(name, folder):
    """Whether a file is one a state folder keeps with no attachment in it (bridge's lock, and its
    note of a bridge an ADD made, which stays as the bridge does)."""
    return (name in ("subnet.env", "lock", ".cni-all-index") or name.startswith("last_reserved_ip")
            or os.path.basename(folder) == ".cni-all-index.d"
            or (folder == "/run/cni/bridge" and name.endswith((".lock", ".made"))))


def folder_state(top):
    """The files under `top` an idle state folder would not keep, with their contents."""
    out = []
    for d, _, names in os.walk(top):
        for n in names:
            if not idle_state_file(n, d):
                with open(os.path.join(d, n), "rb") as f:
                    out.append((os.path.relpath(os.path.join(d, n), top), f.read()))
    return sorted(out)


def check_may_fail(why, add_output):
    """A CHECK right after a successful ADD may fail, in Go too, where the version does not allow
    CHECK, where the ADD passed a prevResult's left-out address on as "<nil>" (no plugin parses
    it), where tuning wrote an empty sysctl value (the kernel keeps its own), and where static's
    top-level "type" is not a string (its CHECK reads the config as types.NetConf, its ADD not)."""
    return ("does not allow CHECK" in why or "<nil>" in str(json.loads(add_output))
            or re.search(r"Tuning configured value of \S+ is , current value", why) is not None
            or "Go struct field NetConf.type of type string" in why)


class Attachment:
    """One applet between a throwaway host and container namespace, called as a runtime would."""

    def __init__(self, bin_dir, applet, host, ctr, data):
        self.bin_dir, self.applet, self.host, self.ctr, self.data = bin_dir, applet, host, ctr, data

    def call(self, command, conf, env):
        """(True, stdout) on success, (False, message) on a well-formed CNI error, (None, what
        went wrong) on a crash, hang or malformed output."""
        full = {"CNI_COMMAND": command, "CNI_CONTAINERID": CONTAINER_ID, "CNI_NETNS": ns_path(self.ctr), "CNI_IFNAME": "eth0",
                "CNI_PATH": self.bin_dir, "PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin")}
        full.update(env)
        text = json.dumps(conf).replace("@NETNS@", ns_path(self.ctr))
        try:
            r = subprocess.run(["ip", "netns", "exec", self.host, os.path.join(self.bin_dir, self.applet)],
                               input=text.encode(), env=full, capture_output=True, timeout=CALL_TIMEOUT)
        except subprocess.TimeoutExpired:
            return None, f"{command} hung for {CALL_TIMEOUT} s"
        out, err = r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")
        if r.returncode < 0:
            return None, f"{command} killed by signal {-r.returncode}: {err[-300:]}"
        if "terminate called" in err or "Assertion" in err:
            return None, f"{command} aborted: {err[-300:]}"
        if r.returncode == 0:
            if out.strip():
                try:
                    json.loads(out)
                except ValueError:
                    return None, f"{command} succeeded with non-JSON stdout {out[:200]!r}"
            return True, out
        if r.returncode != 1:
            return None, f"{command} exit code {r.returncode}: {out[:200]!r}"
        try:
            e = json.loads(out)
        except ValueError:
            return None, f"{command} failed without a CNI error on stdout: {out[:200]!r} {err[:200]!r}"
        if not isinstance(e.get("code"), int) or e["code"] <= 0 or not isinstance(e.get("msg"), str) or not e["msg"]:
            return None, f"{command} error lacks a code or message: {out[:200]!r}"
        return False, e["msg"]

    def snapshot(self, container_id):
        """What an attachment may leave behind, normalised for comparison with the baseline
        (read by one shell in the host namespace: process starts are what is slow in the VM)."""
        c = self.ctr
        script = (f"ip -n {c} -o link | cut -d: -f2,3 | sed 's/ state.*//'; ip -n {c} -o addr | grep -v 'inet6 fe80'; "
                  f"ip -n {c} -4 route show table all; ip -n {c} -6 route show table all | grep -v '^fe80\\|^ff00\\|^multicast\\|^local\\|^anycast'; "
                  f"ip -n {c} rule; ip -n {c} -6 rule; echo @@; "
                  "ip -d -j link; echo @@; iptables-legacy-save; ip6tables-legacy-save; iptables-nft-save; nft list ruleset")
        ctr_state, links, rules = sh("ip", "netns", "exec", self.host, "sh", "-c", script, check_rc=False).stdout.split("@@\n")
        host_links = sorted(f"{k['ifname']}:{k.get('linkinfo', {}).get('info_kind', '')}" for k in json.loads(links))
        # iptables comments hold "id" (\"id\" once escaped), the nftables ipMasq ones "..., id: id".
        quoted = re.compile(rf'(?:"|id: ){re.escape(container_id)}\\?"')
        named = [line for line in rules.splitlines() if container_id and quoted.search(line)]
        chains = sorted(set(PER_ATTACHMENT_CHAIN.findall(rules)))
        addressed = sorted(line.strip() for line in rules.splitlines() if TEST_ADDRESSES in line)
        files = sorted(os.path.join(d, f) for top in (self.data, "/var/lib/cni", "/run/cni") for d, _, names in os.walk(top)
                       for f in names if not idle_state_file(f, d))
        return {"container": ctr_state, "host links": host_links, "rules naming the container": named,
                "per-attachment chains": chains,
                "rules naming a test address": addressed, "files": files}


def leftovers(before, after):
    """What changed; a new bridge (or flannel's) on the host is kept by design, as the reference
    keeps it."""
    problems = []
    for key in before:
        b, a = before[key], after[key]
        if key == "host links":
            a = [x for x in a if x not in b and not x.endswith(":bridge")]
            b = []
        if a != b:
            problems.append(f"{key}: {b!r} -> {a!r}")
    return problems


def prepare(host, ctr, data, needs_eth0):
    """The devices seeds refer to: fzm0 (a master), fzd0 (for host-device), the container's
    eth0 with the prevResult's address, and flannel's subnet file."""
    sh("ip", "-n", host, "link", "add", "fzm0", "type", "veth", "peer", "name", "fzm1")
    sh("ip", "-n", host, "link", "add", "fzd0", "type", "veth", "peer", "name", "fzd1")
    for dev in ("fzm0", "fzm1", "fzd1"):
        sh("ip", "-n", host, "link", "set", dev, "up")
    if needs_eth0:
        sh("ip", "-n", host, "link", "add", "fzc0", "type", "veth", "peer", "name", "eth0", "netns", ctr)
        sh("ip", "-n", ctr, "addr", "add", "10.99.7.2/24", "dev", "eth0")
        sh("ip", "-n", ctr, "link", "set", "eth0", "up")
        sh("ip", "-n", host, "link", "set", "fzc0", "up")
    sh("ip", "-n", ctr, "link", "set", "lo", "up")
    with open(os.path.join(data, "subnet.env"), "w") as f:
        f.write("FLANNEL_NETWORK=10.99.0.0/16\nFLANNEL_SUBNET=10.99.8.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n")
    with open(os.path.join(data, "resolv.conf"), "w") as f:
        f.write("nameserver 10.99.7.1\nsearch fuzz.test\n")


def fuzz(applet, bin_dir, sample, multi):
    data = tempfile.mkdtemp(prefix="cni-fuzz.")
    elsewhere = tempfile.mkdtemp(prefix="cni-fuzz-elsewhere.")
    try:
        with open(os.path.join(elsewhere, "keep"), "w") as f:
            f.write("the folder a hostile link points to\n")
        elsewhere_before = folder_state(elsewhere)
        _, conf, needs_eth0 = next(s for s in seeds(data) if s[0] == applet)
        with netns("fzh") as host, netns("fzc") as ctr:
            prepare(host, ctr, data, needs_eth0)
            hostile = hostile_paths(data, elsewhere)
            # The runtime picks the binary by the seed's type, whatever a variant's "type" says.
            att = Attachment(bin_dir, conf["type"], host, ctr, data)
            # The seed itself first: shared state it creates (a bridge, top-level chains) is
            # the baseline every variant is compared with.
            att.call("ADD", conf, {})
            att.call("DEL", conf, {})
            baseline = att.snapshot(CONTAINER_ID)
            failures = []
            tried = variants(conf, sample, hostile, multi, SEED)
            for label, c, env in tried:
                cid = env.get("CNI_CONTAINERID", CONTAINER_ID)
                added, msg = att.call("ADD", c, env)
                if added is None:
                    failures.append(f"{label}: {msg}")
                elif added and msg:
                    checked, why = att.call("CHECK", dict(c, prevResult=json.loads(msg)), env)
                    if checked is None:
                        failures.append(f"{label}: {why}")
                    elif not checked and not check_may_fail(why, msg):
                        failures.append(f"{label}: CHECK right after the ADD failed: {why}")
                deleted, msg = att.call("DEL", c, env)
                if deleted is None:
                    failures.append(f"{label}: {msg}")
                if not deleted:
                    # A DEL the config cannot even describe: clean up with the seed's config.
                    att.call("DEL", conf, {"CNI_CONTAINERID": cid} if cid else {})
                    if added:
                        failures.append(f"{label}: ADD succeeded but its DEL failed: {msg}")
                problems = leftovers(baseline, att.snapshot(cid or CONTAINER_ID))
                if folder_state(elsewhere) != elsewhere_before:
                    problems.append(f"the folder behind a link holds {[n for n, _ in folder_state(elsewhere)]!r}")
                    for d, _, names in os.walk(elsewhere):
                        for n in names:
                            if n != "keep" and not idle_state_file(n, d):
                                os.unlink(os.path.join(d, n))
                if problems:
                    failures.append(f"{label}: ADD {'ok' if added else 'failed'}, then DEL left " + "; ".join(problems))
                    att.call("DEL", conf, {})
                # The 1.1.0 verbs on the same variant; GC with no valid attachment may remove
                # what the seed left, so the baseline is taken again.
                later = dict(c, cniVersion="1.1.0") if c.get("cniVersion") == "1.0.0" else c
                for verb, vc in (("STATUS", later), ("GC", dict(later, **{"cni.dev/valid-attachments": []}))):
                    done, why = att.call(verb, vc, env)
                    if done is None:
                        failures.append(f"{label}: {why}")
                baseline = att.snapshot(CONTAINER_ID)
            print(f"# {applet}: {len(tried)} variants (CNI_FUZZ_SEED={SEED}), {len(failures)} failing", flush=True)
            check(not failures, f"{len(failures)} of {len(tried)} variants:\n" + "\n".join(failures[:40]))
    finally:
        shutil.rmtree(data, ignore_errors=True)
        shutil.rmtree(elsewhere, ignore_errors=True)


def register(applet, bin_dir, sample=SAMPLE, vm=False, multi=MULTI_KEY):
    def run():
        fuzz(applet, bin_dir, sample, multi)
    run.__name__ = "fuzz_" + applet.replace("-", "_")
    run.__doc__ = f"{applet}: every mutated key and environment variable gives a CNI error or a clean ADD/DEL"
    test(run, vm=vm)


if __name__ == "__main__":
    for name, _, _ in seeds("/nonexistent"):
        register(name, BIN)
    run_all(cleanup=[BIN])
