#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Hostile input, compared with the reference. The fuzz test's variants (test_fuzz.py: each
applet's seed config mutated key by key, and CNI_IFNAME, CNI_ARGS and CNI_CONTAINERID) go to
Debian's Go plugins (/usr/lib/cni) and to ours, every call sequence in fresh namespaces and
fresh state directories, so one variant cannot change the next. Drop-in means we never refuse
what the reference accepts: an ADD that Go's plugin completes must complete here too (except
ALLOWED_REFUSALS, each a documented choice), and a DEL of the variant after the seed's ADD that
Go's plugin completes must complete here, with no exception (a failing DEL keeps a pod from
being removed). And where Go's CHECK passes on Go's ADD of the variant, ours must pass on it
too, with the same exceptions as ADD (a node switched implementations with pods running; the
Go plugins run with the node's `iptables`, Debian's iptables-nft). Where Go fails or crashes and
we succeed is fine: our DEL is more lenient, and Go panics on some null entries. Left out: applets whose kernel features or daemon this machine
lacks (vlan, ipvlan, dummy, vrf, dhcp) and those Debian's 1.1.1 does not ship (tap, flannel).
CNI_FUZZ_REFERENCE_SAMPLE variants per applet (default 10, always the same ones; 0: all):
each variant costs five pairs of fresh namespaces and both implementations' calls, about 2.3 s."""
import glob
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
import test_fuzz as fuzz  # noqa: E402
from cnitest import BIN, REF, check, netns, run_all, test  # noqa: E402

SAMPLE = int(os.environ.get("CNI_FUZZ_REFERENCE_SAMPLE", "10"))
APPLETS = ["bridge", "ptp", "macvlan", "host-device", "loopback", "host-local", "static",
           "portmap", "firewall", "tuning", "bandwidth", "sbr"]
# Messages of ours that may refuse an ADD Go's plugin completes, and why.
ALLOWED_REFUSALS = {
    "invalid CIDR address: <nil>":
        "a route or prevResult address without one: Go passes it on as \"<nil>\", which the next "
        "plugin or the runtime cannot parse; we refuse it at once, with the message they give",
}


def fresh_state(data):
    """Empty state: the seed's data directory and the private /var/lib/cni and /run/cni."""
    shutil.rmtree(data, ignore_errors=True)
    os.makedirs(data)
    for top in ("/var/lib/cni", "/run/cni"):
        check(os.path.ismount(top), f"{top} is not this run's private mount: not emptying it")
        for path in glob.glob(os.path.join(top, "*")) + glob.glob(os.path.join(top, ".*")):
            shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.remove(path)


def outcome(bin_dir, seed, variant, env, needs_eth0, data, verb):
    """(ok, message) of the variant's ADD, or of its DEL after the seed's ADD, with one
    implementation in fresh namespaces; ok is None for a crash or hang."""
    fresh_state(data)
    with netns("frh") as host, netns("frc") as ctr:
        fuzz.prepare(host, ctr, data, needs_eth0)
        att = fuzz.Attachment(bin_dir, seed["type"], host, ctr, data)
        if verb == "ADD":
            result = att.call("ADD", variant, env)
            att.call("DEL", variant, env)
        else:
            att.call("ADD", seed, {})
            result = att.call("DEL", variant, env)
        att.call("DEL", seed, {})
        return result


def cross_check(ours, ref, seed, variant, env, needs_eth0, data):
    """Go's ADD of the variant, then CHECK of that ADD by Go's plugin and by ours in the same
    namespaces (a node switched implementations with pods running): Go's (ok, message) and ours;
    Go's ok is None when its ADD did not complete."""
    fresh_state(data)
    with netns("frh") as host, netns("frc") as ctr:
        fuzz.prepare(host, ctr, data, needs_eth0)
        go = fuzz.Attachment(ref, seed["type"], host, ctr, data)
        mine = fuzz.Attachment(ours, seed["type"], host, ctr, data)
        try:
            ok, out = go.call("ADD", variant, env)
            try:
                result = json.loads(out) if ok is True else None
            except ValueError:
                result = None
            if not isinstance(result, dict):
                return (None, ""), (None, "")
            conf = dict(variant, prevResult=result) if isinstance(variant, dict) else variant
            return go.call("CHECK", conf, env), mine.call("CHECK", conf, env)
        finally:
            go.call("DEL", variant, env)
            go.call("DEL", seed, {})


def allowed_refusal(msg):
    return next((k for k in ALLOWED_REFUSALS if msg.endswith(k)), None)


def compare(applet, ours, ref, sample):
    data = tempfile.mkdtemp(prefix="cni-fuzzref.")
    try:
        _, seed, needs_eth0 = next(s for s in fuzz.seeds(data) if s[0] == applet)
        problems, allowed, compared, go_completed = [], [], 0, 0
        # The seed itself first: with few variants, Go's plugin may refuse every one of them.
        for label, variant, env in [("the seed", seed, {})] + fuzz.variants(seed, sample):
            for verb in ("ADD", "DEL", "CHECK"):
                if verb == "CHECK":
                    (go_ok, _), (our_ok, msg) = cross_check(ours, ref, seed, variant, env, needs_eth0, data)
                else:
                    go_ok, _ = outcome(ref, seed, variant, env, needs_eth0, data, verb)
                    our_ok, msg = outcome(ours, seed, variant, env, needs_eth0, data, verb)
                compared += 1
                go_completed += go_ok is True
                if go_ok is not True or our_ok is True:
                    continue
                if verb != "DEL" and our_ok is False and allowed_refusal(msg):
                    allowed.append(allowed_refusal(msg))
                    continue
                problems.append(f"{label}: Go's {verb} succeeded, ours {'failed' if our_ok is False else 'broke'}: {msg}")
        print(f"# {applet}: {compared} calls compared, {go_completed} completed by Go's, {len(allowed)} allowed refusals, "
              f"{len(problems)} refused where Go's succeeded", flush=True)
        for msg in sorted(set(allowed)):
            print(f"# allowed: {msg} ({ALLOWED_REFUSALS[msg]})", flush=True)
        check(go_completed, "Go's plugin completed none of the calls: nothing was compared")
        check(not problems, "\n".join(problems[:40]))
    finally:
        shutil.rmtree(data, ignore_errors=True)


def register(applet, ours, ref):
    def run():
        check(ref, "Debian's containernetworking-plugins is not installed")
        compare(applet, ours, ref, SAMPLE)
    run.__name__ = "fuzz_reference_" + applet.replace("-", "_")
    run.__doc__ = f"{applet}: no mutated ADD, DEL or CHECK of Go's ADD that Go's plugin completes is refused by ours"
    test(run)


if __name__ == "__main__":
    for name in APPLETS:
        register(name, BIN, REF)
    run_all(cleanup=[BIN])
