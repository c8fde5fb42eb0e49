#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Malformed configs, ours against Debian's Go loopback: a valid config holding every kind of
JSON value is broken by one to three random edits (a byte removed, inserted or replaced, or
the text cut short; the inserted bytes are JSON punctuation, digits, letters of literals,
control bytes, bytes >= 0x80, a UTF-8 BOM, escapes, huge numbers and lone surrogates). Whenever
either side refuses the text as JSON (code 6), both must print the same error, byte for byte; a
text Go accepts must not be refused as JSON by ours; every output must be UTF-8 JSON. Fixed seeds, so a failure is reproducible; one TAP
test per seed. No root needed: CNI_NETNS names no namespace, so nothing is configured."""
import json
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import CNI_ALL, REF, check, run_all, test  # noqa: E402

VARIANTS = 300
SEED_CONFIG = ('{"cniVersion":"1.0.0","name":"n","type":"loopback","a":[1,2.5e3,"x\\u00e9\\n",true,null,'
               '{"b":-0}],"c":{"d":"\\"q"},"e":false}')
EDITS = ([bytes([c]) for c in b'{}[]:,"\\ \t\n0123456789-+.eEtrufalsn']
         + [b"\x00", b"\x1f", b"\x7f", b"\x80", b"\xa0", b"\xff", "é".encode(), b"\\u", b"\\ud800", b"1e999",
            b"-0.0e-999", b"\\udc00", b"\xef\xbb\xbf"])


def broken(rng):
    text = SEED_CONFIG.encode()
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(text) + 1)
        op = rng.random()
        if op < 0.3:
            text = text[:at] + text[at + 1:]
        elif op < 0.7:
            text = text[:at] + rng.choice(EDITS) + text[at:]
        elif op < 0.8:
            text = text[:at]
        else:
            text = text[:at] + rng.choice(EDITS) + text[at + 1:]
    return text


def run(cmd, text):
    env = {"CNI_COMMAND": "ADD", "CNI_CONTAINERID": "x", "CNI_NETNS": "/nonexistent/netns", "CNI_IFNAME": "eth0",
           "CNI_PATH": "/nonexistent"}
    r = subprocess.run(cmd, input=text, capture_output=True, env=env, timeout=20)
    check(r.returncode in (0, 1), f"{cmd} exit code {r.returncode} for {text!r}: {r.stderr!r}")
    return json.loads(r.stdout) if r.stdout.strip() else {}


def compare(seed):
    rng = random.Random(seed)
    problems = []
    for _ in range(VARIANTS):
        text = broken(rng)
        ours, go = run([CNI_ALL, "loopback"], text), run([os.path.join(REF, "loopback")], text)
        if (ours.get("code") == 6 or go.get("code") == 6) and ours != go:
            problems.append(f"{text!r}\n  ours: {ours}\n  Go:   {go}")
    check(not problems, f"{len(problems)} of {VARIANTS} texts:\n" + "\n".join(problems[:20]))


def register(seed):
    def run_seed():
        compare(seed)
    run_seed.__name__ = f"syntax_errors_seed_{seed}"
    run_seed.__doc__ = f"{VARIANTS} malformed configs (seed {seed}) get Go's JSON error, byte for byte"
    test(run_seed)


if REF:
    for s in (1, 2, 3):
        register(s)
else:
    print("Bail out! Debian's containernetworking-plugins is not installed in /usr/lib/cni", flush=True)
    sys.exit(1)

if __name__ == "__main__":
    run_all()
