#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Data-driven end-to-end cases: each case in cases/*.json gives an applet, the CNI environment
and stdin, and the expected exit code and stdout (exact bytes, or a JSON value). Cases run
against the launchers `cni-all install` lays down, and - unless the case says otherwise - also
against Debian's Go plugins in /usr/lib/cni, whose output must be the same bytes ("bytes") or the
same result once parsed ("json"; Go v1.1 still prints "dns": {} and struct key order at 1.x).
"@DATA@" in stdin is replaced by a fresh directory per run. One TAP line per case."""
import glob
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from cnitest import BIN, REF, Plugin, canonical_result, netns  # noqa: E402

DEFAULT_ENV = {"CNI_CONTAINERID": "e2e-ctr", "CNI_NETNS": "/nonexistent/netns", "CNI_IFNAME": "eth0",
               "CNI_PATH": "@BIN@"}


HOST_NS = None  # the throwaway namespace every case runs in (set by main)


def run_case(case, plugin_dir):
    data = tempfile.mkdtemp(prefix="cni-e2e.")
    try:
        env = {} if case.get("bare_env") else dict(DEFAULT_ENV)
        env.update(case.get("env", {}))
        env = {k: v.replace("@BIN@", plugin_dir) for k, v in env.items() if v is not None}
        stdin = case.get("stdin", "")
        if not isinstance(stdin, str):
            stdin = json.dumps(stdin)
        stdin = stdin.replace("@DATA@", data)
        if "stdin_repeat" in case:
            stdin = stdin * case["stdin_repeat"]
        return Plugin(os.path.join(plugin_dir, case["applet"])).run(None, stdin, raw_env=env, host_ns=HOST_NS)
    finally:
        shutil.rmtree(data, ignore_errors=True)


def check_case(case):
    got = run_case(case, BIN)
    exp = case["expect"]
    problems = []
    if got.rc != exp.get("rc", 0):
        problems.append(f"exit code {got.rc}, want {exp.get('rc', 0)}")
    if "stdout" in exp and got.out != exp["stdout"]:
        problems.append(f"stdout:\n{got.out}\nwant:\n{exp['stdout']}")
    if "json" in exp and (not got.out or json.loads(got.out) != exp["json"]):
        problems.append(f"stdout:\n{got.out}\nwant JSON:\n{json.dumps(exp['json'], indent=4)}")
    if "stdout_contains" in exp and exp["stdout_contains"] not in got.out:
        problems.append(f"stdout lacks {exp['stdout_contains']!r}:\n{got.out}")
    if "stderr" in exp and got.err != exp["stderr"]:
        problems.append(f"stderr:\n{got.err}\nwant:\n{exp['stderr']}")
    mode = case.get("reference", "bytes")
    if mode != "none":
        if not REF:
            problems.append("Debian's containernetworking-plugins is not installed (/usr/lib/cni)")
        else:
            ref = run_case(case, REF)
            if ref.rc != got.rc:
                problems.append(f"reference exit code {ref.rc} vs ours {got.rc}: {ref.out}")
            elif mode == "bytes" and ref.out != got.out:
                problems.append(f"reference stdout differs:\n{ref.out}\nours:\n{got.out}")
            elif mode == "json" and canonical_result(ref.out) != canonical_result(got.out):
                problems.append(f"reference result differs:\n{ref.out}\nours:\n{got.out}")
    return problems


def main():
    cases = []
    for path in sorted(glob.glob(os.path.join(os.path.dirname(__file__), "cases", "*.json"))):
        with open(path) as f:
            for case in json.load(f):
                case["file"] = os.path.basename(path)
                cases.append(case)
    global HOST_NS
    failed = 0
    with netns("cnie2e") as HOST_NS:
        for n, case in enumerate(cases, 1):
            try:
                problems = check_case(case)
            except Exception as e:  # noqa: BLE001
                problems = [f"runner error: {e!r}"]
            if problems:
                failed += 1
                print(f"not ok {n} - {case['file']}: {case['name']}")
                for p in problems:
                    for line in p.splitlines():
                        print(f"# {line}")
            else:
                print(f"ok {n} - {case['file']}: {case['name']}")
    print(f"1..{len(cases)}")
    shutil.rmtree(BIN, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
